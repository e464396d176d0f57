//! `hookline run` with plugins on disk: `--plugins`, `--workspace`, `--no-demo-plugins`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Command;

use support::repo;

fn hookline(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(args)
        .env("HOOKLINE_HOME", "/nonexistent/hookline-home")
        .output()
        .unwrap()
}

fn path(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

#[test]
fn run_with_the_python_plugin_on_disk_plays_the_demo_with_it_instead_of_the_demo_plugins() {
    let plugins = tempfile::tempdir().unwrap();
    let house = plugins.path().join("house-rules");
    std::fs::create_dir_all(&house).unwrap();
    for file in ["plugin.json", "plugin.py"] {
        std::fs::copy(
            repo().join("examples/plugins/house-rules").join(file),
            house.join(file),
        )
        .unwrap();
    }
    let empty = tempfile::tempdir().unwrap();
    let out = hookline(&[
        "run",
        "--plugins",
        path(plugins.path()),
        "--workspace",
        path(empty.path()),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "note: Plugin 'house-rules' subscribes to 'command:nwe', which the gateway never emits.",
        "hook on_prompt: changed by house-rules",
        "Use British spelling.",
        "ran word_count: ok",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("operator-tools"), "{text}");
}

#[test]
fn no_demo_plugins_runs_a_scenario_with_no_plugin_at_all() {
    let empty = tempfile::tempdir().unwrap();
    let scenario = empty.path().join("s.json");
    std::fs::write(
        &scenario,
        r#"{"steps": [{"user": "hi", "replies": [{"text": "hello"}]}]}"#,
    )
    .unwrap();
    let out = hookline(&[
        "run",
        path(&scenario),
        "--plugins",
        path(empty.path()),
        "--workspace",
        path(empty.path()),
        "--no-demo-plugins",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("model> hello"), "{text}");
    assert!(
        !text.contains("hook "),
        "no plugin changed anything:\n{text}"
    );
    assert!(!text.contains("note:"), "{text}");
}

#[test]
fn the_demo_scenario_without_its_plugins_names_the_missing_tool() {
    let empty = tempfile::tempdir().unwrap();
    let out = hookline(&[
        "run",
        "--plugins",
        path(empty.path()),
        "--workspace",
        path(empty.path()),
        "--no-demo-plugins",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        error.contains("the tool 'word_count' does not exist"),
        "{error}"
    );
}

#[test]
fn a_plugins_directory_that_does_not_exist_is_bad_input() {
    let out = hookline(&["run", "--plugins", "/nonexistent/plugins"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a directory"));
}
