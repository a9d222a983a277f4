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
    /// US dollars.
    Dollars,
    /// Energy, joules (displayed in kWh, MWh or GWh).
    Joules,
    /// Power, watts.
    Watts,
    /// Days of wall-clock time.
    Days,
    /// GPU-hours: GPUs times hours.
    GpuHours,
    /// Tokens per joule.
    TokensPerJoule,
}

impl Unit {
    /// `value` for a person, in this unit: bytes as `17.5 GB`, seconds as `12.3 ms`,
    /// fractions as `41.2%`, counts as `1,024` or `70.6e9`, rates with their unit.
    /// The page and the CLI tables display every value through this; `worked`
    /// strings keep [`fmt_bytes`] / [`fmt_num`] operands so a formula reads exactly.
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Bytes => display_bytes(value),
            Unit::Seconds => fmt_seconds(value),
            Unit::Fraction => percent(value),
            Unit::Ratio => format!("{}×", fmt_num(value)),
            Unit::Count => display_count(value),
            Unit::TokensPerSecond => format!("{} tokens/s", sig3(value)),
            Unit::RequestsPerSecond => format!("{} requests/s", sig3(value)),
            Unit::Flops if value.is_finite() => format!("{value:.3e} FLOP"),
            Unit::Flops => "—".into(),
            Unit::FlopsPerSecond => format!("{} TFLOP/s", sig3(value / 1e12)),
            Unit::Dollars => display_dollars(value),
            Unit::Joules => display_joules(value),
            Unit::Watts => scaled(value, &[(1e6, "MW"), (1e3, "kW"), (1.0, "W")]),
            Unit::Days => format!("{} days", sig3(value)),
            Unit::GpuHours => format!("{} GPU-hours", large_count(value)),
            Unit::TokensPerJoule => format!("{} tokens/J", sig3(value)),
        }
    }
}

/// `value` in the first of `steps` (largest first) it reaches, three significant digits;
/// below the last step, in the last: `scaled(2.5e6, &[(1e6, "MW"), (1e3, "kW")])` = `"2.50 MW"`.
fn scaled(value: f64, steps: &[(f64, &str)]) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    let (div, unit) = steps
        .iter()
        .find(|(d, _)| value.abs() >= *d)
        .or(steps.last())
        .copied()
        .unwrap_or((1.0, ""));
    format!("{} {unit}", sig3(value / div))
}

