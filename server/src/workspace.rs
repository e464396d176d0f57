//! The workspace fence of `hookline serve` (issue 11 item 3): a session's workspace, and every
//! `/cd`, stays inside `--workspace-root`. Paths are resolved against the root, `..` and absolute
//! paths are refused, and the canonical path (symlinks followed) must still lie under the
//! canonical root, so a symlink pointing out of the root is refused too.

use std::path::{Component, Path, PathBuf};

use super::ApiError;

/// The canonical workspace root.
#[derive(Clone, Debug)]
pub struct WorkspaceRoot(PathBuf);

impl WorkspaceRoot {
    /// The root, canonicalized (it must exist and be a directory).
    ///
    /// # Errors
    /// The I/O error canonicalizing it, or `NotADirectory`.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        let root = root.canonicalize()?;
        if !root.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a directory",
            ));
        }
        Ok(Self(root))
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `path` canonicalized, when it lies inside the root.
    fn inside(&self, shown: &str, path: &Path) -> Result<PathBuf, ApiError> {
        let canonical = path
            .canonicalize()
            .map_err(|e| ApiError::Invalid(format!("cannot use workspace '{shown}': {e}")))?;
        if !canonical.starts_with(&self.0) {
            return Err(ApiError::OutsideRoot(shown.to_owned()));
        }
        if !canonical.is_dir() {
            return Err(ApiError::Invalid(format!(
                "workspace '{shown}' is not a directory"
            )));
        }
        Ok(canonical)
    }
}

/// The directory `relative` names under `base` (itself inside the root), created when missing.
/// Only plain names are allowed (`sub/dir`); the result is canonical and inside the root.
///
/// # Errors
/// [`ApiError::OutsideRoot`] for `..`, absolute paths or symlinks leading out of the root;
/// [`ApiError::Invalid`] when the directory cannot be made.
pub fn resolve_workspace(
    root: &WorkspaceRoot,
    base: &Path,
    relative: &str,
) -> Result<PathBuf, ApiError> {
    let wanted = Path::new(relative);
    if relative.contains('\0')
        || !wanted
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(ApiError::OutsideRoot(relative.to_owned()));
    }
    let base = root.inside(relative, base)?;
    let target = base.join(wanted);
    // The deepest part that exists must already be inside the root before anything is created
    // (a symlink to /etc must not get a directory made in /etc).
    let mut existing = target.as_path();
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => break,
        }
    }
    root.inside(relative, existing)?;
    if !target.exists() {
        std::fs::create_dir_all(&target)
            .map_err(|e| ApiError::Invalid(format!("cannot make workspace '{relative}': {e}")))?;
    }
    root.inside(relative, &target)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_resolve_inside_the_root_and_are_made() {
        let dir = tempfile::tempdir().unwrap();
        let root = WorkspaceRoot::new(dir.path()).unwrap();
        let ws = resolve_workspace(&root, root.path(), "team/a").unwrap();
        assert!(ws.is_dir());
        assert!(ws.starts_with(root.path()));
    }

    #[test]
    fn dot_dot_absolute_and_escaping_symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = WorkspaceRoot::new(dir.path()).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        for bad in ["../x", "/etc", "a/../../x", "out", "out/new"] {
            let error = resolve_workspace(&root, root.path(), bad).unwrap_err();
            assert!(matches!(error, ApiError::OutsideRoot(_)), "{bad}: {error}");
        }
        assert!(!outside.path().join("new").exists());
    }
}
