//! Number formatting for display: decimal units (GB = 1e9 B), as the article
//! and GPU datasheets count memory, with thousands separators.
//!
//! Every value goes through `planner_core::base::explain::Unit::format`'s
//! formatters (one per unit); only axis ticks are the page's own.

pub use planner_core::base::explain::{
    display_bytes as bytes, display_bytes_per_s as bytes_per_s, fmt_seconds as seconds, percent,
    sig3, signed_percent, thousands,
};

/// An axis tick: whole numbers with separators ("1,000", "0"), others with three digits.
pub fn axis(x: f64) -> String {
    if x.is_finite() && x >= 0.0 && x.fract().abs() < 1e-9 {
        thousands(x.round() as u64)
    } else {
        sig3(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn separators_and_edges() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(axis(0.0), "0");
        assert_eq!(axis(1000.0), "1,000");
        assert_eq!(axis(2.5), "2.50");
    }
}
