//! The `tool.json` manifest of an external tool, and the checks that make it loadable.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookline_messages::approval::{Authority, Risk};
use serde::Deserialize;

use crate::tools::fence::{file_inside, is_executable, NotInside};

/// The manifest's file name inside a tool's directory.
pub const MANIFEST: &str = "tool.json";
/// The largest manifest read, in bytes.
const MAX_MANIFEST_BYTES: u64 = 64 * 1024;
/// The timeout when the manifest names none.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest timeout a manifest may ask for (10 minutes).
const MAX_TIMEOUT_MS: u64 = 600_000;

/// `tool.json`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: String,
    description: String,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    risk: Risk,
    authority: Authority,
    #[serde(default = "default_timeout")]
    timeout_ms: u64,
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// A checked manifest: the command resolves to an executable file inside the tool's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub(crate) name: String,
    pub(crate) description: String,
    /// The tool's directory, canonical.
    pub(crate) dir: PathBuf,
    /// The command, canonical, inside `dir`.
    pub(crate) command: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) risk: Risk,
    pub(crate) authority: Authority,
    pub(crate) timeout: Duration,
}

/// Reads and checks `<dir>/tool.json`; the error is why it cannot be used (a clause, no dir).
pub(crate) fn load(dir: &Path) -> Result<Manifest, String> {
    let dir =
        fs::canonicalize(dir).map_err(|e| format!("the directory cannot be resolved ({e})"))?;
    let raw = read_raw(&dir.join(MANIFEST))?;
    check_name(&raw.name)?;
    if raw.timeout_ms == 0 || raw.timeout_ms > MAX_TIMEOUT_MS {
        return Err(format!(
            "timeout_ms must be between 1 and {MAX_TIMEOUT_MS}, not {}",
            raw.timeout_ms
        ));
    }
    let command = resolve_command(&dir, &raw.command)?;
    Ok(Manifest {
        name: raw.name,
        description: raw.description,
        dir,
        command,
        args: raw.args,
        risk: raw.risk,
        authority: raw.authority,
        timeout: Duration::from_millis(raw.timeout_ms),
    })
}

fn read_raw(path: &Path) -> Result<RawManifest, String> {
    let file = fs::File::open(path).map_err(|e| format!("{MANIFEST} cannot be opened ({e})"))?;
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{MANIFEST} cannot be read ({e})"))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(format!("{MANIFEST} is over {MAX_MANIFEST_BYTES} bytes"));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{MANIFEST} is not a valid manifest ({e})"))
}

/// Tool names are what a model types: letters, digits, `_` and `-`, 1 to 64 of them.
fn check_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() || name.len() > 64 || !ok_chars {
        return Err(format!(
            "the name {name:?} is not 1 to 64 letters, digits, '_' or '-'"
        ));
    }
    Ok(())
}

/// The command must be a file inside the tool's directory (after resolving links), executable.
fn resolve_command(dir: &Path, command: &str) -> Result<PathBuf, String> {
    if Path::new(command).is_absolute() {
        return Err(format!(
            "the command {command:?} is an absolute path; it must be inside the tool's directory"
        ));
    }
    let path = file_inside(dir, Path::new(command)).map_err(|refused| match refused {
        NotInside::Missing => {
            format!("the command {command:?} does not exist in the tool's directory")
        }
        NotInside::Outside => {
            format!("the command {command:?} resolves outside the tool's directory")
        }
        NotInside::NotAFile => format!("the command {command:?} is not a file"),
    })?;
    if !is_executable(&path) {
        return Err(format!("the command {command:?} is not executable"));
    }
    Ok(path)
}
