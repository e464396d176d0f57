//! Loading plugins from disk: discovery in a user and a workspace plugins directory, manifests,
//! the entry point fence and interpreter allowlist, reserved names, and starting each plugin's
//! process (SPEC L1 to L3). One bad plugin is skipped with a note; the others load.
//!
//! ```no_run
//! # async fn demo() {
//! use hookline_host::loading::{load, LoadOptions};
//!
//! let report = load(&LoadOptions::new(Some("/home/me/.hookline/plugins".into()), None)).await;
//! for note in &report.notes {
//!     eprintln!("{note}");
//! }
//! let registrations = report.registrations(); // hand these to `Pipeline::builder().plugins(..)`
//! # }
//! ```

mod discover;
pub mod entry;
mod host_binary;
mod interpreters;
mod live;
pub mod manifest;
mod problem;
mod status;
pub mod trust;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hookline_actors::plugin::{PluginRegistration, Timeouts};

use crate::external::{ExternalConfig, ExternalPlugin, PluginTool};
#[cfg(feature = "wasm")]
use crate::wasm::{Capability, WasmConfig, WasmPlugin, MAX_MEMORY_MB};
use hookline_messages::hook::HookSet;

pub use discover::{candidates, unmatched_pins, Candidate, Source};
pub use live::{LiveState, LiveStatus, StateReason};
pub use manifest::{check_name, Manifest, WasmManifest, MANIFEST, RESERVED_NAMES};
pub use problem::{LoadNote, LoadProblem};
pub use status::{PluginState, PluginStatus};

/// Where to look for plugins and how to order them.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// The user plugins directory (default `~/.hookline/plugins`, chosen by the CLI).
    pub user_dir: Option<PathBuf>,
    /// The workspace plugins directory (default `<workspace>/.hookline/plugins`).
    pub workspace_dir: Option<PathBuf>,
    /// Plugin names loaded first, in this order; the rest follow in directory name order.
    pub pinned_order: Vec<String>,
    /// Overrides every plugin's hello deadline (tests use a short one).
    pub hello_timeout: Option<Duration>,
    /// The trust file workspace plugins must be trusted in ([`trust`]); without one, no
    /// workspace plugin runs. The CLI uses [`trust::default_trust_file`].
    pub trust_file: Option<PathBuf>,
    /// Write each plugin's stderr to the host's stderr, prefixed `[<plugin>] `
    /// ([`ExternalConfig::echo_stderr`]; the CLI's `--verbose`).
    pub echo_stderr: bool,
    /// Where WebAssembly plugins' compiled modules are cached; `None`: the default cache
    /// directory (`crate::wasm::default_cache_dir`, with the `wasm` feature).
    pub wasm_cache_dir: Option<PathBuf>,
}

impl LoadOptions {
    /// Options for these two directories, unpinned.
    pub fn new(user_dir: Option<PathBuf>, workspace_dir: Option<PathBuf>) -> Self {
        Self {
            user_dir,
            workspace_dir,
            ..Self::default()
        }
    }
}

/// One loaded plugin: an external process or a WebAssembly module in the host.
#[derive(Clone, Debug)]
pub enum LoadedPlugin {
    /// A plugin process (docs/protocol.md).
    External(Arc<ExternalPlugin>),
    /// A WebAssembly plugin (docs/wasm.md; the `wasm` feature).
    #[cfg(feature = "wasm")]
    Wasm(Arc<WasmPlugin>),
}

