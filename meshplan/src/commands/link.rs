//! `link` and `decode-link`: scenario file ⇄ share-link query.

use std::path::Path;

use planner_core::edges::link;

use crate::error::CliError;
use crate::input::read_scenario;

/// The query of the scenario in `path`.
pub fn encode(path: &Path) -> Result<String, CliError> {
    Ok(link::encode(&read_scenario(path)?))
}

/// The scenario JSON of `query`; with `lenient`, bad parameters fall back to
/// defaults and are reported on stderr.
pub fn decode(query: &str, lenient: bool) -> Result<String, CliError> {
    let scenario = if lenient {
        let (s, errors) = link::decode_lenient(query);
        for e in &errors {
            eprintln!("warning: {e} (default used)");
        }
        s
    } else {
        link::decode(query).map_err(|errors| CliError::fields("invalid link:", &errors))?
    };
    serde_json::to_string_pretty(&scenario)
        .map_err(|e| CliError::BadInput(format!("scenario cannot be written as JSON: {e}")))
}
