//! Reading scenario files (shared by every subcommand that takes one).

use std::io::Read;
use std::path::Path;

use planner_core::input::scenario::Scenario;

use crate::error::CliError;

/// Reads `path` (or stdin for `-`) as scenario JSON and validates it.
pub fn read_scenario(path: &Path) -> Result<Scenario, CliError> {
    let shown = path.display();
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::Io(format!("reading stdin: {e}")))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{shown}: {e}")))?
    };
    Scenario::from_json(&text)
        .map_err(|errors| CliError::fields(&format!("{shown}: invalid scenario:"), &errors))
}