/// Dollars for display: `$1.23M`, `$45.6k`, `$0.12`.
pub fn display_dollars(usd: f64) -> String {
    if !usd.is_finite() {
        return "—".into();
    }
    let a = usd.abs();
    let sign = if usd < 0.0 { "-" } else { "" };
    let (div, suffix) = if a >= 1e9 {
        (1e9, "B")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{sign}${}{suffix}", sig3(a / div))
}

/// Energy for display in kWh, MWh or GWh (1 kWh = 3.6e6 J): `3.6e9` → `"1.00 MWh"`.
pub fn display_joules(joules: f64) -> String {
    scaled(
        joules / 3.6e6,
        &[(1e6, "GWh"), (1e3, "MWh"), (1.0, "kWh"), (0.0, "kWh")],
    )
}

/// A large count with a suffix: `2.788e6` → `"2.79M"`, `1,024` below a million.
fn large_count(n: f64) -> String {
    if n.is_finite() && n.abs() >= 1e6 {
        format!("{}M", sig3(n / 1e6))
    } else if n.is_finite() {
        thousands(n.round().max(0.0) as u64)
    } else {
        "—".into()
    }
}

/// Bytes for display, three significant digits in the largest decimal unit that keeps
/// the number ≥ 1, and GB up to 100 TB so per-GPU figures read in one unit:
/// `1.12e12` → `"1,120 GB"`, as the article labels its bars.
pub fn display_bytes(b: f64) -> String {
    if !b.is_finite() {
        return "—".into();
    }
    let a = b.abs();
    let (div, unit) = if a >= 1e14 {
        (1e12, "TB")
    } else if a >= 1e9 {
        (1e9, "GB")
    } else if a >= 1e6 {
        (1e6, "MB")
    } else if a >= 1e3 {
        (1e3, "KB")
    } else {
        return format!("{} B", b.round());
    };
    format!("{} {unit}", sig3(b / div))
}

/// A fraction as a percentage with one decimal: `0.4286` → `"42.9%"`.
pub fn percent(f: f64) -> String {
    if !f.is_finite() {
        return "—".into();
    }
    format!("{:.1}%", f * 100.0)
}

/// A relative error with its sign: `0.123` → `"+12.3%"`, `-0.05` → `"-5.0%"`.
pub fn signed_percent(f: f64) -> String {
    if !f.is_finite() {
        return "—".into();
    }
    format!("{}{:.1}%", if f > 0.0 { "+" } else { "" }, f * 100.0)
}

/// A bandwidth for display, decimal GB/s with three significant digits: `4.5e11` → `"450 GB/s"`.
pub fn display_bytes_per_s(bytes_per_s: f64) -> String {
    format!("{} GB/s", sig3(bytes_per_s / 1e9))
}

/// A count for display: whole numbers below 1e9 with separators (`1,024`), larger or
/// fractional ones as [`fmt_num`] writes them (`70.6e9`).
pub fn display_count(n: f64) -> String {
    if !n.is_finite() {
        "—".into()
    } else if n.fract() == 0.0 && n.abs() < 1e9 {
        let sign = if n < 0.0 { "-" } else { "" };
        format!("{sign}{}", thousands(n.abs() as u64))
    } else {
        fmt_num(n)
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
        assert_eq!(Unit::Count.format(1024.0), "1,024");
        assert_eq!(Unit::Count.format(f64::INFINITY), "—");
        assert_eq!(Unit::Fraction.format(3.0 / 7.0), "42.9%");
        assert_eq!(Unit::Fraction.format(f64::NAN), "—");
        assert_eq!(super::signed_percent(0.123), "+12.3%");
        assert_eq!(super::signed_percent(-0.05), "-5.0%");
        assert_eq!(super::display_bytes_per_s(4.5e11), "450 GB/s");
        assert_eq!(Unit::Ratio.format(0.763), "0.763×");
        assert_eq!(Unit::TokensPerSecond.format(1500.0), "1,500 tokens/s");
        assert_eq!(Unit::Flops.format(1.4234e14), "1.423e14 FLOP");
        assert_eq!(Unit::FlopsPerSecond.format(9.89e14), "989 TFLOP/s");
        assert_eq!(Unit::Dollars.format(1_234_567.0), "$1.23M");
        assert_eq!(Unit::Dollars.format(45_600.0), "$45.6k");
        assert_eq!(Unit::Dollars.format(0.123), "$0.12");
        // 3.6e9 J / 3.6e6 J per kWh = 1,000 kWh = 1.00 MWh.
        assert_eq!(Unit::Joules.format(3.6e9), "1.00 MWh");
        assert_eq!(Unit::Watts.format(10_200.0), "10.2 kW");
        assert_eq!(Unit::Days.format(54.0), "54.0 days");
        assert_eq!(Unit::GpuHours.format(2.788e6), "2.79M GPU-hours");
        assert_eq!(Unit::GpuHours.format(f64::NAN), "— GPU-hours");
        assert_eq!(Unit::TokensPerJoule.format(2.5), "2.50 tokens/J");
    }

    #[test]
    fn article_figures_read_as_the_article_writes_them() {
        use super::display_bytes as bytes;
        assert_eq!(bytes(1120e9), "1,120 GB");
        assert_eq!(bytes(293.125e9), "293 GB");
        assert_eq!(bytes(155.3125e9), "155 GB");
        assert_eq!(bytes(17.5e9), "17.5 GB");
        assert_eq!(bytes(327_680.0), "328 KB");
        assert_eq!(bytes(10_737_418_240.0), "10.7 GB");
        assert_eq!(bytes(80e9), "80.0 GB");
        assert_eq!(bytes(f64::NAN), "—");
        assert_eq!(bytes(12.0), "12 B");
        assert_eq!(bytes(250e12), "250 TB");
    }
}
