//! Vocabulary every layer shares: the explained number ([`explain::Term`]), the bounds an input must lie in, validated free text, the JSON value reader and the worker messages' record text.
//!
//! Invariant: Imports nothing from the crate: every other layer may use it.

pub mod bounds;
pub mod explain;
pub mod free_text;
pub(crate) mod json_value;
pub mod record_text;
