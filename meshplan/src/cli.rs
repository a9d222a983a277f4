//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Plan LLM training and serving meshes: memory, time and communication per GPU.
#[derive(Debug, Parser)]
#[command(name = "meshplan", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the share-link query of a scenario JSON file.
    Link {
        /// Scenario JSON (e.g. examples/article-70b-mesh.json); `-` reads stdin.
        scenario: PathBuf,
    },
    /// Print the scenario JSON a share link (query, `?query` or full URL) describes.
    DecodeLink {
        /// The link or its query string.
        query: String,
        /// Fall back to defaults for bad parameters (reported on stderr) instead of failing.
        #[arg(long)]
        lenient: bool,
    },
}
