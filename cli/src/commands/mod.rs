//! The subcommands of the `hookline` command line, each in its own module; `src/main.rs` only calls
//! [`main`].
//!
//! Exit status: 0 on success, 1 when the command ran and found problems (`hooks check`), 2 for bad
//! input (an unreadable file, bad JSON, an unknown plugin), with the problem on stderr.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod chat;
mod config;
mod deprecated;
mod hooks;
mod keys;
mod load;
mod new;
mod plugin_dirs;
mod progress;
mod provider;
mod render;
mod replay;
mod run;
mod serve;
mod serve_listen;
mod serve_replace;
mod serve_running;
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
    /// Plugins on disk: list, info, check, enable, disable, trust.
    Hooks(hooks::HooksArgs),
    /// The API keys of `hookline serve`: create (shown once), list, revoke.
    Keys(keys::KeysArgs),
    /// Write a new plugin directory on a plugin kit: `new plugin NAME --lang python|node|rust|c|zig`.
    New(new::NewArgs),
    /// Drive a running `hookline serve` with many sessions and measure it.
    Load(load::LoadArgs),
    /// Replay stored sessions against a plugin set with nothing real, and report what changed.
    Replay(replay::ReplayArgs),
    /// Run a scenario (default: the bundled demo) with the plugins on disk (the bundled demo
    /// plugins when none is found).
    Run(run::RunArgs),
    /// Serve many live sessions over HTTP and WebSocket (docs/serve.md).
    // Boxed: its many flags make it far larger than the other variants.
    Serve(Box<serve::ServeArgs>),
    /// Soak: many sessions through every hook, then a shutdown under load; checks memory,
    /// queue bounds, notes and the shutdown budget.
    Soak(soak::SoakArgs),
    /// Administer a session store (`store migrate --database-url URL`).
    Store(store::StoreArgs),
}

/// Parses the command line and runs the command.
///
/// Traces and logs are set up first from the environment (docs/observability.md) and flushed
/// when the command returns: after `serve` has drained.
pub fn main() -> ExitCode {
    // Old spellings of flags still work for a while, each with a one-line deprecation.
    let (args, deprecations) = deprecated::rewrite(std::env::args_os().collect());
    let cli = Cli::parse_from(args);
    for line in deprecations {
        eprintln!("{line}");
    }
    let telemetry = match crate::telemetry::Telemetry::from_env() {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("hookline: {error}");
            return ExitCode::from(2);
        }
    };
    let code = dispatch(cli);
    telemetry.shutdown();
    code
}

/// Runs the parsed command.
fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Bench(args) => bench::run(&args),
        Command::Chat(args) => chat::run(args),
        Command::Hooks(args) => hooks::run(args),
        Command::Keys(args) => keys::run(args),
        Command::New(args) => new::run(args),
        Command::Load(args) => load::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Run(args) => run::run(args),
        Command::Serve(args) => serve::run(&args),
        Command::Soak(args) => soak::run(&args),
        Command::Store(args) => store::run(args),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn the_command_line_is_well_formed_and_each_subcommand_says_what_it_does() {
        let cli = Cli::command();
        cli.clone().debug_assert();
        let about = |name: &str| {
            cli.find_subcommand(name)
                .and_then(|c| c.get_about())
                .map(ToString::to_string)
                .unwrap_or_default()
        };
        // One summary each (a merge once gave `load` the summary of `run` as well).
        assert!(about("load").starts_with("Drive a running `hookline serve`"));
        assert!(about("run").starts_with("Run a scenario"));
        for command in cli.get_subcommands() {
            let text = command.get_about().map(ToString::to_string);
            let text = text.unwrap_or_default();
            assert!(
                !text.is_empty() && text.matches(". ").count() == 0,
                "`{}` should have a one-sentence summary: {text:?}",
                command.get_name()
            );
        }
    }
}
