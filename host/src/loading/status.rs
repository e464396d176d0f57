//! Each plugin directory's state after loading, as `hookline hooks` shows it.

use std::path::PathBuf;

use hookline_messages::event::Subscription;
use hookline_messages::protocol::{Hello, HelloView};
use serde::Serialize;

use super::discover::{Candidate, Source};
use super::problem::{LoadNote, LoadProblem};
use super::trust::Trust;

/// Loaded, disabled in its manifest, or skipped with a problem.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "state", content = "problem", rename_all = "lowercase")]
pub enum PluginState {
    /// Its process runs.
    Loaded,
    /// `"enabled": false` in its manifest.
    Disabled,
    /// Skipped; the note says why.
    Skipped(LoadProblem),
}

/// One plugin directory as loading left it.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PluginStatus {
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
    /// A WebAssembly plugin's capabilities as its manifest asks for them (docs/wasm.md); empty
    /// for the other kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// The manifest's description.
    pub description: Option<String>,
    /// What it said in its hello, once loaded (shown with camelCase names: `rawHooks`).
    #[serde(serialize_with = "hello_view")]
    #[schemars(with = "Option<HelloView>")]
    pub hello: Option<Hello>,
    /// Whether it may run: user plugins by installation, workspace plugins once trusted.
    pub trust: Trust,
    /// Its state.
    #[serde(flatten)]
    pub state: PluginState,
}

impl PluginStatus {
    pub(super) fn found(candidate: &Candidate) -> Self {
        Self {
            name: candidate.dir_name.clone(),
            dir: candidate.dir.clone(),
            source: candidate.source,
            replaces: candidate.replaces.clone(),
            kind: "unknown".into(),
            capabilities: Vec::new(),
            description: None,
            hello: None,
            trust: Trust::Unknown,
            state: PluginState::Loaded,
        }
    }

    pub(super) fn loaded(&mut self, hello: Hello) {
        self.hello = Some(hello);
        self.state = PluginState::Loaded;
    }

    /// Its event subscriptions the gateway never emits (SPEC G4.1), by the gateway's own parser
    /// ([`Subscription::is_known`]).
    pub fn unknown_events(&self) -> Vec<&str> {
        self.hello
            .iter()
            .flat_map(|hello| hello.events.iter())
            .map(String::as_str)
            .filter(|key| !Subscription::parse(key).is_known())
            .collect()
    }

    /// The notes this directory produced: a skip, or warnings for unknown subscriptions.
    pub fn notes(&self) -> Vec<LoadNote> {
        if let PluginState::Skipped(problem) = &self.state {
            return vec![LoadNote::Skipped {
                dir: self.dir.clone(),
                problem: problem.clone(),
            }];
        }
        self.unknown_events()
            .into_iter()
            .map(|key| LoadNote::UnknownEvent {
                plugin: self.name.clone(),
                key: key.to_owned(),
            })
            .collect()
    }
}

/// A hello as [`HelloView`] shows it.
fn hello_view<S: serde::Serializer>(hello: &Option<Hello>, out: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&hello.as_ref().map(HelloView::from), out)
}
