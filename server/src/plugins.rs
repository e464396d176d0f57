//! What `GET /v1/plugins`, `/readyz` and `hookline_plugin_state` say about the plugins a server
//! runs (issue 46 item 2): each plugin on disk as loading left it, and each loaded plugin's state
//! **now** (`loaded`, `restarting`, `exited`, `suspended`), with why and since when.

use std::path::PathBuf;
use std::time::SystemTime;

use hookline_host::loading::trust::Trust;
use hookline_host::loading::{
    LiveState, LoadProblem, LoadedPlugin, PluginState, PluginStatus, Source,
};
use hookline_messages::protocol::HelloView;
use schemars::JsonSchema;
use serde::Serialize;

/// The plugins a server runs, as `GET /v1/plugins` reports them.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginsView {
    /// Plugins on disk, as `hookline hooks list --json` prints them, each loaded one with its
    /// state now.
    pub plugins: Vec<PluginView>,
    /// In-process plugins, in load order (the bundled demo plugins with `serve --demo-plugins`).
    /// They are always `loaded`: the runtime never stops calling them.
    pub in_process: Vec<String>,
    /// Loading notes (skipped plugins, unknown subscriptions, tools left out).
    pub load_notes: Vec<String>,
    /// The loaded plugins, whose state each answer reads.
    #[serde(skip)]
    #[schemars(skip)]
    pub running: Vec<LoadedPlugin>,
}

impl PluginsView {
    /// The view of what loading found (`statuses`) and started (`running`).
    pub fn new(statuses: &[PluginStatus], running: Vec<LoadedPlugin>) -> Self {
        Self {
            plugins: statuses.iter().map(PluginView::from).collect(),
            running,
            ..Self::default()
        }
    }

    /// The view now: every loaded plugin with its live state, why and since when.
    pub fn now(&self) -> Self {
        let mut view = self.clone();
        for plugin in &mut view.plugins {
            if plugin.state != ServedState::Loaded {
                continue;
            }
            if let Some(running) = self.running.iter().find(|p| p.name() == plugin.name) {
                let live = running.live();
                plugin.state = ServedState::from(live.state);
                plugin.state_reason = live.reason.map(|reason| reason.to_string());
                plugin.state_since = Some(rfc3339(live.since));
            }
        }
        view
    }

    /// The first loaded plugin with fail-closed guard hooks that is not `loaded` now, as the
    /// sentence `/readyz` answers with (its guard hooks deny while it is down).
    pub fn fail_closed_down(&self) -> Option<String> {
        self.running.iter().find_map(|plugin| {
            let hooks = plugin.fail_closed();
            let live = plugin.live();
            if hooks.is_empty() || live.is_loaded() {
                return None;
            }
            let hooks: Vec<String> = hooks.iter().map(|hook| hook.to_string()).collect();
            let why = live
                .reason
                .map(|reason| format!(": {reason}"))
                .unwrap_or_default();
            Some(format!(
                "plugin '{}' is {} and its fail-closed hooks ({}) deny meanwhile{why}",
                plugin.name(),
                live.state.as_str(),
                hooks.join(", ")
            ))
        })
    }

    /// Sets `hookline_plugin_state{plugin,state}`: 1 for each plugin's state now, 0 for its other
    /// states (in-process plugins are always `loaded`).
    pub(crate) fn record_states(&self) {
        let states = self
            .running
            .iter()
            .map(|plugin| (plugin.name().to_owned(), plugin.live().state))
            .chain(
                self.in_process
                    .iter()
                    .map(|name| (name.clone(), LiveState::Loaded)),
            );
        for (plugin, now) in states {
            for state in LiveState::ALL {
                metrics::gauge!(
                    "hookline_plugin_state",
                    "plugin" => plugin.clone(),
                    "state" => state.as_str()
                )
                .set(if state == now { 1.0 } else { 0.0 });
            }
        }
    }
}

/// `since` in RFC 3339, to the millisecond, in UTC.
fn rfc3339(since: SystemTime) -> String {
    humantime::format_rfc3339_millis(since).to_string()
}

