//! Where a benchmark's plugins come from: in-process appenders, long-lived external echo plugins
//! (Rust or Python, one process each), or the shipped example plugins.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::join_all;
use hookline_actors::plugin::PluginRegistration;

use super::workload::appender_plugins;
use hookline_host::external::{ExternalConfig, ExternalPlugin};

/// The minimal Python protocol plugin (`benches/plugins/echo.py`), run with `python3 -c`.
pub(super) const PYTHON_ECHO: &str = include_str!("../../../benches/plugins/echo.py");

/// The Rust echo plugin's binary (`benches/plugins/echo.rs`), expected beside `hookline`.
pub const RUST_ECHO_BIN: &str = "hookline-bench-echo";

/// The Rust example plugin's binary (`examples/plugins/rust-guard`), expected beside `hookline`.
pub const RUST_EXAMPLE_BIN: &str = "hookline-example-plugin";

/// Where the plugins come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Source {
    /// In-process appenders ([`appender_plugins`]).
    #[default]
    InProcess,
    /// External Rust echo plugins, one process each.
    ExternalRust,
    /// External Python echo plugins, one process each.
    ExternalPython,
    /// The shipped examples: `rust-guard` (Rust) and `house-rules` (Python).
    Examples,
}

/// Plugins started for one pipeline, with the processes to shut down afterwards.
pub struct Plugins {
    /// Registrations in load order.
    pub registrations: Vec<PluginRegistration>,
    /// The external processes among them.
    pub processes: Vec<Arc<ExternalPlugin>>,
}

impl Plugins {
    /// Stops every external process (each step bounded).
    pub async fn shutdown(&self) {
        join_all(self.processes.iter().map(|p| p.shutdown())).await;
    }
}

/// Starts `count` plugins of `source` (the examples are always the two shipped ones);
/// `examples_dir` holds `rust-guard/` and `house-rules/`.
///
/// # Errors
/// Why a plugin process could not start, as text for the CLI.
pub async fn start_plugins(
    source: Source,
    count: usize,
    examples_dir: &Path,
) -> Result<Plugins, String> {
    let configs = match source {
        Source::InProcess => {
            return Ok(Plugins {
                registrations: appender_plugins(count),
                processes: Vec::new(),
            })
        }
        Source::ExternalRust => (0..count).map(rust_echo).collect::<Result<_, _>>()?,
        Source::ExternalPython => (0..count).map(python_echo).collect(),
        Source::Examples => examples(examples_dir)?,
    };
    let mut processes = Vec::new();
    for config in configs {
        let name = config.name.clone();
        let plugin = ExternalPlugin::start(config)
            .await
            .map_err(|e| format!("plugin {name}: {e}"))?;
        processes.push(plugin);
    }
    Ok(Plugins {
        registrations: processes.iter().map(ExternalPlugin::registration).collect(),
        processes,
    })
}

/// A binary installed beside the running executable (cargo puts a package's binaries together).
pub(super) fn sibling_binary(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate hookline: {e}"))?;
    let path = exe.with_file_name(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found; build it with `cargo build --release --bin {name}`",
            path.display()
        ))
    }
}

fn rust_echo(index: usize) -> Result<ExternalConfig, String> {
    let program = sibling_binary(RUST_ECHO_BIN)?;
    let dir = program.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut config = ExternalConfig::new(format!("echo-rust-{index}"), program, dir);
    config.args = vec!["protocol".into()];
    Ok(config)
}

fn python_echo(index: usize) -> ExternalConfig {
    let mut config = ExternalConfig::new(
        format!("echo-python-{index}"),
        python3(),
        std::env::temp_dir(),
    );
    config.args = vec!["-c".into(), PYTHON_ECHO.into(), "protocol".into()];
    config
}

fn examples(dir: &Path) -> Result<Vec<ExternalConfig>, String> {
    let guard = ExternalConfig::new(
        "rust-guard",
        sibling_binary(RUST_EXAMPLE_BIN)?,
        dir.join("rust-guard"),
    );
    let rules_dir = dir.join("house-rules");
    let mut rules = ExternalConfig::new("house-rules", python3(), &rules_dir);
    rules.args = vec![OsString::from(rules_dir.join("plugin.py"))];
    if !rules_dir.join("plugin.py").is_file() {
        return Err(format!("{} has no plugin.py", rules_dir.display()));
    }
    Ok(vec![guard, rules])
}

/// `python3` resolved on this process's `PATH` (the plugin's environment is allowlisted).
pub(super) fn python3() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("python3"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}
