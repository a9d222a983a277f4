//! An explained number: what the app shows when a user hovers a bar.

use serde::{Deserialize, Serialize};

/// What a [`Term`]'s value counts; [`Unit::format`] is the one formatter per unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Bytes (decimal units when formatted, as the article draws them).
    Bytes,
    /// Seconds.
    Seconds,
    /// A share of a whole, 0..=1 (MFU, idle share).
    Fraction,
    /// A ratio of two like quantities, may exceed 1 (step time vs full fine-tuning).
    Ratio,
    /// A count of things (sequences, parameters).
    Count,
    /// Tokens per second.
    TokensPerSecond,
    /// Requests per second.
    RequestsPerSecond,
    /// Floating-point operations.
    Flops,
    /// Floating-point operations per second.
    FlopsPerSecond,
}

impl Unit {
    /// `value` for a person, in this unit: bytes as `17.5 GB`, seconds as `12.3 ms`,
    /// fractions as `41.2%`, counts as `70e9`, rates with their unit.
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Bytes => fmt_bytes(value),
            Unit::Seconds => fmt_seconds(value),
            Unit::Fraction => format!("{:.1}%", value * 100.0),
            Unit::Ratio => format!("{}×", fmt_num(value)),
            Unit::Count => fmt_num(value),
            Unit::TokensPerSecond => format!("{} tokens/s", fmt_num(value)),
            Unit::RequestsPerSecond => format!("{} requests/s", fmt_num(value)),
            Unit::Flops => format!("{} FLOP", fmt_num(value)),
            Unit::FlopsPerSecond => format!("{} TFLOP/s", fmt_num(value / 1e12)),
        }
    }
}

/// Seconds for a person, about three significant digits in s, ms or µs: the one
/// time formatter of the page, the CLI tables and [`Unit::Seconds`].
pub fn fmt_seconds(s: f64) -> String {
    if !s.is_finite() {
        "—".into()
    } else if s == 0.0 {
        "0".into()
    } else if s.abs() >= 1.0 {
        format!("{} s", sig3(s))
    } else if s.abs() >= 1e-3 {
        format!("{} ms", sig3(s * 1e3))
    } else {
        format!("{} µs", sig3(s * 1e6))
    }
}

/// Groups the integer part in threes: `1120` → `"1,120"`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number with about three significant digits: 0 decimals from 100, 1 from 10, 2 below.
pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    let a = x.abs();
    let sign = if x < 0.0 { "-" } else { "" };
    if a >= 100.0 {
        format!("{sign}{}", thousands(a.round() as u64))
    } else if a >= 10.0 {
        format!("{sign}{a:.1}")
    } else {
        format!("{sign}{a:.2}")
    }
}

/// One quantity with the formula and assumption that produced it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Term {
    /// Stable key ("weights", "optimizer", "activations.attention", ...).
    pub key: String,
    /// Short label for a legend.
    pub label: String,
    /// The number, in [`Term::unit`].
    pub value: f64,
    /// What `value` counts.
    pub unit: Unit,
    /// Symbolic formula, e.g. `16Ψ/N`.
    pub formula: String,
    /// The formula with the current numbers plugged in, e.g. `16 × 70.6e9 / 64 = 17.6 GB`.
    pub worked: String,
    /// Assumption and source in one line.
    pub assumption: String,
}

/// Decimal-unit byte count for `worked` strings ("17.5 GB").
pub fn fmt_bytes(bytes: f64) -> String {
    let (value, unit) = if bytes.abs() >= 1e9 {
        (bytes / 1e9, "GB")
    } else if bytes.abs() >= 1e6 {
        (bytes / 1e6, "MB")
    } else if bytes.abs() >= 1e3 {
        (bytes / 1e3, "kB")
    } else {
        (bytes, "B")
    };
    format!("{} {unit}", fmt_num(value))
}

/// A number with at most four decimals and no trailing zeros; large counts as `70e9`.
pub fn fmt_num(x: f64) -> String {
    let trim = |v: f64| {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" {
            "0".to_string()
        } else {
            s.to_string()
        }
    };
    let a = x.abs();
    if a >= 1e9 {
        format!("{}e9", trim(x / 1e9))
    } else if a >= 1e6 {
        format!("{}e6", trim(x / 1e6))
    } else {
        trim(x)
    }
}

#[cfg(test)]
mod tests {
    use super::Unit;

    #[test]
    fn each_unit_formats_its_own_way() {
        assert_eq!(Unit::Bytes.format(17.5e9), "17.5 GB");
        // sig3: three significant digits in the largest unit that keeps the number ≥ 1.
        assert_eq!(Unit::Seconds.format(0.0123), "12.3 ms");
        assert_eq!(Unit::Seconds.format(1.5e-5), "15.0 µs");
        assert_eq!(Unit::Seconds.format(125.0), "125 s");
        assert_eq!(Unit::Fraction.format(0.412), "41.2%");
        assert_eq!(Unit::Count.format(70.6e9), "70.6e9");
        assert_eq!(Unit::Ratio.format(0.763), "0.763×");
        assert_eq!(Unit::TokensPerSecond.format(1500.0), "1500 tokens/s");
    }
}
