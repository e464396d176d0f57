//! Recognising the running host binary among entry points by what the file is, not by what it is
//! called (SPEC L3, issue 15 defect 5): the same file (device and inode: a hard link, a symlink
//! resolved earlier) or the same content (a copy under another name, by SHA-256).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// What identifies the running host binary; computed once, its hash only when first needed.
struct HostBinary {
    path: PathBuf,
    metadata: std::fs::Metadata,
    hash: OnceLock<Option<[u8; 32]>>,
}

fn host_binary() -> Option<&'static HostBinary> {
    static HOST: OnceLock<Option<HostBinary>> = OnceLock::new();
    HOST.get_or_init(|| {
        let path = std::env::current_exe().ok()?.canonicalize().ok()?;
        let metadata = std::fs::metadata(&path).ok()?;
        Some(HostBinary {
            path,
            metadata,
            hash: OnceLock::new(),
        })
    })
    .as_ref()
}

/// Whether `file` is the running host binary: the same file, or a file with the same bytes.
/// A file that cannot be read is not the host (the fence and the start report it).
pub(crate) fn is_host_binary(file: &Path) -> bool {
    let Some(host) = host_binary() else {
        return false;
    };
    let Ok(metadata) = std::fs::metadata(file) else {
        return false;
    };
    if same_file(&host.metadata, &metadata) {
        return true;
    }
    // Only a file of the host's size can hold the host's bytes: hash nothing else.
    if metadata.len() != host.metadata.len() {
        return false;
    }
    let host_hash = host.hash.get_or_init(|| sha256(&host.path).ok());
    host_hash.is_some_and(|expected| sha256(file).is_ok_and(|found| found == expected))
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    // Without inode numbers the content hash decides.
    false
}

fn sha256(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            return Ok(hasher.finalize().into());
        }
        hasher.update(&buffer[..read]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_binary_is_the_host_and_another_file_is_not() {
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        assert!(is_host_binary(&exe));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let other = dir.path().join("other");
        std::fs::write(&other, b"#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(!is_host_binary(&other));
        assert!(!is_host_binary(&dir.path().join("missing")));
    }
}
