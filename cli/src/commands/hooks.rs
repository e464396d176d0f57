//! `hookline hooks`: list, inspect, check, enable, disable and trust the plugins on disk.
//!
//! Workspace plugins run only once trusted (`hookline hooks trust <name>`); trust is kept in
//! `$HOOKLINE_HOME/trust.json` (else `~/.hookline/trust.json`, or `--trust-file`) and bound to a
//! hash of the plugin's manifest and entry point (see `hookline_host::loading::trust`).
//!
//! Directories: `--plugins` (default `$HOOKLINE_HOME/plugins`, else `~/.hookline/plugins`) and
//! `--workspace` (default the current directory; its plugins are in `<workspace>/.hookline/plugins`).
//! `list`, `info` and `check` start each enabled plugin, complete its handshake, and shut it down.
//! Exit status: 0 fine, 1 when `check` found a problem, 2 for bad input (an unknown plugin, a
//! directory given that does not exist, a manifest that cannot be rewritten).

use std::process::ExitCode;

use clap::{Args, Subcommand};
use hookline_messages::hook::HookSet;

use super::plugin_dirs::PluginDirs;
use hookline_host::loading::manifest::{write_enabled, Manifest};
use hookline_host::loading::trust::{fingerprint, TrustFile};
use hookline_host::loading::Source;
use hookline_host::loading::{load, LoadOptions, LoadReport, PluginState, PluginStatus};

/// `hookline hooks ...`
#[derive(Debug, Args)]
pub(crate) struct HooksArgs {
    #[command(subcommand)]
    command: HooksCommand,
    #[command(flatten)]
    dirs: PluginDirs,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum HooksCommand {
    /// Every plugin in load order, with its state.
    List,
    /// One plugin in detail; unknown event subscriptions are marked.
    Info {
        /// The plugin's name.
        name: String,
    },
    /// Validates every manifest, starts each plugin and completes its handshake; exit 1 on problems.
    Check,
    /// Sets `"enabled": true` in the plugin's manifest.
    Enable {
        /// The plugin's name.
        name: String,
    },
    /// Sets `"enabled": false` in the plugin's manifest.
    Disable {
        /// The plugin's name.
        name: String,
    },
    /// Trusts a workspace plugin as it is now (its manifest and entry point); a later change
    /// untrusts it again.
    Trust {
        /// The plugin's name.
        name: String,
    },
}

fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("hookline: {message}");
    ExitCode::from(2)
}

/// Runs `hookline hooks`.
pub(crate) fn run(args: HooksArgs) -> ExitCode {
    let options = match args.dirs.load_options() {
        Ok(options) => options,
        Err(message) => return bad_input(message),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return bad_input(format!("cannot start the runtime: {error}")),
    };
    let report = runtime.block_on(async {
        let report = load(&options).await;
        report.shutdown().await;
        report
    });
    match args.command {
        HooksCommand::List => list(&report, args.json, &options),
        HooksCommand::Info { name } => match find(&report, &name) {
            Some(status) => info(status, args.json),
            None => bad_input(format!("no plugin is named '{name}'")),
        },
        HooksCommand::Check => check(&report, args.json),
        HooksCommand::Enable { name } => set_enabled(&report, &name, true),
        HooksCommand::Disable { name } => set_enabled(&report, &name, false),
        HooksCommand::Trust { name } => trust(&report, &name, options.trust_file.as_deref()),
    }
}

fn find<'a>(report: &'a LoadReport, name: &str) -> Option<&'a PluginStatus> {
    report.statuses.iter().find(|status| status.name == name)
}

fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

fn hook_names(set: Option<HookSet>) -> String {
    let names: Vec<&str> = set
        .into_iter()
        .flat_map(HookSet::iter)
        .map(|k| k.wire_name())
        .collect();
    if names.is_empty() {
        "-".into()
    } else {
        names.join(",")
    }
}

fn joined(items: Vec<String>) -> String {
    if items.is_empty() {
        "-".into()
    } else {
        items.join(",")
    }
}

fn state(status: &PluginStatus) -> String {
    match &status.state {
        PluginState::Loaded => "loaded".into(),
        PluginState::Disabled => "disabled".into(),
        PluginState::Skipped(problem) => format!("skipped: {problem}"),
    }
}

/// The columns of one row: name, directory, source, kind, hooks, raw hooks, events, tools, trust,
/// status.
fn row(status: &PluginStatus) -> [String; 10] {
    let hello = status.hello.as_ref();
    [
        status.name.clone(),
        status.dir.display().to_string(),
        status.source.as_str().into(),
        status.kind.clone(),
        hook_names(hello.map(|h| h.hooks.ordinary_only())),
        hook_names(hello.map(|h| h.raw_hooks.raw_only())),
        joined(hello.map(|h| h.events.clone()).unwrap_or_default()),
        joined(
            hello
                .map(|h| h.tools.iter().map(|t| t.name.clone()).collect())
                .unwrap_or_default(),
        ),
        status.trust.as_str().into(),
        state(status),
    ]
}

