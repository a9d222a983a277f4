//! `meshplan`: the planner from the command line.
//!
//! Each subcommand lives in its own module under `commands/` and returns its
//! output as a `String` or a [`error::CliError`]; `main` prints and sets the exit code.

// Product functions fit on a screen (clippy.toml sets the threshold); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
mod cli;
mod commands;
mod error;
mod hub;
mod input;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli.command) {
        Ok(output) => {
            // `meshplan validate | head` closes stdout early: that ends the output, it is
            // not a failure (println! would panic on the broken pipe).
            match writeln!(std::io::stdout().lock(), "{output}") {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    eprintln!("cannot write the output: {e}");
                    ExitCode::FAILURE
                }
                _ => ExitCode::SUCCESS,
            }
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.exit_code())
        }
    }
}
