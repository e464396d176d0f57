//! The fences: [`resolve`] decides whether a path a tool was given stays inside the workspace
//! root (issue 8 item 4); [`file_inside`] whether a plugin's entry point or an external tool's
//! command is a file inside its own directory (SPEC L2).
//!
//! The deepest ancestor of the requested path that exists is canonicalized (so `..` and every
//! symbolic link in it are resolved by the OS) and must lie inside the canonical root. The part
//! that does not exist yet may hold only plain names: no `..`, and its first name must not be an
//! entry that exists but cannot be resolved (a dangling symbolic link or a link loop, which a
//! write would follow out of the workspace).

use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// A path the fence let through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fenced {
    /// The absolute path inside the canonical root: fully canonical if it exists, otherwise
    /// its deepest existing ancestor (canonical) followed by plain names.
    pub path: PathBuf,
    /// Whether the path exists.
    pub exists: bool,
}

/// Why a path was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum FenceError {
    /// The workspace root itself cannot be resolved.
    RootUnavailable {
        /// The root as configured.
        root: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The path resolves outside the workspace root.
    Outside {
        /// The path as requested.
        requested: String,
    },
    /// The part of the path that does not exist yet climbs with `..`.
    ParentInNewPart {
        /// The path as requested.
        requested: String,
    },
    /// An entry on the path exists but cannot be resolved (a dangling link or a link loop).
    Unresolvable {
        /// The path as requested.
        requested: String,
    },
}

impl fmt::Display for FenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RootUnavailable { root, source } => {
                write!(
                    f,
                    "The workspace root {} cannot be resolved: {source}.",
                    root.display()
                )
            }
            Self::Outside { requested } => {
                write!(f, "The path {requested:?} is outside the workspace.")
            }
            Self::ParentInNewPart { requested } => {
                write!(f, "The path {requested:?} climbs with '..' through directories that do not exist.")
            }
            Self::Unresolvable { requested } => write!(
                f,
                "The path {requested:?} goes through a symbolic link that cannot be resolved."
            ),
        }
    }
}

impl std::error::Error for FenceError {}

/// Resolves `requested` (relative to `root`, or absolute) and checks that it stays inside
/// `root`.
///
/// # Errors
/// A [`FenceError`] saying why the path was refused.
pub fn resolve(root: &Path, requested: &str) -> Result<Fenced, FenceError> {
    let root = fs::canonicalize(root).map_err(|source| FenceError::RootUnavailable {
        root: root.to_path_buf(),
        source,
    })?;
    // Joining an absolute path replaces the root: absolute paths are checked like any other.
    let candidate = root.join(requested);
    let (existing, canonical) =
        deepest_existing(&candidate).ok_or_else(|| FenceError::Outside {
            requested: requested.to_owned(),
        })?;
    if !canonical.starts_with(&root) {
        return Err(FenceError::Outside {
            requested: requested.to_owned(),
        });
    }
    let rest = candidate.strip_prefix(existing).unwrap_or(Path::new(""));
    if !rest.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(FenceError::ParentInNewPart {
            requested: requested.to_owned(),
        });
    }
    if let Some(first) = rest.components().next() {
        // It did not canonicalize, so if it exists at all it is a link that leads nowhere
        // (or in a loop); following it on write could leave the workspace.
        if fs::symlink_metadata(canonical.join(first)).is_ok() {
            return Err(FenceError::Unresolvable {
                requested: requested.to_owned(),
            });
        }
    }
    if rest.as_os_str().is_empty() {
        // Joining an empty path would add a trailing slash, which a file path must not have.
        return Ok(Fenced {
            path: canonical,
            exists: true,
        });
    }
    Ok(Fenced {
        path: canonical.join(rest),
        exists: false,
    })
}

/// Why [`file_inside`] refused a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotInside {
    /// The directory or the path cannot be resolved (it does not exist, or a link leads nowhere).
    Missing,
    /// The path resolves (links followed) outside the directory.
    Outside,
    /// The path resolves inside the directory but is not a file.
    NotAFile,
}

/// The canonical path of the existing file `relative` names inside `dir`: every link is resolved
/// by the OS and the result must lie inside `dir`'s canonical form. Callers check the form of
/// `relative` (absolute, `..`) first, as their own rules say.
///
/// # Errors
/// [`NotInside`] saying why.
pub fn file_inside(dir: &Path, relative: &Path) -> Result<PathBuf, NotInside> {
    let root = fs::canonicalize(dir).map_err(|_| NotInside::Missing)?;
    let real = fs::canonicalize(root.join(relative)).map_err(|_| NotInside::Missing)?;
    if !real.starts_with(&root) {
        return Err(NotInside::Outside);
    }
    if !real.is_file() {
        return Err(NotInside::NotAFile);
    }
    Ok(real)
}

/// Whether `path` is a file the host may execute (on Unix: any execute bit set).
pub fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The deepest ancestor of `path` (itself included) that canonicalizes, with its canonical form.
fn deepest_existing(path: &Path) -> Option<(&Path, PathBuf)> {
    path.ancestors()
        .find_map(|a| fs::canonicalize(a).ok().map(|c| (a, c)))
}
