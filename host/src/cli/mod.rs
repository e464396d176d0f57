//! The `hookline` command line. Each subcommand lives in its own module; `src/main.rs` only calls
//! [`main`].
//!
//! Exit status: 0 on success, 1 when the command ran and found problems (`hooks check`), 2 for bad
//! input (an unreadable file, bad JSON, an unknown plugin), with the problem on stderr.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod render;
pub mod run;

/// A runtime for plugin hooks in AI agent hosts and chat gateways.
#[derive(Debug, Parser)]
#[command(name = "hookline", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario (default: the bundled demo) with the bundled example plugins.
    Run(run::RunArgs),
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::run(args),
    }
}