fn list(report: &LoadReport, json: bool, options: &LoadOptions) -> ExitCode {
    if json {
        print_json(&report.statuses);
        return ExitCode::SUCCESS;
    }
    if report.statuses.is_empty() {
        println!("No plugins found in {}.", PluginDirs::searched(options));
        return ExitCode::SUCCESS;
    }
    let header = [
        "NAME",
        "DIRECTORY",
        "SOURCE",
        "KIND",
        "HOOKS",
        "RAW HOOKS",
        "EVENTS",
        "TOOLS",
        "TRUST",
        "STATUS",
    ];
    let rows: Vec<[String; 10]> = report.statuses.iter().map(row).collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    ExitCode::SUCCESS
}

fn info(status: &PluginStatus, json: bool) -> ExitCode {
    let warnings: Vec<String> = status.notes().iter().map(ToString::to_string).collect();
    if json {
        print_json(&serde_json::json!({ "plugin": status, "warnings": warnings }));
        return ExitCode::SUCCESS;
    }
    let labels = [
        "name",
        "directory",
        "source",
        "kind",
        "hooks",
        "raw hooks",
        "events",
        "tools",
        "trust",
        "status",
    ];
    for (label, value) in labels.iter().zip(row(status)) {
        println!("{label:<12} {value}");
    }
    if status.kind == "wasm" {
        // docs/wasm.md: a WebAssembly plugin reaches nothing beyond its memory unless granted.
        let granted = if status.capabilities.is_empty() {
            "none (sandboxed)".to_owned()
        } else {
            status.capabilities.join(", ")
        };
        println!("{:<12} {granted}", "capabilities");
    }
    if let Some(description) = &status.description {
        println!("{:<12} {description}", "description");
    }
    if let Some(replaced) = &status.replaces {
        println!("{:<12} {}", "replaces", replaced.display());
    }
    for tool in status.hello.iter().flat_map(|h| h.tools.iter()) {
        let risk = serde_json::to_string(&tool.risk)
            .unwrap_or_default()
            .replace('"', "");
        let authority = serde_json::to_string(&tool.authority)
            .unwrap_or_default()
            .replace('"', "");
        println!(
            "tool {}: {} (risk {risk}, authority {authority})",
            tool.name, tool.description
        );
    }
    for warning in status.unknown_events() {
        println!(
            "warning: Plugin '{}' subscribes to '{warning}', which the gateway never emits.",
            status.name
        );
    }
    ExitCode::SUCCESS
}

fn check(report: &LoadReport, json: bool) -> ExitCode {
    let problems: Vec<String> = report
        .statuses
        .iter()
        .filter(|status| matches!(status.state, PluginState::Skipped(_)))
        .flat_map(PluginStatus::notes)
        .map(|note| note.to_string())
        .collect();
    let warnings: Vec<String> = report
        .notes
        .iter()
        .map(ToString::to_string)
        .filter(|note| !problems.contains(note))
        .collect();
    if json {
        print_json(&serde_json::json!({ "problems": problems, "warnings": warnings }));
    } else {
        for line in problems.iter().chain(&warnings) {
            println!("{line}");
        }
        let loaded = report.plugins.len();
        println!(
            "{loaded} plugin(s) loaded, {} with problems.",
            problems.len()
        );
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn set_enabled(report: &LoadReport, name: &str, enabled: bool) -> ExitCode {
    let Some(status) = find(report, name) else {
        return bad_input(format!("no plugin is named '{name}'"));
    };
    match write_enabled(&status.dir, enabled) {
        Ok(()) => {
            let word = if enabled { "enabled" } else { "disabled" };
            println!(
                "Plugin '{name}' is {word} ({}).",
                status.dir.join("plugin.json").display()
            );
            ExitCode::SUCCESS
        }
        Err(problem) => bad_input(format!(
            "cannot change '{}': {problem}",
            status.dir.display()
        )),
    }
}

fn trust(report: &LoadReport, name: &str, trust_file: Option<&std::path::Path>) -> ExitCode {
    let Some(status) = find(report, name) else {
        return bad_input(format!("no plugin is named '{name}'"));
    };
    if status.source == Source::User {
        println!("Plugin '{name}' is a user plugin: it is trusted by installation.");
        return ExitCode::SUCCESS;
    }
    let Some(path) = trust_file else {
        return bad_input("no trust file: set HOOKLINE_HOME or HOME, or pass --trust-file");
    };
    let hash = Manifest::read(&status.dir).and_then(|manifest| fingerprint(&status.dir, &manifest));
    let hash = match hash {
        Ok(hash) => hash,
        Err(problem) => return bad_input(format!("cannot trust '{name}': {problem}")),
    };
    match TrustFile::trust(path, &status.dir, hash.clone()) {
        Ok(()) => {
            println!(
                "Plugin '{name}' is trusted ({hash}, in {}).",
                path.display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => bad_input(format!("cannot write '{}': {error}", path.display())),
    }
}
