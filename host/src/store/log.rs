//! `Log<T>`: an append-only file of framed JSON records, synced on every append.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::StoreError;
use super::frame::{encode_frame, read_frame, FrameRead, TornReason, HEADER_BYTES};
use super::MAX_RECORD_BYTES;

/// An append-only log of framed records (length, CRC-32C, JSON payload) in one file.
///
/// One `Log` per file at a time: the store does not lock files, so two writers on one file
/// would interleave frames.
pub struct Log<T> {
    path: PathBuf,
    file: File,
    /// The byte offset just after the last good frame: where the next append goes.
    end: u64,
    /// Set when a failed append could not be undone; see [`StoreError::Poisoned`].
    poisoned: bool,
    _records: PhantomData<fn(T) -> T>,
}

/// What [`Log::open`] found: the valid records, and the torn tail it cut off, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovery<T> {
    /// Every valid record, in append order.
    pub records: Vec<T>,
    /// The torn or corrupt tail that was detected and truncated, if there was one.
    pub torn: Option<TornTail>,
}

/// A torn or corrupt tail found (and cut off) when a log was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Where the first bad frame started; the file now ends here.
    pub offset: u64,
    /// How many bytes were cut off.
    pub dropped_bytes: u64,
    /// The log's file.
    pub path: PathBuf,
    /// What was wrong with the first bad frame.
    pub reason: TornReason,
}

impl fmt::Display for TornTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "The log {} ended in a torn or corrupt record at byte {} ({}); its last {} bytes were \
             cut off and every record before them was kept.",
            self.path.display(),
            self.offset,
            self.reason,
            self.dropped_bytes
        )
    }
}

impl<T: Serialize + DeserializeOwned> Log<T> {
    /// Opens the log at `path`, creating it (but not its directory) if it does not exist.
    ///
    /// Reads every valid record. The first torn or corrupt frame ends the log: it and every
    /// byte after it are truncated (synced) and reported in [`Recovery::torn`]. Never panics on
    /// any file content, and never allocates more than one frame's cap for a record.
    ///
    /// # Errors
    /// [`StoreError::Io`] if the file cannot be opened, read, truncated or synced;
    /// [`StoreError::Decode`] if a frame with a valid checksum is not a `T` (the file is left
    /// untouched).
    pub fn open(path: &Path) -> Result<(Log<T>, Recovery<T>), StoreError> {
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io(path, "open", e))?;
        if !existed {
            sync_parent(path)?;
        }
        remove_stale_rewrite(path);
        let Scan {
            records,
            end,
            reason,
            ..
        } = read_records(path, &file)?;
        let torn = repair(path, &file, end, reason)?;
        let log = Log {
            path: path.to_path_buf(),
            file,
            end,
            poisoned: false,
            _records: PhantomData,
        };
        Ok((log, Recovery { records, torn }))
    }

    /// Writes one record and syncs it to disk before returning.
    ///
    /// # Errors
    /// [`StoreError::Encode`], [`StoreError::RecordTooLarge`], or [`StoreError::Io`] if the
    /// write or sync failed (the partial frame is then cut off again, so the log stays valid).
    pub fn append(&mut self, record: &T) -> Result<(), StoreError> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Writes several records with one write and one sync. Either all are appended or, on an
    /// error, none of them is kept.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_all(&mut self, records: &[T]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let bytes = self.encode(records)?;
        self.write_at_end(&bytes)
    }

    /// Replaces the whole log with `records`, atomically: a temporary file is written and
    /// synced, renamed over the log, and the directory synced. A crash leaves either the old
    /// log or the new one, never a mix.
    ///
    /// # Errors
    /// As [`Log::append`]; on an error before the rename the old log is untouched.
    pub fn rewrite(&mut self, records: &[T]) -> Result<(), StoreError> {
        let bytes = self.encode(records)?;
        let tmp = rewrite_path(&self.path);
        if let Err(e) = write_new_file(&tmp, &bytes) {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        fs::rename(&tmp, &self.path).map_err(|e| StoreError::io(&self.path, "replace", e))?;
        // From here the file on disk is the new log; the old handle must not be written again.
        self.poisoned = true;
        sync_parent(&self.path)?;
        self.file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(|e| StoreError::io(&self.path, "reopen", e))?;
        self.end = bytes.len() as u64;
        self.poisoned = false;
        Ok(())
    }

    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn encode(&self, records: &[T]) -> Result<Vec<u8>, StoreError> {
        encode_records(&self.path, records)
    }

    fn write_at_end(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned {
                path: self.path.clone(),
            });
        }
        let written = self
            .file
            .seek(SeekFrom::Start(self.end))
            .and_then(|_| self.file.write_all(bytes))
            .and_then(|()| self.file.sync_data());
        match written {
            Ok(()) => {
                self.end += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Cut the partial frame off so later appends never land behind garbage (which
                // the next open would truncate, losing them).
                if self
                    .file
                    .set_len(self.end)
                    .and_then(|()| self.file.sync_data())
                    .is_err()
                {
                    self.poisoned = true;
                }
                Err(StoreError::io(&self.path, "append to", e))
            }
        }
    }
}