impl LoadedPlugin {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        match self {
            Self::External(plugin) => plugin.name(),
            #[cfg(feature = "wasm")]
            Self::Wasm(plugin) => plugin.name(),
        }
    }

    /// Where it is now, why and since when (`GET /v1/plugins`, issue 46 item 2).
    pub fn live(&self) -> LiveStatus {
        match self {
            Self::External(plugin) => plugin.live(),
            #[cfg(feature = "wasm")]
            Self::Wasm(plugin) => plugin.live(),
        }
    }

    /// The guard hooks it fails closed on.
    pub fn fail_closed(&self) -> HookSet {
        match self {
            Self::External(plugin) => plugin.fail_closed(),
            #[cfg(feature = "wasm")]
            Self::Wasm(plugin) => plugin.fail_closed(),
        }
    }

    /// What it said in its hello.
    pub fn hello(&self) -> &hookline_messages::protocol::Hello {
        match self {
            Self::External(plugin) => plugin.hello(),
            #[cfg(feature = "wasm")]
            Self::Wasm(plugin) => plugin.hello(),
        }
    }

    /// Its registration for the pipeline.
    pub fn registration(&self) -> PluginRegistration {
        match self {
            Self::External(plugin) => plugin.registration(),
            #[cfg(feature = "wasm")]
            Self::Wasm(plugin) => plugin.registration(),
        }
    }

    /// The tools it contributes, in the order declared.
    pub fn tools(&self) -> Vec<PluginTool> {
        match self {
            Self::External(plugin) => PluginTool::all_of(plugin),
            #[cfg(feature = "wasm")]
            Self::Wasm(plugin) => PluginTool::all_of_wasm(plugin),
        }
    }

    /// The external plugin, if it is one.
    pub fn as_external(&self) -> Option<&Arc<ExternalPlugin>> {
        match self {
            Self::External(plugin) => Some(plugin),
            #[cfg(feature = "wasm")]
            Self::Wasm(_) => None,
        }
    }

    /// The WebAssembly plugin, if it is one.
    #[cfg(feature = "wasm")]
    pub fn as_wasm(&self) -> Option<&Arc<WasmPlugin>> {
        match self {
            Self::Wasm(plugin) => Some(plugin),
            Self::External(_) => None,
        }
    }
}

/// What loading produced: the loaded plugins in load order, a status per plugin directory, and
/// the notes.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// The loaded plugins, in load order.
    pub plugins: Vec<LoadedPlugin>,
    /// Every plugin directory, in load order, with its state.
    pub statuses: Vec<PluginStatus>,
    /// Skipped directories and unknown event subscriptions, in load order.
    pub notes: Vec<LoadNote>,
}

impl LoadReport {
    /// One registration per loaded plugin, in load order, for `Pipeline::builder().plugins(..)`.
    pub fn registrations(&self) -> Vec<PluginRegistration> {
        self.plugins
            .iter()
            .map(LoadedPlugin::registration)
            .collect()
    }

    /// The tools the loaded plugins contribute, in load order.
    pub fn tools(&self) -> Vec<PluginTool> {
        self.plugins.iter().flat_map(LoadedPlugin::tools).collect()
    }

    /// The plugin processes among the loaded plugins, in load order.
    pub fn processes(&self) -> Vec<Arc<ExternalPlugin>> {
        self.plugins
            .iter()
            .filter_map(LoadedPlugin::as_external)
            .cloned()
            .collect()
    }

    /// Shuts every plugin process down (each bounded), all at once. WebAssembly plugins need
    /// nothing: their instances go with their last reference.
    pub async fn shutdown(&self) {
        let processes = self.processes();
        futures::future::join_all(processes.iter().map(|plugin| plugin.shutdown())).await;
    }
}

/// A checked plugin directory, ready to start.
enum Prepared {
    External(ExternalConfig),
    #[cfg(feature = "wasm")]
    Wasm(WasmConfig),
}

