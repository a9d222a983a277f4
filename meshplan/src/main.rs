//! `meshplan`: the planner from the command line.
//!
//! Each subcommand lives in its own module under `commands/` and returns its
//! output as a `String` or a [`error::CliError`]; `main` prints and sets the exit code.

mod cli;
mod commands;
mod error;
mod input;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli.command) {
        Ok(output) => {
            println!("{output}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.exit_code())
        }
    }
}
