//! The `hookline` command line. Each subcommand lives in its own module; `src/main.rs` only calls
//! [`main`].
//!
//! Exit status: 0 on success, 1 when the command ran and found problems (`hooks check`), 2 for bad
//! input (an unreadable file, bad JSON, an unknown plugin), with the problem on stderr.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
pub mod chat;
mod hooks;
mod load;
mod new;
mod plugin_dirs;
mod progress;
mod provider;
mod render;
pub mod run;
mod serve;
mod serve_store;
mod soak;
mod store;

/// A runtime for plugin hooks in AI agent hosts and chat gateways.
#[derive(Debug, Parser)]
#[command(
    name = "hookline",
    version,
    about = "A runtime for plugin hooks in AI agent hosts and chat gateways."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Measure hook latency and throughput beside a direct-call loop.
    Bench(bench::BenchArgs),
    /// An interactive session in the terminal, with a real model or the built-in offline one.
    Chat(chat::ChatArgs),
    /// Plugins on disk: list, info, check, enable, disable.
    Hooks(hooks::HooksArgs),
    /// Write a new plugin directory on a plugin kit: `new plugin NAME --lang python|node|rust`.
    New(new::NewArgs),
    /// Run a scenario (default: the bundled demo) with the plugins on disk (the bundled demo
    /// plugins when none is found).
    /// Drive a running `hookline serve` with many sessions and measure it.
    Load(load::LoadArgs),
    /// Run a scenario (default: the bundled demo) with the bundled example plugins.
    Run(run::RunArgs),
    /// Serve many live sessions over HTTP and WebSocket (docs/serve.md).
    Serve(serve::ServeArgs),
    /// Soak: many sessions through every hook, then a shutdown under load; checks memory,
    /// queue bounds, notes and the shutdown budget.
    Soak(soak::SoakArgs),
    /// Administer a session store (`store migrate --database-url URL`).
    Store(store::StoreArgs),
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(args) => bench::run(&args),
        Command::Chat(args) => chat::run(args),
        Command::Hooks(args) => hooks::run(args),
        Command::New(args) => new::run(args),
        Command::Load(args) => load::run(&args),
        Command::Run(args) => run::run(args),
        Command::Serve(args) => serve::run(&args),
        Command::Soak(args) => soak::run(&args),
        Command::Store(args) => store::run(args),
    }
}
