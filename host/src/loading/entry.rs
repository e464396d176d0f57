//! The entry point: fenced inside the plugin directory, never the host, run directly or by an
//! allowlisted interpreter (SPEC L2, L3).

use std::path::{Component, Path, PathBuf};

use super::manifest::{is_reserved, Manifest};
use super::problem::LoadProblem;
use crate::tools::fence::{file_inside, is_executable, NotInside};

pub use super::interpreters::ALLOWED_INTERPRETERS;

/// How a plugin is run: the program, its arguments, and what kind it is (for `hooks list`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The program to start.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// `python3`, `node`, `executable`, or `wasm` (loaded into the host, not run: `program` is
    /// the module).
    pub kind: String,
}

/// The kind of a plugin whose entry is a WebAssembly module (docs/wasm.md).
pub const WASM_KIND: &str = "wasm";

/// Whether an entry point names a WebAssembly module.
pub fn is_wasm_entry(entry: &str) -> bool {
    Path::new(entry)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("wasm"))
}

/// Resolves the manifest's entry point inside `dir` and checks it.
///
/// # Errors
/// The first problem found: an escaping, missing or non-executable entry point, the host itself,
/// or an interpreter not on the allowlist.
pub fn resolve(dir: &Path, manifest: &Manifest) -> Result<Launch, LoadProblem> {
    let entry = fenced(dir, &manifest.entry)?;
    refuse_host(&entry, &manifest.entry)?;
    let entry_arg = entry.display().to_string();
    let mut args = Vec::new();
    let (program, kind) = match &manifest.interpreter {
        // A module is loaded into the host, never run as a program (docs/wasm.md).
        None if is_wasm_entry(&manifest.entry) => (entry, WASM_KIND.to_owned()),
        Some(_) if is_wasm_entry(&manifest.entry) => {
            return Err(LoadProblem::InvalidManifest(format!(
                "its entry '{}' is a WebAssembly module, which takes no interpreter",
                manifest.entry
            )))
        }
        Some(name) => {
            if !ALLOWED_INTERPRETERS.contains(&name.as_str()) {
                return Err(LoadProblem::InterpreterNotAllowed(name.clone()));
            }
            let program =
                find_on_path(name).ok_or_else(|| LoadProblem::InterpreterMissing(name.clone()))?;
            args.push(entry_arg);
            (program, name.clone())
        }
        None if is_executable(&entry) => (entry, "executable".to_owned()),
        None => return Err(LoadProblem::EntryNotExecutable(manifest.entry.clone())),
    };
    args.extend(manifest.args.iter().cloned());
    Ok(Launch {
        program,
        args,
        kind,
    })
}

/// The entry point's real path, if it is relative, has no `..`, and (symlinks resolved) stays
/// inside `dir`.
fn fenced(dir: &Path, entry: &str) -> Result<PathBuf, LoadProblem> {
    let relative = Path::new(entry);
    let plain = relative
        .components()
        .all(|part| matches!(part, Component::Normal(_) | Component::CurDir));
    if entry.is_empty() || !plain {
        return Err(LoadProblem::EntryEscapes(entry.to_owned()));
    }
    file_inside(dir, relative).map_err(|refused| match refused {
        NotInside::Outside => LoadProblem::EntryEscapes(entry.to_owned()),
        NotInside::Missing | NotInside::NotAFile => LoadProblem::EntryMissing(entry.to_owned()),
    })
}

/// Refuses the running host binary, recognised by file identity and content whatever its name,
/// and files named after host components, as a reserved name (SPEC L3).
fn refuse_host(real: &Path, entry: &str) -> Result<(), LoadProblem> {
    if super::host_binary::is_host_binary(real) {
        return Err(LoadProblem::EntryIsHost(entry.to_owned()));
    }
    let stem = real
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or_default();
    if is_reserved(stem) {
        return Err(LoadProblem::EntryReservedName(entry.to_owned()));
    }
    Ok(())
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}