/// Discovers, checks and starts the plugins. Never fails as a whole: every problem is a note.
pub async fn load(options: &LoadOptions) -> LoadReport {
    let found = candidates(
        options.user_dir.as_deref(),
        options.workspace_dir.as_deref(),
        &options.pinned_order,
    );
    let unmatched = unmatched_pins(&options.pinned_order, &found);
    let mut statuses = Vec::with_capacity(found.len());
    let mut ready = Vec::new();
    let mut names: HashMap<String, PathBuf> = HashMap::new();
    for candidate in found {
        let mut status = PluginStatus::found(&candidate);
        match prepare(&candidate, options, &mut names, &mut status) {
            Ok(Some(config)) => ready.push((statuses.len(), config)),
            Ok(None) => status.state = PluginState::Disabled,
            Err(problem) => status.state = PluginState::Skipped(problem),
        }
        statuses.push(status);
    }
    // Start every plugin at once (their hellos and compiles overlap); results keep load order.
    let started = futures::future::join_all(
        ready
            .into_iter()
            .map(|(index, prepared)| async move { (index, start(prepared).await) }),
    )
    .await;
    let mut plugins = Vec::new();
    for (index, result) in started {
        let status = &mut statuses[index];
        match result {
            Ok(plugin) => {
                status.loaded(plugin.hello().clone());
                plugins.push(plugin);
            }
            Err(error) => status.state = PluginState::Skipped(LoadProblem::StartFailed(error)),
        }
    }
    let mut notes: Vec<LoadNote> = unmatched
        .into_iter()
        .map(|name| LoadNote::PinnedMissing { name })
        .collect();
    notes.extend(statuses.iter().flat_map(PluginStatus::notes));
    for note in &notes {
        tracing::warn!("{note}");
    }
    LoadReport {
        plugins,
        statuses,
        notes,
    }
}

/// Starts a checked plugin: its process and handshake, or its module (compiled off the
/// runtime's threads) and hello. The error is the load note's phrase.
async fn start(prepared: Prepared) -> Result<LoadedPlugin, String> {
    match prepared {
        Prepared::External(config) => ExternalPlugin::start(config)
            .await
            .map(LoadedPlugin::External)
            .map_err(|error| error.to_string()),
        #[cfg(feature = "wasm")]
        Prepared::Wasm(config) => tokio::task::spawn_blocking(move || WasmPlugin::load(config))
            .await
            .map_err(|error| format!("its module could not be loaded: {error}"))?
            .map(LoadedPlugin::Wasm)
            .map_err(|error| error.to_string()),
    }
}

/// Checks one directory: name, manifest, entry point. `Ok(None)` when it is disabled.
fn prepare(
    candidate: &Candidate,
    options: &LoadOptions,
    names: &mut HashMap<String, PathBuf>,
    status: &mut PluginStatus,
) -> Result<Option<Prepared>, LoadProblem> {
    check_name(&candidate.dir_name)?;
    let manifest = Manifest::read(&candidate.dir)?;
    status.description = manifest.description.clone();
    let name = manifest
        .name
        .clone()
        .unwrap_or_else(|| candidate.dir_name.clone());
    check_name(&name)?;
    status.name = name.clone();
    if let Some(first) = names.get(&name) {
        return Err(LoadProblem::DuplicateName {
            name,
            first: first.clone(),
        });
    }
    names.insert(name.clone(), candidate.dir.clone());
    let launch = entry::resolve(&candidate.dir, &manifest)?;
    status.kind = launch.kind.clone();
    let wasm = (launch.kind == entry::WASM_KIND).then(|| manifest.wasm.clone().unwrap_or_default());
    if let Some(wasm) = &wasm {
        status.capabilities = wasm.capabilities.clone();
    }
    if !manifest.enabled {
        return Ok(None);
    }
    // Workspace plugins run only as trusted (after the fence, before anything starts).
    status.trust = trust::check(candidate, &manifest, &name, options.trust_file.as_deref())
        .map_err(|(trust, problem)| {
            status.trust = trust;
            problem
        })?;
    if let Some(wasm) = wasm {
        #[cfg(feature = "wasm")]
        return wasm_config(name, launch.program, &wasm, &manifest, options).map(Some);
        // A build without the `wasm` feature has no WebAssembly runtime: the plugin is skipped
        // with a note naming the feature (issue 46 item 7).
        #[cfg(not(feature = "wasm"))]
        {
            let _ = wasm;
            return Err(LoadProblem::NoWasmSupport);
        }
    }
    let mut config = ExternalConfig::new(name, launch.program, &candidate.dir);
    config.args = launch.args.into_iter().map(Into::into).collect();
    if launch.kind == "python3" {
        // SPEC L2: resolve inside the plugin's directory, not the user's site-packages.
        config.env.push(("PYTHONNOUSERSITE".into(), "1".into()));
        config
            .env
            .push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
    }
    config.fail_closed = manifest.fail_closed;
    config.echo_stderr = options.echo_stderr;
    if let Some(limit) = manifest.timeout_ms {
        config.timeouts = Timeouts::uniform(Duration::from_millis(limit));
        config.event_timeout = Duration::from_millis(limit);
    }
    if let Some(limit) = manifest.hello_timeout_ms {
        config.hello_timeout = Duration::from_millis(limit);
    }
    if let Some(limit) = options.hello_timeout {
        config.hello_timeout = limit;
    }
    Ok(Some(Prepared::External(config)))
}

