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
