//! What loading reports: a skipped plugin directory and why, and event subscriptions the gateway
//! never emits. Data, rendered to English in one place (the `Display` impls below).

use std::fmt;
use std::path::PathBuf;

use hookline_messages::note::Note;
use serde::Serialize;

/// A note recorded while loading plugins.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LoadNote {
    /// A plugin directory was skipped; the others still load.
    Skipped {
        /// The plugin's directory.
        dir: PathBuf,
        /// Why.
        problem: LoadProblem,
    },
    /// The pinned order names a plugin no directory holds.
    PinnedMissing {
        /// The name as pinned.
        name: String,
    },
    /// A subscription to a key the gateway never emits: kept, with this warning (SPEC G4.1).
    UnknownEvent {
        /// The plugin's name.
        plugin: String,
        /// The key as subscribed.
        key: String,
    },
}

impl LoadNote {
    /// The note as the host records it; its English text comes from [`Note`]'s one rendering.
    pub fn to_note(&self) -> Note {
        match self {
            Self::Skipped { dir, problem } => Note::PluginDirectorySkipped {
                dir: dir.display().to_string(),
                problem: problem.to_string(),
            },
            Self::PinnedMissing { name } => Note::PinnedPluginMissing { name: name.clone() },
            Self::UnknownEvent { plugin, key } => Note::UnknownSubscription {
                plugin: plugin.clone(),
                key: key.clone(),
            },
        }
    }
}

impl fmt::Display for LoadNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_note(), f)
    }
}

/// The capabilities a WebAssembly plugin's manifest may ask for (docs/wasm.md), by name.
#[cfg(feature = "wasm")]
fn capability_names() -> Vec<&'static str> {
    crate::wasm::Capability::ALL
        .map(crate::wasm::Capability::as_str)
        .to_vec()
}

/// Why a plugin directory was skipped. Renders as a phrase starting with "it" or "its", without
/// a final full stop (the note adds it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "problem", content = "detail", rename_all = "kebab-case")]
pub enum LoadProblem {
    /// The directory name is not a valid plugin name.
    InvalidName(String),
    /// The name claims a host component (SPEC L3).
    ReservedName(String),
    /// Another plugin loaded earlier has this name.
    DuplicateName {
        /// The name.
        name: String,
        /// The directory of the plugin that has it.
        first: PathBuf,
    },
    /// No `plugin.json`.
    MissingManifest,
    /// `plugin.json` could not be read.
    UnreadableManifest(String),
    /// `plugin.json` is not a valid manifest.
    InvalidManifest(String),
    /// The entry point is absolute, has `..`, or a symlink leads out of the directory (SPEC L2).
    EntryEscapes(String),
    /// The entry point does not exist or is not a file.
    EntryMissing(String),
    /// The entry point is not executable and names no interpreter.
    EntryNotExecutable(String),
    /// The entry point is the running host binary, under whatever name (SPEC L3).
    EntryIsHost(String),
    /// The entry point's file name claims a host component (SPEC L3).
    EntryReservedName(String),
    /// The interpreter is not on the allowlist.
    InterpreterNotAllowed(String),
    /// The interpreter is allowed but not installed.
    InterpreterMissing(String),
    /// The process failed to start or to say a valid hello, or a WebAssembly module did not
    /// load.
    StartFailed(String),
    /// A WebAssembly plugin's manifest asks for a capability there is none of (docs/wasm.md).
    UnknownCapability(String),
    /// A WebAssembly plugin, in a build without the `wasm` feature (no WebAssembly runtime).
    NoWasmSupport,
    /// A workspace plugin the operator has not trusted (`hookline hooks trust <name>`).
    Untrusted(String),
    /// A workspace plugin whose manifest or entry point changed since it was trusted.
    TrustChanged(String),
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidName(name) => write!(
                f,
                "its name '{name}' is not a valid plugin name (1 to 64 characters: a letter, then \
                 letters, digits, '_', '.' or '-')"
            ),
            Self::ReservedName(name) => write!(f, "its name '{name}' is reserved for the host"),
            Self::DuplicateName { name, first } => write!(
                f,
                "its name '{name}' is already used by the plugin in '{}'",
                first.display()
            ),
            Self::MissingManifest => f.write_str("it has no plugin.json"),
            Self::UnreadableManifest(error) => {
                write!(f, "its plugin.json could not be read: {error}")
            }
            Self::InvalidManifest(error) => write!(f, "its plugin.json is invalid: {error}"),
            Self::EntryEscapes(entry) => {
                write!(
                    f,
                    "its entry point '{entry}' is outside the plugin directory"
                )
            }
            Self::EntryMissing(entry) => write!(f, "its entry point '{entry}' is not a file"),
            Self::EntryNotExecutable(entry) => write!(
                f,
                "its entry point '{entry}' is not executable and it names no interpreter"
            ),
            Self::EntryIsHost(entry) => {
                write!(
                    f,
                    "its entry point '{entry}' is the host itself, which plugins cannot load"
                )
            }
            Self::EntryReservedName(entry) => {
                write!(
                    f,
                    "its entry point '{entry}' has a name reserved for the host"
                )
            }
            Self::InterpreterNotAllowed(name) => write!(
                f,
                "its interpreter '{name}' is not allowed (allowed: {})",
                super::interpreters::ALLOWED_INTERPRETERS.join(", ")
            ),
            Self::InterpreterMissing(name) => {
                write!(f, "its interpreter '{name}' was not found on PATH")
            }
            Self::StartFailed(error) => f.write_str(error),
            Self::UnknownCapability(name) => {
                write!(
                    f,
                    "its plugin.json asks for the capability '{name}', which does not exist"
                )?;
                // Only a build with WebAssembly support reads capabilities at all.
                #[cfg(feature = "wasm")]
                write!(f, " (there are: {})", capability_names().join(", "))?;
                Ok(())
            }
            Self::NoWasmSupport => f.write_str(
                "it is a WebAssembly plugin, and this build of hookline has no WebAssembly \
                 support (build it with the `wasm` feature, which `full` includes)",
            ),
            Self::Untrusted(name) => write!(
                f,
                "its workspace plugin '{name}' is not trusted (run 'hookline hooks trust {name}')"
            ),
            Self::TrustChanged(name) => write!(
                f,
                "its workspace plugin '{name}' changed since it was trusted (run 'hookline hooks \
                 trust {name}' again)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC L1: a plugin the host cannot load is skipped with a note that says why; a build
    /// without WebAssembly support says which feature brings it (issue 46 item 7).
    #[test]
    fn a_wasm_plugin_in_a_build_without_wasm_is_skipped_with_a_sentence_naming_the_feature() {
        let note = LoadNote::Skipped {
            dir: PathBuf::from("/plugins/guard"),
            problem: LoadProblem::NoWasmSupport,
        };
        assert_eq!(
            note.to_string(),
            "Plugin directory '/plugins/guard' was skipped: it is a WebAssembly plugin, and this \
             build of hookline has no WebAssembly support (build it with the `wasm` feature, \
             which `full` includes)."
        );
    }
}
