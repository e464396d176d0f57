//! A real PostgreSQL for the store tests (issue 14 item 5): `HOOKLINE_TEST_DATABASE_URL` when
//! set, else one throwaway cluster per test binary started from the server binaries on the
//! machine (`/usr/lib/postgresql/*/bin`, or `HOOKLINE_PG_BIN`): `initdb` into a temporary
//! directory, `postgres` on a free loopback port, both as `nobody` when the tests run as root.
//!
//! The cluster is cleaned up on exit by a watchdog shell that owns its own process group: it
//! polls the test process and, once it is gone (passed, panicked or killed), stops the
//! postmaster, removes the directory and kills its whole process group. A test that cannot get
//! a database fails with a message saying how to provide one; nothing here skips.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The variable naming an existing database to use instead of a throwaway cluster.
pub(crate) const URL_ENV: &str = "HOOKLINE_TEST_DATABASE_URL";
/// How long a cluster may take to start.
const START_DEADLINE: Duration = Duration::from_secs(60);
/// The unprivileged user the cluster runs as when the tests run as root.
const NOBODY: u32 = 65534;

static URL: OnceLock<Result<String, String>> = OnceLock::new();

/// The database URL for this test binary, starting the cluster on first use.
///
/// # Panics
/// When no database can be had, with a message saying how to provide one.
pub(crate) fn database_url() -> String {
    match URL.get_or_init(|| match std::env::var(URL_ENV) {
        Ok(url) if !url.is_empty() => Ok(url),
        _ => start_cluster(),
    }) {
        Ok(url) => url.clone(),
        Err(why) => panic!(
            "these tests need PostgreSQL and none could be had: {why}. Either set {URL_ENV} to a \
             database URL (postgres://user@127.0.0.1:5432/db; the tests create their tables with \
             the migrations), or install the server binaries (Debian: apt-get install -y \
             postgresql; they are looked for in /usr/lib/postgresql/*/bin or $HOOKLINE_PG_BIN)"
        ),
    }
}

fn bin_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("HOOKLINE_PG_BIN") {
        return Ok(dir.into());
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| format!("no /usr/lib/postgresql ({e})"))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no server binaries under /usr/lib/postgresql/*/bin".into())
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// `program` run as `nobody` when we are root, else as ourselves.
fn as_cluster_user(program: &Path) -> Command {
    if is_root() {
        let mut cmd = Command::new("setpriv");
        cmd.arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .arg("--clear-groups")
            .arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn start_cluster() -> Result<String, String> {
    start_cluster_with(&[], |_| Ok(()))
        .map(|port| format!("postgres://postgres@127.0.0.1:{port}/postgres"))
}

/// A throwaway cluster serving TLS with the PEM certificate chain `cert` and key `key` (issue 40
/// item 4); returns its port on 127.0.0.1. Non-TLS connections are still accepted.
pub(crate) fn tls_cluster(cert: &str, key: &str) -> Result<u16, String> {
    let files = |dir: &Path| -> Result<(), String> {
        for (name, text) in [("server.crt", cert), ("server.key", key)] {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("could not write {name}: {e}"))?;
            // PostgreSQL refuses a key others can read.
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| format!("could not restrict {name}: {e}"))?;
            if is_root() {
                std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY))
                    .map_err(|e| format!("could not hand {name} to nobody: {e}"))?;
            }
        }
        Ok(())
    };
    let conf = |dir: &Path| {
        vec![
            "ssl=on".to_owned(),
            format!("ssl_cert_file={}", dir.join("server.crt").display()),
            format!("ssl_key_file={}", dir.join("server.key").display()),
        ]
    };
    start_cluster_with_conf(conf, files)
}

/// Starts a cluster with `-c` settings `conf` gives for its directory, after `setup` wrote what
/// they name into it; returns its port.
fn start_cluster_with(
    conf: &[String],
    setup: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<u16, String> {
    let conf = conf.to_vec();
    start_cluster_with_conf(move |_| conf, setup)
}

fn start_cluster_with_conf(
    conf: impl FnOnce(&Path) -> Vec<String>,
    setup: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<u16, String> {
    let bin = bin_dir()?;
    let dir = tempfile::Builder::new()
        .prefix("hookline-pg-")
        .tempdir()
        .map_err(|e| format!("no temporary directory: {e}"))?
        .keep();
    if is_root() {
        std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY))
            .map_err(|e| format!("could not hand {} to nobody: {e}", dir.display()))?;
    }
    let data = dir.join("data");
    let out = as_cluster_user(&bin.join("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run initdb: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    setup(&dir)?;
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free loopback port: {e}"))?
        .port();
    // The watchdog: runs the postmaster, waits for this process to go, then cleans up.
    let script = r#"
        parent=$1; dir=$2; shift 2
        "$@" >"$dir/postgres.log" 2>&1 &
        pg=$!
        while kill -0 "$parent" 2>/dev/null && kill -0 "$pg" 2>/dev/null; do sleep 0.5; done
        kill -QUIT "$pg" 2>/dev/null
        sleep 1
        rm -rf "$dir"
        kill -KILL 0
    "#;
    let postgres = as_cluster_user(&bin.join("postgres"));
    let mut argv: Vec<String> = std::iter::once(postgres.get_program())
        .chain(postgres.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    argv.extend([
        "-D".into(),
        data.display().to_string(),
        "-p".into(),
        port.to_string(),
        "-k".into(),
        dir.display().to_string(),
        "-c".into(),
        "listen_addresses=127.0.0.1".into(),
        "-c".into(),
        "max_connections=200".into(),
    ]);
    for setting in conf(&dir) {
        argv.extend(["-c".into(), setting]);
    }
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("hookline-pg-watchdog")
        .arg(std::process::id().to_string())
        .arg(&dir)
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("could not start postgres: {e}"))?;
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ready {
            return Ok(port);
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("postgres.log")).unwrap_or_default();
            return Err(format!(
                "postgres did not accept connections within {START_DEADLINE:?}: {log}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
