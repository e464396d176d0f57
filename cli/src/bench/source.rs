//! Where a benchmark's plugins come from: in-process appenders, long-lived external echo plugins
//! (Rust or Python, one process each), WebAssembly echo guests loaded into the process, or the
//! shipped example plugins.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::join_all;
use hookline_actors::plugin::PluginRegistration;

use super::workload::appender_plugins;
use hookline_host::external::{ExternalConfig, ExternalPlugin};
use hookline_host::wasm::{WasmConfig, WasmPlugin};
use serde::Serialize;

use super::memory::resident_bytes;

/// The minimal Python protocol plugin (`benches/plugins/echo.py`), run with `python3 -c`.
pub(super) const PYTHON_ECHO: &str = include_str!("../../../benches/plugins/echo.py");

/// The WebAssembly echo guest (`benches/plugins/echo.wat`, a core module of the guest ABI v1),
/// assembled at start: the bench needs no guest toolchain.
pub const WASM_ECHO: &str = include_str!("../../../benches/plugins/echo.wat");

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
    /// WebAssembly echo guests ([`WASM_ECHO`]), loaded into the process (issue 36).
    Wasm,
    /// The shipped examples: `rust-guard` (Rust) and `house-rules` (Python).
    Examples,
}

/// Plugins started for one pipeline, with the processes to shut down afterwards.
pub struct Plugins {
    /// Registrations in load order.
    pub registrations: Vec<PluginRegistration>,
    /// The external processes among them.
    pub processes: Vec<Arc<ExternalPlugin>>,
    /// What each WebAssembly plugin costs in memory, when they are.
    pub memory: Option<PluginMemory>,
}

/// What one loaded WebAssembly plugin costs in memory (issue 36 item 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PluginMemory {
    /// The linear memory of its idle instance(s), in bytes.
    pub linear_bytes: u64,
    /// The process's resident memory growth over loading the plugins, per plugin, in bytes
    /// (instances, stores and the share of compiled code; one load, so a rough figure).
    pub resident_bytes: u64,
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
                memory: None,
            })
        }
        Source::Wasm => return wasm_echoes(count).await,
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
        memory: None,
    })
}

/// `count` echo guests, each its own [`WasmPlugin`] (its own store and instances), compiled once
/// and read from a cache in a temporary directory after.
async fn wasm_echoes(count: usize) -> Result<Plugins, String> {
    let bytes = wat::parse_str(WASM_ECHO).map_err(|e| format!("benches/plugins/echo.wat: {e}"))?;
    let dir = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let module = dir.path().join("echo.wasm");
    std::fs::write(&module, bytes).map_err(|e| format!("{}: {e}", module.display()))?;
    let cache = dir.path().join("cache");
    let load = move || {
        let before = resident_bytes().unwrap_or(0);
        let plugins = (0..count)
            .map(|index| {
                let mut config = WasmConfig::new(format!("echo-wasm-{index}"), &module);
                config.cache_dir = Some(cache.clone());
                WasmPlugin::load(config).map_err(|e| format!("plugin echo-wasm-{index}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let grown = resident_bytes().unwrap_or(0).saturating_sub(before);
        drop(dir);
        Ok::<_, String>((plugins, grown))
    };
    let (plugins, grown) = actix_rt::task::spawn_blocking(load)
        .await
        .map_err(|_| "loading the WebAssembly plugins panicked".to_owned())??;
    let per = |total: u64| total / (count.max(1) as u64);
    let linear: u64 = plugins.iter().map(|p| p.idle_memory_bytes() as u64).sum();
    Ok(Plugins {
        registrations: plugins.iter().map(WasmPlugin::registration).collect(),
        processes: Vec::new(),
        memory: Some(PluginMemory {
            linear_bytes: per(linear),
            resident_bytes: per(grown),
        }),
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
