//! `plugin.json`: the manifest every plugin directory has, and plugin names.

use std::path::Path;

use hookline_messages::hook::HookSet;
use serde::{Deserialize, Serialize};

use super::problem::LoadProblem;

/// The manifest's file name.
pub const MANIFEST: &str = "plugin.json";

/// The largest `plugin.json` read; a bigger one is refused before it is parsed.
pub const MAX_MANIFEST_BYTES: u64 = 64 * 1024;

/// Host components a plugin may not be named after, nor use as its entry point (SPEC L3).
/// Compared without regard to case.
pub const RESERVED_NAMES: &[&str] = &[
    "hookline",
    "hookline-host",
    "hookline-actors",
    "hookline-messages",
    "hookline_host",
    "hookline_actors",
    "hookline_messages",
];

/// A plugin's manifest. Unknown fields are ignored.
///
/// ```json
/// { "entry": "plugin.py", "interpreter": "python3", "description": "Adds house rules." }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The program to run, relative to the plugin directory and inside it.
    pub entry: String,
    /// An allowlisted interpreter that runs `entry` (`python3`, `node`); none for an executable.
    #[serde(default)]
    pub interpreter: Option<String>,
    /// Extra arguments after the entry point.
    #[serde(default)]
    pub args: Vec<String>,
    /// Whether the plugin loads (default true). `hookline hooks enable/disable` writes it.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The plugin's name, when it differs from its directory name.
    #[serde(default)]
    pub name: Option<String>,
    /// What the plugin does, for people.
    #[serde(default)]
    pub description: Option<String>,
    /// Every hook's timeout, in milliseconds (default 10 000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// How long the process has to say hello, in milliseconds (default 5 000).
    #[serde(default)]
    pub hello_timeout_ms: Option<u64>,
    /// Guard hooks the operator marks fail-closed (`["on_tool_call", "on_approval"]`): when one
    /// fails, the tool call is denied instead of the hook being skipped.
    #[serde(default, skip_serializing_if = "no_hooks")]
    pub fail_closed: HookSet,
    /// A WebAssembly plugin's sandbox (docs/wasm.md "The manifest"): its memory cap and the
    /// capabilities it asks for. Only read when `entry` ends in `.wasm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<WasmManifest>,
}

/// The manifest's `wasm` table.
///
/// ```json
/// { "memory_mb": 16, "capabilities": ["stdio"] }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WasmManifest {
    /// The most linear memory the guest may have, in MiB (default 64, at most 4096).
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// What the guest may reach beyond its own memory, by name (`stdio`, `clock`, ...).
    #[serde(default)]
    pub capabilities: Vec<String>,
}

fn yes() -> bool {
    true
}

fn no_hooks(hooks: &HookSet) -> bool {
    hooks.is_empty()
}

impl Manifest {
    /// Reads `<dir>/plugin.json`.
    ///
    /// # Errors
    /// [`LoadProblem::MissingManifest`], [`LoadProblem::UnreadableManifest`] or
    /// [`LoadProblem::InvalidManifest`].
    pub fn read(dir: &Path) -> Result<Self, LoadProblem> {
        use std::io::Read;
        let path = dir.join(MANIFEST);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadProblem::MissingManifest)
            }
            Err(error) => return Err(LoadProblem::UnreadableManifest(error.to_string())),
        };
        // Bounded before parsing: a hostile manifest cannot make the loader allocate without end.
        let mut bytes = Vec::new();
        file.take(MAX_MANIFEST_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| LoadProblem::UnreadableManifest(error.to_string()))?;
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(LoadProblem::InvalidManifest(format!(
                "it is over {MAX_MANIFEST_BYTES} bytes"
            )));
        }
        serde_json::from_slice(&bytes)
            .map_err(|error| LoadProblem::InvalidManifest(error.to_string()))
    }
}

/// Checks a plugin name: 1 to 64 characters, an ASCII letter first, then ASCII letters, digits,
/// `_`, `.` or `-`; and not a reserved host component name.
///
/// # Errors
/// [`LoadProblem::InvalidName`] or [`LoadProblem::ReservedName`].
pub fn check_name(name: &str) -> Result<(), LoadProblem> {
    let mut chars = name.chars();
    let first_is_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !first_is_letter || !rest_ok || name.len() > 64 {
        return Err(LoadProblem::InvalidName(name.to_owned()));
    }
    if is_reserved(name) {
        return Err(LoadProblem::ReservedName(name.to_owned()));
    }
    Ok(())
}

/// Whether `name` claims a host component (SPEC L3).
pub fn is_reserved(name: &str) -> bool {
    RESERVED_NAMES
        .iter()
        .any(|reserved| reserved.eq_ignore_ascii_case(name))
}

/// Sets `enabled` in `<dir>/plugin.json`, keeping every other field as it was.
///
/// # Errors
/// The manifest's problem, or the write error as text.
pub fn write_enabled(dir: &Path, enabled: bool) -> Result<(), LoadProblem> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => LoadProblem::MissingManifest,
        _ => LoadProblem::UnreadableManifest(error.to_string()),
    })?;
    let mut json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| LoadProblem::InvalidManifest(error.to_string()))?;
    let Some(object) = json.as_object_mut() else {
        return Err(LoadProblem::InvalidManifest(
            "it is not a JSON object".into(),
        ));
    };
    object.insert("enabled".into(), serde_json::Value::Bool(enabled));
    let mut out = serde_json::to_string_pretty(&json).unwrap_or_default();
    out.push('\n');
    std::fs::write(&path, out).map_err(|error| LoadProblem::UnreadableManifest(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rules() {
        for good in ["a", "acme", "A.b-c_9", &"x".repeat(64)] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "9lives", "-x", "a b", "é", &"x".repeat(65), "a/b"] {
            assert!(
                matches!(check_name(bad), Err(LoadProblem::InvalidName(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            check_name("HookLine-Host"),
            Err(LoadProblem::ReservedName(_))
        ));
    }

    #[test]
    fn manifest_defaults_and_ignores_unknown_fields() {
        let manifest: Manifest = serde_json::from_str(r#"{"entry":"p.py","future":1}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(manifest.enabled);
        assert_eq!(manifest.interpreter, None);
    }
}