impl<T> fmt::Debug for Log<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Log")
            .field("path", &self.path)
            .field("end", &self.end)
            .finish()
    }
}

/// Encodes `records` as frames for the log at `path` (named in errors).
///
/// # Errors
/// [`StoreError::Encode`] or [`StoreError::RecordTooLarge`].
pub(crate) fn encode_records<T: Serialize>(
    path: &Path,
    records: &[T],
) -> Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::new();
    for record in records {
        let payload = serde_json::to_vec(record).map_err(|source| StoreError::Encode {
            path: path.to_path_buf(),
            source,
        })?;
        if payload.len() > MAX_RECORD_BYTES {
            return Err(StoreError::RecordTooLarge {
                path: path.to_path_buf(),
                size: payload.len(),
                max: MAX_RECORD_BYTES,
            });
        }
        encode_frame(&payload, &mut bytes);
    }
    Ok(bytes)
}

/// What reading a log from the start found.
pub(crate) struct Scan<T> {
    /// Every valid record.
    pub(crate) records: Vec<T>,
    /// Where each record's frame ends (the offset just after it), one per record.
    pub(crate) ends: Vec<u64>,
    /// The offset where the valid frames end.
    pub(crate) end: u64,
    /// Why the bytes after `end` are bad, if there are any.
    pub(crate) reason: Option<TornReason>,
}

/// Reads the log at `path` without changing it (no repair, no creation): every valid record up
/// to the first torn frame. `None` when the file does not exist.
///
/// # Errors
/// [`StoreError::Io`] if the file cannot be read; [`StoreError::Decode`] as [`Log::open`].
pub(crate) fn scan<T: DeserializeOwned>(path: &Path) -> Result<Option<Scan<T>>, StoreError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(path, "open", e)),
    };
    read_records(path, &file).map(Some)
}

/// Reads the records framed in `bytes` (a log's content held in memory; `path` names it in
/// errors) as [`scan`] reads a file.
///
/// # Errors
/// [`StoreError::Decode`] as [`Log::open`].
pub(crate) fn scan_bytes<T: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<Scan<T>, StoreError> {
    read_frames(path, bytes, bytes.len() as u64)
}

/// Reads valid records from the start, up to the end or the first bad frame.
fn read_records<T: DeserializeOwned>(path: &Path, file: &File) -> Result<Scan<T>, StoreError> {
    let len = file
        .metadata()
        .map_err(|e| StoreError::io(path, "read metadata of", e))?
        .len();
    read_frames(path, BufReader::new(file), len)
}

/// Reads valid frames of `len` bytes from `reader`, up to the end or the first bad frame.
fn read_frames<T: DeserializeOwned>(
    path: &Path,
    reader: impl std::io::Read,
    len: u64,
) -> Result<Scan<T>, StoreError> {
    let mut records = Vec::new();
    let frames = walk_frames(path, reader, len, |record| {
        records.push(record);
        Ok(())
    })?;
    Ok(Scan {
        records,
        ends: frames.ends,
        end: frames.end,
        reason: frames.reason,
    })
}

/// Where a log's valid frames end, without their records ([`frames_of`]).
pub(crate) struct Frames {
    /// Where each frame ends (the offset just after it).
    pub(crate) ends: Vec<u64>,
    /// The offset where the valid frames end.
    pub(crate) end: u64,
    /// Why the bytes after `end` are bad, if there are any.
    pub(crate) reason: Option<TornReason>,
    /// The file's length.
    pub(crate) len: u64,
}

/// Checks every frame of the log at `path` (length and checksum) one frame at a time, without
/// decoding or keeping any: where they end. An empty log when the file does not exist.
///
/// # Errors
/// [`StoreError::Io`] if the file cannot be read.
pub(crate) fn frames_of(path: &Path) -> Result<Frames, StoreError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Frames {
                ends: Vec::new(),
                end: 0,
                reason: None,
                len: 0,
            })
        }
        Err(e) => return Err(StoreError::io(path, "open", e)),
    };
    let len = file
        .metadata()
        .map_err(|e| StoreError::io(path, "read metadata of", e))?
        .len();
    walk(path, BufReader::new(file), len, |_, _| Ok(()))
}

