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

/// A scenario from a file path (`-` reads stdin) or, when no such file exists, a share link
/// (query, `?query` or full URL).
pub fn read_file_or_link(arg: &str) -> Result<Scenario, CliError> {
    let path = Path::new(arg);
    if arg == "-" || path.exists() {
        return read_scenario(path);
    }
    planner_core::edges::link::decode(arg)
        .map_err(|errors| CliError::fields("not a file, and an invalid link:", &errors))
}
