//! Finding plugin directories: the user directory, overlaid by the workspace directory, in a
//! deterministic order.
//!
//! Order (documented in `docs/plugins.md`): plugins named in the pinned order come first, in that
//! order; every other plugin follows in directory name order (byte order). A workspace plugin
//! replaces the user plugin with the same directory name as a whole.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where a plugin directory was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The user plugins directory.
    User,
    /// The workspace plugins directory; replaces a user plugin of the same directory name.
    Workspace,
}

impl Source {
    /// `user` or `workspace`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Workspace => "workspace",
        }
    }
}

/// One plugin directory to load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The directory's name (the plugin's identity).
    pub dir_name: String,
    /// The directory.
    pub dir: PathBuf,
    /// Where it was found.
    pub source: Source,
    /// The user plugin it replaces, if any.
    pub replaces: Option<PathBuf>,
}

/// The plugin directories under `user` and `workspace` (either may be absent), overlaid and in
/// load order. Entries that are not directories, and hidden ones, are ignored; a directory name that is not UTF-8
/// is kept under its lossy name, so the name check reports it.
pub fn candidates(
    user: Option<&Path>,
    workspace: Option<&Path>,
    pinned: &[String],
) -> Vec<Candidate> {
    let mut by_name: BTreeMap<String, Candidate> = BTreeMap::new();
    for (root, source) in [(user, Source::User), (workspace, Source::Workspace)] {
        for (dir_name, dir) in root.map(subdirectories).unwrap_or_default() {
            let replaces = by_name.get(&dir_name).map(|old| old.dir.clone());
            by_name.insert(
                dir_name.clone(),
                Candidate {
                    dir_name,
                    dir,
                    source,
                    replaces,
                },
            );
        }
    }
    let mut ordered = Vec::with_capacity(by_name.len());
    for name in pinned {
        if let Some(candidate) = by_name.remove(name) {
            ordered.push(candidate);
        }
    }
    ordered.extend(by_name.into_values());
    ordered
}

/// The names in `pinned` that no candidate has, in the order given: the order cannot place
/// them, and a plugin an operator meant to pin must not go missing silently.
pub fn unmatched_pins(pinned: &[String], found: &[Candidate]) -> Vec<String> {
    pinned
        .iter()
        .filter(|name| !found.iter().any(|candidate| &candidate.dir_name == *name))
        .cloned()
        .collect()
}

fn subdirectories(root: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_dir())
        // Hidden directories (`.git`, editor state) are not plugins.
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| {
            (
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            )
        })
        .collect()
}
