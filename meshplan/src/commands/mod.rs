//! One module per subcommand.

mod link;

use crate::cli::Command;
use crate::error::CliError;

/// Runs a subcommand; its output is printed by `main`.
pub fn run(command: Command) -> Result<String, CliError> {
    match command {
        Command::Link { scenario } => link::encode(&scenario),
        Command::DecodeLink { query, lenient } => link::decode(&query, lenient),
    }
}
