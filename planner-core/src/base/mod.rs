//! Vocabulary every layer shares: the explained number ([`explain::Term`]), the bounds an input must lie in, validated free text and the JSON value reader.
//!
//! Invariant: Imports nothing from the crate: every other layer may use it.

pub mod bounds;
pub mod explain;
pub mod free_text;
pub(crate) mod json_value;