/// A WebAssembly plugin's config from its manifest (docs/wasm.md "The manifest").
#[cfg(feature = "wasm")]
fn wasm_config(
    name: String,
    module: PathBuf,
    wasm: &manifest::WasmManifest,
    manifest: &Manifest,
    options: &LoadOptions,
) -> Result<Prepared, LoadProblem> {
    let mut config = WasmConfig::new(name, module);
    config.capabilities = wasm
        .capabilities
        .iter()
        .map(|name| {
            Capability::parse(name).ok_or_else(|| LoadProblem::UnknownCapability(name.clone()))
        })
        .collect::<Result<_, _>>()?;
    if let Some(memory_mb) = wasm.memory_mb {
        if !(1..=MAX_MEMORY_MB).contains(&memory_mb) {
            return Err(LoadProblem::InvalidManifest(format!(
                "wasm.memory_mb is {memory_mb}; it must be 1 to {MAX_MEMORY_MB}"
            )));
        }
        config.memory_mb = memory_mb;
    }
    config.fail_closed = manifest.fail_closed;
    config.echo_stderr = options.echo_stderr;
    if let Some(limit) = manifest.timeout_ms {
        config.timeouts = Timeouts::uniform(Duration::from_millis(limit));
        config.event_timeout = Duration::from_millis(limit);
    }
    if let Some(limit) = manifest.hello_timeout_ms {
        config.hello_timeout = Duration::from_millis(limit);
    }
    if let Some(limit) = options.hello_timeout {
        config.hello_timeout = limit;
    }
    if let Some(dir) = &options.wasm_cache_dir {
        config.cache_dir = Some(dir.clone());
    }
    Ok(Prepared::Wasm(config))
}

/// A build without the `wasm` feature (`cargo test -p hookline-host --no-default-features`,
/// which `.ci/run`'s lean check runs): a WebAssembly plugin is skipped with the note naming the
/// feature, and the other plugins load (issue 46 item 7).
#[cfg(all(test, not(feature = "wasm")))]
mod without_wasm {
    use super::*;

    #[tokio::test]
    async fn a_wasm_plugin_directory_is_skipped_with_a_note_naming_the_feature(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let dir = root.path().join("guard");
        std::fs::create_dir(&dir)?;
        std::fs::write(dir.join(MANIFEST), r#"{"entry": "plugin.wasm"}"#)?;
        // Not even a module: the build never gets as far as reading it.
        std::fs::write(dir.join("plugin.wasm"), b"\0asm")?;
        let report = load(&LoadOptions::new(Some(root.path().to_path_buf()), None)).await;
        assert!(report.plugins.is_empty());
        assert_eq!(
            report.statuses[0].state,
            PluginState::Skipped(LoadProblem::NoWasmSupport)
        );
        let notes: Vec<String> = report.notes.iter().map(ToString::to_string).collect();
        assert_eq!(
            notes,
            [format!(
                "Plugin directory '{}' was skipped: it is a WebAssembly plugin, and this build of \
                 hookline has no WebAssembly support (build it with the `wasm` feature, which \
                 `full` includes).",
                dir.display()
            )]
        );
        Ok(())
    }
}
