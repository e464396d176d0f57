//! The one wasmtime [`Engine`] of the process, its epoch ticker, and the compile cache
//! (docs/wasm.md "Compiled modules are cached").
//!
//! Timeouts are epoch deadlines: a thread bumps the engine's epoch every [`TICK`], and a call is
//! given `ceil(timeout / TICK) + 1` ticks, so a guest still running at its timeout traps with
//! `Trap::Interrupt` within one tick of it. One thread for the whole process, whatever the number
//! of plugins and calls; no timer per call.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine, Module};

/// How often the epoch advances.
pub const TICK: Duration = Duration::from_millis(5);

/// The engine every WebAssembly plugin is compiled for, with its ticker started.
///
/// # Errors
/// The engine's configuration error, as text (a host that cannot run guests at all).
pub(crate) fn engine() -> Result<&'static Engine, String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.epoch_interruption(true);
            // A guest's own stack; a deeper recursion traps (a stack overflow), it never reaches
            // the host's stack.
            config.max_wasm_stack(512 * 1024);
            let engine = Engine::new(&config).map_err(|error| error.to_string())?;
            let ticking = engine.clone();
            std::thread::Builder::new()
                .name("hookline-wasm-epoch".into())
                .spawn(move || loop {
                    std::thread::sleep(TICK);
                    ticking.increment_epoch();
                })
                .map_err(|error| format!("the epoch thread could not start: {error}"))?;
            Ok(engine)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The ticks that let a call run for `limit`, at least two.
pub(crate) fn deadline_ticks(limit: Duration) -> u64 {
    let tick = TICK.as_nanos().max(1);
    u64::try_from(limit.as_nanos().div_ceil(tick))
        .unwrap_or(u64::MAX)
        .saturating_add(1)
        .max(2)
}

/// The default cache directory: `$HOOKLINE_HOME/cache/wasm`, else `~/.hookline/cache/wasm`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("HOOKLINE_HOME") {
        return Some(PathBuf::from(home).join("cache").join("wasm"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".hookline/cache/wasm"))
}

/// How a module was obtained, for logs and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiled {
    /// Mapped from the cache.
    FromCache,
    /// Compiled now (and written to the cache when there is one).
    Now,
}

/// What the engine compiles: a core [`Module`] or a [`Component`], each with its compiled form.
pub(crate) trait Artifact: Sized {
    /// Compiles `bytes`.
    fn compile(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Self>;
    /// The compiled form, for the cache.
    fn serialize(&self) -> wasmtime::Result<Vec<u8>>;
    /// A compiled form read back from the cache (see [`from_cache`] for why it is sound).
    fn from_compiled(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Self>;
}

impl Artifact for Module {
    fn compile(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Self> {
        Module::new(engine, bytes)
    }

    fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        Module::serialize(self)
    }

    #[allow(unsafe_code)]
    fn from_compiled(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Self> {
        // SAFETY: only ever called by `from_cache` on an entry `write_entry` wrote; see there.
        unsafe { Module::deserialize(engine, bytes) }
    }
}

impl Artifact for Component {
    fn compile(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Self> {
        Component::new(engine, bytes)
    }

    fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        Component::serialize(self)
    }

    #[allow(unsafe_code)]
    fn from_compiled(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Self> {
        // SAFETY: only ever called by `from_cache` on an entry `write_entry` wrote; see there.
        unsafe { Component::deserialize(engine, bytes) }
    }
}

/// The module or component of `bytes`: from the cache in `cache_dir` when an entry for these
/// bytes and this engine is there, else compiled (and the entry written; a cache that cannot be
/// written only costs the next start a compile).
///
/// # Errors
/// The compiler's error, as text, for bytes that are not valid WebAssembly.
pub(crate) fn compile<A: Artifact>(
    engine: &Engine,
    bytes: &[u8],
    cache_dir: Option<&Path>,
) -> Result<(A, Compiled), String> {
    let entry = cache_dir.map(|dir| dir.join(format!("{}.cwasm", key(engine, bytes))));
    if let Some(artifact) = entry.as_deref().and_then(|path| from_cache(engine, path)) {
        return Ok((artifact, Compiled::FromCache));
    }
    let artifact = A::compile(engine, bytes).map_err(|error| format!("{error:#}"))?;
    if let Some(path) = entry {
        if let Err(error) = write_entry(&artifact, &path) {
            tracing::debug!(path = %path.display(), %error, "the compiled form was not cached");
        }
    }
    Ok((artifact, Compiled::Now))
}

/// The cache key: the SHA-256 of the module's bytes and the engine's compatibility hash (a
/// wasmtime upgrade or another configuration never maps an entry it did not write).
fn key(engine: &Engine, bytes: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut compat = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut compat);
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}-{:016x}", compat.finish())
}

/// Reads a cache entry into memory; `None` when there is none or it cannot be used (it is
/// then compiled again and rewritten). The entry is read, not mapped: a mapped file that
/// another process truncates would fault the host (SIGBUS), a read one cannot.
fn from_cache<A: Artifact>(engine: &Engine, path: &Path) -> Option<A> {
    let bytes = std::fs::read(path).ok()?;
    // Why reading it back is sound: `deserialize` trusts that the bytes are a module (or
    // component) this wasmtime serialized. The
    // entry is written only by `write_entry` below, in the operator's own cache directory
    // (created 0700), under a name that is the SHA-256 of the module's bytes and the engine's
    // compatibility hash, and renamed into place whole; wasmtime itself checks the header and
    // the engine compatibility and refuses anything else with an error (handled: compiled
    // again). Someone who can write the operator's cache directory can already replace the host.
    match A::from_compiled(engine, &bytes) {
        Ok(artifact) => Some(artifact),
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "a cache entry could not be used");
            None
        }
    }
}

/// Writes `artifact`'s compiled form to `path`, whole or not at all (a temporary file renamed).
fn write_entry<A: Artifact>(artifact: &A, path: &Path) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let bytes = artifact.serialize().map_err(std::io::Error::other)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(&bytes)?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_covers_the_limit_and_one_tick_more() {
        assert_eq!(deadline_ticks(Duration::ZERO), 2);
        assert_eq!(deadline_ticks(TICK), 2);
        assert_eq!(deadline_ticks(Duration::from_secs(1)), 201);
        assert_eq!(deadline_ticks(Duration::from_millis(1001)), 202);
        assert_eq!(deadline_ticks(Duration::MAX), u64::MAX);
    }
}
