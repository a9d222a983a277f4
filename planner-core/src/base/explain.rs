//! An explained number: what the app shows when a user hovers a bar.

use serde::{Deserialize, Serialize};

/// One quantity with the formula and assumption that produced it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Term {
    /// Stable key ("weights", "optimizer", "activations.attention", ...).
    pub key: String,
    /// Short label for a legend.
    pub label: String,
    /// Value in bytes (memory terms) or the unit the caller documents.
    pub bytes: f64,
    /// Symbolic formula, e.g. `16Ψ/N`.
    pub formula: String,
    /// The formula with the current numbers plugged in, e.g. `16 × 70.6e9 / 64 = 17.6 GB`.
    pub worked: String,
    /// Assumption and source in one line.
    pub assumption: String,
}

/// Decimal-unit byte count for `worked` strings ("17.5 GB").
pub(crate) fn fmt_bytes(bytes: f64) -> String {
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
pub(crate) fn fmt_num(x: f64) -> String {
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
