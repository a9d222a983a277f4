//! Number formatting for display: decimal units (GB = 1e9 B), as the article
//! and GPU datasheets count memory, with thousands separators.

pub use planner_core::base::explain::{fmt_seconds as seconds, sig3, thousands};

/// An axis tick: whole numbers with separators ("1,000", "0"), others with three digits.
pub fn axis(x: f64) -> String {
    if x.is_finite() && x >= 0.0 && x.fract().abs() < 1e-9 {
        thousands(x.round() as u64)
    } else {
        sig3(x)
    }
}

/// Bytes in the largest decimal unit that keeps the number ≥ 1: `1.12e12` → `"1,120 GB"`.
pub fn bytes(b: f64) -> String {
    if !b.is_finite() {
        return "—".into();
    }
    let a = b.abs();
    // Stay in GB up to 100 TB: per-GPU figures read best in one unit.
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

/// A count with separators, e.g. max concurrent sequences.
pub fn count(n: f64) -> String {
    if !n.is_finite() || n < 0.0 {
        return "—".into();
    }
    thousands(n.floor() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn article_figures_read_as_the_article_writes_them() {
        assert_eq!(bytes(1120e9), "1,120 GB");
        assert_eq!(bytes(293.125e9), "293 GB");
        assert_eq!(bytes(155.3125e9), "155 GB");
        assert_eq!(bytes(17.5e9), "17.5 GB");
        assert_eq!(bytes(327_680.0), "328 KB");
        assert_eq!(bytes(10_737_418_240.0), "10.7 GB");
        assert_eq!(bytes(80e9), "80.0 GB");
    }

    #[wasm_bindgen_test]
    fn separators_and_edges() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(bytes(f64::NAN), "—");
        assert_eq!(bytes(12.0), "12 B");
        assert_eq!(percent(3.0 / 7.0), "42.9%");
        assert_eq!(count(f64::INFINITY), "—");
        assert_eq!(count(12.9), "12");
        assert_eq!(axis(0.0), "0");
        assert_eq!(axis(1000.0), "1,000");
        assert_eq!(axis(2.5), "2.50");
    }
}