/// One plugin directory: [`PluginStatus`]'s fields (the same JSON as `hooks list --json`), its
/// state now, why and since when.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginView {
    /// The plugin's name (its directory name unless the manifest names it).
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Where it was found.
    pub source: Source,
    /// The user plugin it replaced, if any.
    pub replaces: Option<PathBuf>,
    /// `python3`, `node`, `executable`, `wasm`, or `unknown` before the manifest was read.
    pub kind: String,
    /// A WebAssembly plugin's capabilities as its manifest asks for them; empty for the other
    /// kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// The manifest's description.
    pub description: Option<String>,
    /// What it said in its hello, once loaded (camelCase names: `rawHooks`).
    pub hello: Option<HelloView>,
    /// Whether it may run: user plugins by installation, workspace plugins once trusted.
    pub trust: Trust,
    /// Its state now (`state`, with `problem` when skipped).
    #[serde(flatten)]
    pub state: ServedState,
    /// Why it is `restarting`, `exited` or `suspended`: an English phrase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<String>,
    /// Since when a loaded plugin is in its state (RFC 3339, UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_since: Option<String>,
}

impl From<&PluginStatus> for PluginView {
    fn from(status: &PluginStatus) -> Self {
        Self {
            name: status.name.clone(),
            dir: status.dir.clone(),
            source: status.source,
            replaces: status.replaces.clone(),
            kind: status.kind.clone(),
            capabilities: status.capabilities.clone(),
            description: status.description.clone(),
            hello: status.hello.as_ref().map(HelloView::from),
            trust: status.trust,
            state: match &status.state {
                PluginState::Loaded => ServedState::Loaded,
                PluginState::Disabled => ServedState::Disabled,
                PluginState::Skipped(problem) => ServedState::Skipped(problem.clone()),
            },
            state_reason: None,
            state_since: None,
        }
    }
}

/// A plugin directory's state: as loading left it (`loaded`, `disabled` in its manifest,
/// `skipped`), and for a loaded plugin what became of it since.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "state", content = "problem", rename_all = "lowercase")]
pub enum ServedState {
    /// Its process runs (a WebAssembly plugin: its module is loaded) and the runtime calls it.
    Loaded,
    /// `"enabled": false` in its manifest.
    Disabled,
    /// Skipped at load; the note says why.
    Skipped(LoadProblem),
    /// Its process exited and is being restarted; calls wait for the restart (under their
    /// deadline).
    Restarting,
    /// Its process ended and is not restarted (the host shut it down).
    Exited,
    /// The runtime stopped calling it after repeated failures (crashes or traps): its calls
    /// are skipped at once and its fail-closed guard hooks deny.
    Suspended,
}

impl From<LiveState> for ServedState {
    fn from(state: LiveState) -> Self {
        match state {
            LiveState::Loaded => Self::Loaded,
            LiveState::Restarting => Self::Restarting,
            LiveState::Exited => Self::Exited,
            LiveState::Suspended => Self::Suspended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookline_messages::protocol::Hello;

    /// `/v1/plugins` lists a plugin directory with the same fields `hooks list --json` prints:
    /// a field added to `PluginStatus` and not here fails this test.
    #[test]
    fn a_plugin_view_serializes_as_its_status_does() -> Result<(), serde_json::Error> {
        let statuses = [
            PluginState::Loaded,
            PluginState::Disabled,
            PluginState::Skipped(LoadProblem::MissingManifest),
        ]
        .map(|state| PluginStatus {
            name: "guard".into(),
            dir: "/plugins/guard".into(),
            source: Source::User,
            replaces: Some("/elsewhere/guard".into()),
            kind: "wasm".into(),
            capabilities: vec!["clock".into()],
            description: Some("Guards.".into()),
            // A hello, so its field names (`rawHooks`, camelCase as in `hooks list --json`)
            // are compared too.
            hello: Some(Hello::new()),
            trust: Trust::Installed,
            state,
        });
        for status in &statuses {
            assert_eq!(
                serde_json::to_value(PluginView::from(status))?,
                serde_json::to_value(status)?
            );
        }
        Ok(())
    }
}
