//! Errors the command line reports, with their exit codes.

use std::fmt;

use planner_core::resolve::validate::FieldError;

/// What went wrong, ready to print.
#[derive(Debug)]
pub enum CliError {
    /// The user's input (file contents, link, arguments) is wrong: exit code 2.
    BadInput(String),
    /// The input could not be read (missing file, permissions): exit code 2 too,
    /// since it is the path the user gave.
    Io(String),
    /// A Hub fetch failed (gated, not found, rate limited, timed out, not a model the planner
    /// maps): exit code 3.
    Hub(String),
}

impl CliError {
    /// Process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::BadInput(_) | CliError::Io(_) => 2,
            CliError::Hub(_) => 3,
        }
    }

    /// One line per field error, under a heading.
    pub fn fields(heading: &str, errors: &[FieldError]) -> Self {
        let mut msg = heading.to_string();
        for e in errors {
            msg.push_str("\n  ");
            msg.push_str(&e.to_string());
        }
        CliError::BadInput(msg)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::BadInput(m) | CliError::Io(m) | CliError::Hub(m) => write!(f, "error: {m}"),
        }
    }
}
