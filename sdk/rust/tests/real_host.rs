//! A plugin built with the kit (`kit/main.rs`), run by the real `hookline` binary over the
//! scenario every kit's tests share (`sdk/tests/scenario.json`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The host binary: `$HOOKLINE_BIN`, else the one `cargo test --workspace` built beside this
/// package's binaries: the kit's test plugin sits in the same profile directory, wherever cargo
/// put it (`CARGO_TARGET_DIR` set or not).
fn hookline_bin() -> PathBuf {
    let path = std::env::var_os("HOOKLINE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_BIN_EXE_hookline-plugin-kit"))
                .with_file_name(format!("hookline{}", std::env::consts::EXE_SUFFIX))
        });
    assert!(
        path.is_file(),
        "no hookline binary at {}: run `cargo build --bin hookline` first",
        path.display()
    );
    path
}

/// `<root>/plugins/kit` holding the kit's test plugin as `bin/kit`.
fn plugin_dir(root: &Path) -> PathBuf {
    let dir = root.join("plugins/kit");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_hookline-plugin-kit"),
        dir.join("bin/kit"),
    )
    .unwrap();
    std::fs::write(dir.join("plugin.json"), r#"{"entry": "bin/kit"}"#).unwrap();
    dir
}

fn hookline(root: &Path, args: &[&str]) -> Output {
    Command::new(hookline_bin())
        .args(args)
        .arg("--plugins")
        .arg(root.join("plugins"))
        .arg("--workspace")
        .arg(root)
        .current_dir(root)
        .output()
        .unwrap()
}

#[test]
fn hooks_check_passes() {
    let root = tempfile_dir();
    plugin_dir(root.path());
    let out = hookline(root.path(), &["hooks", "check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("1 plugin(s) loaded, 0 with problems."),
        "{text}"
    );
}

#[test]
fn run_calls_hooks_raw_hooks_events_and_tools() {
    let root = tempfile_dir();
    plugin_dir(root.path());
    let scenario = repo().join("sdk/tests/scenario.json");
    let out = hookline(
        root.path(),
        &["run", scenario.to_str().unwrap(), "--json", "--verbose"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = report["events"].as_array().unwrap();
    let of = |kind: &str, field: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["event"] == kind)
            .map(|e| e[field].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(of("user", "text"), ["hello [kit]", "again [kit]"]);
    assert!(of("system-text", "text")
        .iter()
        .all(|t| t.ends_with("\nKit rules.")));
    assert_eq!(
        of("tool-run", "text"),
        ["hi from s1 allow-workspace", "ho from s1 ask-all"]
    );
    let notes = report["notes"].to_string();
    assert!(
        !notes.contains("skipped") && !notes.contains("broke"),
        "{notes}"
    );
    assert!(stderr.contains("[kit] kit saw command:new"), "{stderr}");
}

fn tempfile_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}
