//! Trust for workspace plugins: a plugin found in a workspace's plugins directory runs only once
//! the operator trusted it (`hookline hooks trust <name>`), and only as it was when trusted.
//!
//! Trust is bound to a SHA-256 of the plugin's `plugin.json` and its entry point file; a changed
//! plugin is untrusted again, with a note naming it. User-directory plugins are trusted by
//! installation. The trust file is `$HOOKLINE_HOME/trust.json`, else `~/.hookline/trust.json`:
//! a JSON object from each trusted plugin directory (its canonical path) to its fingerprint.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::discover::{Candidate, Source};
use super::manifest::{Manifest, MANIFEST};
use super::problem::LoadProblem;

/// The trust file's name in the hookline home.
pub const TRUST_FILE: &str = "trust.json";

/// The largest trust file read; a bigger one is treated as empty (nothing trusted).
const MAX_TRUST_FILE: u64 = 4 * 1024 * 1024;

/// A plugin's trust, as `hookline hooks list` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    /// A user-directory plugin: trusted by installation.
    Installed,
    /// A workspace plugin the operator trusted, unchanged since.
    Trusted,
    /// A workspace plugin never trusted.
    Untrusted,
    /// A workspace plugin trusted once, changed since.
    Changed,
    /// Not decided (the manifest or entry point could not be read).
    Unknown,
}

impl Trust {
    /// `installed`, `trusted`, `untrusted`, `changed` or `-`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Installed => "installed",
            Self::Trusted => "trusted",
            Self::Untrusted => "untrusted",
            Self::Changed => "changed",
            Self::Unknown => "-",
        }
    }
}

/// The trusted workspace plugins: canonical directory -> fingerprint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustFile {
    #[serde(flatten)]
    trusted: BTreeMap<String, String>,
}

impl TrustFile {
    /// Reads `path`; a missing, oversized or invalid file trusts nothing.
    pub fn read(path: &Path) -> Self {
        let Ok(file) = std::fs::File::open(path) else {
            return Self::default();
        };
        let mut text = String::new();
        if file
            .take(MAX_TRUST_FILE + 1)
            .read_to_string(&mut text)
            .is_err()
            || text.len() as u64 > MAX_TRUST_FILE
        {
            return Self::default();
        }
        serde_json::from_str(&text).unwrap_or_default()
    }

    /// Records `dir` as trusted with `fingerprint` and writes the file (atomically: a temporary
    /// file renamed over it).
    ///
    /// # Errors
    /// The I/O error of creating the directory or writing the file.
    pub fn trust(path: &Path, dir: &Path, fingerprint: String) -> std::io::Result<()> {
        let mut file = Self::read(path);
        file.trusted.insert(key(dir), fingerprint);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, text + "\n")?;
        std::fs::rename(&temporary, path)
    }

    fn get(&self, dir: &Path) -> Option<&str> {
        self.trusted.get(&key(dir)).map(String::as_str)
    }
}

fn key(dir: &Path) -> String {
    dir.canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

/// The default trust file: `$HOOKLINE_HOME/trust.json`, else `~/.hookline/trust.json`.
pub fn default_trust_file() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("HOOKLINE_HOME") {
        return Some(PathBuf::from(home).join(TRUST_FILE));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".hookline").join(TRUST_FILE))
}

/// `sha256:<hex>` of the plugin's manifest bytes and its entry point file's bytes.
///
/// # Errors
/// [`LoadProblem::UnreadableManifest`] when either file cannot be read.
pub fn fingerprint(dir: &Path, manifest: &Manifest) -> Result<String, LoadProblem> {
    let unreadable = |e: std::io::Error| LoadProblem::UnreadableManifest(e.to_string());
    let mut hasher = Sha256::new();
    for file in [dir.join(MANIFEST), dir.join(&manifest.entry)] {
        let bytes = std::fs::read(&file).map_err(unreadable)?;
        // Length-prefixed, so moving bytes between the two files changes the hash.
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// Decides whether `candidate` may run. Called by the loader after the manifest and the entry
/// point fence passed, before the process starts.
///
/// # Errors
/// [`LoadProblem::Untrusted`] or [`LoadProblem::TrustChanged`] for a workspace plugin that is
/// not trusted as it is now.
pub(crate) fn check(
    candidate: &Candidate,
    manifest: &Manifest,
    name: &str,
    trust_file: Option<&Path>,
) -> Result<Trust, (Trust, LoadProblem)> {
    if candidate.source == Source::User {
        return Ok(Trust::Installed);
    }
    let now = fingerprint(&candidate.dir, manifest).map_err(|p| (Trust::Unknown, p))?;
    let file = trust_file.map(TrustFile::read).unwrap_or_default();
    match file.get(&candidate.dir) {
        Some(trusted) if trusted == now => Ok(Trust::Trusted),
        Some(_) => Err((Trust::Changed, LoadProblem::TrustChanged(name.to_owned()))),
        None => Err((Trust::Untrusted, LoadProblem::Untrusted(name.to_owned()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_covers_manifest_and_entry_point() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join(MANIFEST), r#"{"entry":"p.py"}"#).unwrap_or_default();
        std::fs::write(dir.path().join("p.py"), "print(1)").unwrap_or_default();
        let manifest = Manifest::read(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let first = fingerprint(dir.path(), &manifest).unwrap_or_default();
        assert!(
            first.starts_with("sha256:") && first.len() == 7 + 64,
            "{first}"
        );
        std::fs::write(dir.path().join("p.py"), "print(2)").unwrap_or_default();
        assert_ne!(
            fingerprint(dir.path(), &manifest).unwrap_or_default(),
            first
        );
    }
}