/// Decodes the frames of `reader`'s first `len` bytes one at a time, handing each record to
/// `each` (none is kept here). Every frame up to `len` must be valid (the caller checked them
/// with [`frames_of`]): a bad one, or a file shorter than `len`, is an error.
///
/// # Errors
/// [`StoreError::Io`] when the bytes cannot be read or are no longer valid frames;
/// [`StoreError::Decode`] as [`Log::open`]; whatever `each` returns.
pub(crate) fn fold_frames<T: DeserializeOwned>(
    path: &Path,
    reader: impl std::io::Read,
    len: u64,
    each: impl FnMut(T) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let frames = walk_frames(path, reader, len, each)?;
    match frames.reason {
        None => Ok(()),
        Some(reason) => Err(StoreError::io(
            path,
            "read",
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the frame at byte {} changed while read: {reason}",
                    frames.end
                ),
            ),
        )),
    }
}

/// [`walk`], decoding each payload as a `T` for `each`.
fn walk_frames<T: DeserializeOwned>(
    path: &Path,
    reader: impl std::io::Read,
    len: u64,
    mut each: impl FnMut(T) -> Result<(), StoreError>,
) -> Result<Frames, StoreError> {
    walk(path, reader, len, |offset, payload| {
        let record = serde_json::from_slice(payload).map_err(|source| StoreError::Decode {
            path: path.to_path_buf(),
            offset,
            source,
        })?;
        each(record)
    })
}

/// Reads valid frames of `len` bytes from `reader`, up to the end or the first bad frame,
/// handing each payload (and its frame's offset) to `each` and keeping none.
fn walk(
    path: &Path,
    mut reader: impl std::io::Read,
    len: u64,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), StoreError>,
) -> Result<Frames, StoreError> {
    let (mut ends, mut offset) = (Vec::new(), 0u64);
    loop {
        let next =
            read_frame(&mut reader, len - offset).map_err(|e| StoreError::io(path, "read", e))?;
        match next {
            FrameRead::End => {
                return Ok(Frames {
                    ends,
                    end: offset,
                    reason: None,
                    len,
                })
            }
            FrameRead::Torn(reason) => {
                return Ok(Frames {
                    ends,
                    end: offset,
                    reason: Some(reason),
                    len,
                })
            }
            FrameRead::Payload(payload) => {
                each(offset, &payload)?;
                offset += HEADER_BYTES + payload.len() as u64;
                ends.push(offset);
            }
        }
    }
}

/// Truncates a torn tail (syncing the cut) and describes it.
fn repair(
    path: &Path,
    file: &File,
    end: u64,
    reason: Option<TornReason>,
) -> Result<Option<TornTail>, StoreError> {
    let Some(reason) = reason else {
        return Ok(None);
    };
    let len = file
        .metadata()
        .map_err(|e| StoreError::io(path, "read metadata of", e))?
        .len();
    file.set_len(end)
        .map_err(|e| StoreError::io(path, "truncate", e))?;
    file.sync_all()
        .map_err(|e| StoreError::io(path, "sync", e))?;
    let torn = TornTail {
        offset: end,
        dropped_bytes: len - end,
        path: path.to_path_buf(),
        reason,
    };
    tracing::warn!("{torn}");
    Ok(Some(torn))
}

pub(crate) fn write_new_file(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut file = File::create(path).map_err(|e| StoreError::io(path, "create", e))?;
    file.write_all(bytes)
        .map_err(|e| StoreError::io(path, "write", e))?;
    file.sync_all().map_err(|e| StoreError::io(path, "sync", e))
}

pub(crate) fn rewrite_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".rewrite");
    path.with_file_name(name)
}

/// A rewrite interrupted before its rename leaves a temporary file; the log itself is intact.
pub(crate) fn remove_stale_rewrite(path: &Path) {
    match fs::remove_file(rewrite_path(path)) {
        Ok(()) => tracing::info!("removed an interrupted rewrite of {}", path.display()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(
            "could not remove an interrupted rewrite of {}: {e}",
            path.display()
        ),
    }
}

/// Syncs the directory holding `path`, so a created or renamed entry survives a crash.
pub(crate) fn sync_parent(path: &Path) -> Result<(), StoreError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    sync_dir(parent)
}

/// Syncs a directory's entries. On platforms that cannot open directories this is skipped.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        let handle = File::open(dir).map_err(|e| StoreError::io(dir, "open directory", e))?;
        handle
            .sync_all()
            .map_err(|e| StoreError::io(dir, "sync directory", e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
