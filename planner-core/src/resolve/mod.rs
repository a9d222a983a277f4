//! From a question to a checked one: presets and defaults, and the rules a scenario must satisfy (each error names its field).
//!
//! Invariant: Imports only `base` and `input`.

pub mod json_path;
pub mod offload_rules;
pub mod presets;
pub mod scenario_file;
pub mod validate;
