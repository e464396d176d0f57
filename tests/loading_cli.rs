//! `hookline hooks list/info/check/enable/disable` on the shipped examples and on a broken
//! plugin directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::{Command, Output};

fn hooks(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookline"))
        .arg("hooks")
        .args(args)
        .arg("--plugins")
        .arg(dir)
        .arg("--workspace")
        .arg(dir)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn list_info_and_check_on_the_examples() {
    let root = tempfile::tempdir().unwrap();
    support::examples(root.path());
    let list = hooks(root.path(), &["list"]);
    assert!(list.status.success());
    let text = stdout(&list);
    let rows: Vec<&str> = text.lines().collect();
    assert!(
        rows[0].starts_with("NAME") && rows[0].contains("RAW HOOKS"),
        "{text}"
    );
    assert!(
        rows[1].starts_with("house-rules")
            && rows[1].contains("word_count")
            && rows[1].ends_with("loaded"),
        "{text}"
    );
    assert!(
        rows[2].starts_with("rust-guard") && rows[2].contains("rewrite_prompt"),
        "{text}"
    );
    let info = stdout(&hooks(root.path(), &["info", "house-rules"]));
    assert!(info.contains(
        "warning: Plugin 'house-rules' subscribes to 'command:nwe', which the gateway never emits."
    ), "{info}");
    let check = hooks(root.path(), &["check"]);
    assert!(check.status.success(), "{}", stdout(&check));
    let json: serde_json::Value =
        serde_json::from_slice(&hooks(root.path(), &["list", "--json"]).stdout).unwrap();
    assert_eq!(json[1]["name"], "rust-guard");
    // camelCase like every other field of hookline's JSON (issue 46 item 4); the protocol's
    // own hello line keeps `raw_hooks`.
    assert_eq!(
        json[1]["hello"]["rawHooks"],
        serde_json::json!(["rewrite_prompt"])
    );
    assert!(json[1]["hello"].get("raw_hooks").is_none(), "{json}");
}

/// `--plugins DIR` is the plugin directory of `hooks` as of every command; `--user-dir`, its old
/// spelling, still works with a one-line deprecation on stderr (issue 46 item 4).
#[test]
fn the_old_user_dir_spelling_still_works_and_says_it_is_deprecated() {
    let root = tempfile::tempdir().unwrap();
    support::examples(root.path());
    let old = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["hooks", "list", "--user-dir"])
        .arg(root.path())
        .arg("--workspace")
        .arg(root.path())
        .output()
        .unwrap();
    assert!(old.status.success(), "{old:?}");
    assert_eq!(stdout(&old), stdout(&hooks(root.path(), &["list"])));
    let stderr = String::from_utf8_lossy(&old.stderr);
    let dir = root.path().display();
    assert_eq!(
        stderr,
        format!("hookline hooks: `--user-dir {dir}` is deprecated; use `--plugins {dir}`.\n")
    );
    // Neither `hooks --help` nor the top level hides a subcommand: `trust` is listed.
    let help = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .arg("--help")
        .output()
        .unwrap();
    let help = stdout(&help);
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("hooks"))
        .unwrap();
    assert!(line.contains("trust"), "{help}");
    let help = stdout(
        &Command::new(env!("CARGO_BIN_EXE_hookline"))
            .args(["hooks", "--help"])
            .output()
            .unwrap(),
    );
    assert!(
        help.contains("trust") && !help.contains("--user-dir"),
        "{help}"
    );
}

#[test]
fn check_on_a_broken_directory_reports_it_and_exits_non_zero() {
    let root = tempfile::tempdir().unwrap();
    support::examples(root.path());
    std::fs::create_dir(root.path().join("broken")).unwrap();
    std::fs::write(root.path().join("broken/plugin.json"), "{not json").unwrap();
    let check = hooks(root.path(), &["check"]);
    assert_eq!(check.status.code(), Some(1));
    let text = stdout(&check);
    assert!(
        text.contains(&format!(
            "Plugin directory '{}' was skipped: its plugin.json is invalid",
            root.path().join("broken").display()
        )),
        "{text}"
    );
    let list = stdout(&hooks(root.path(), &["list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("broken") && l.contains("skipped: its plugin.json is invalid")),
        "{list}"
    );
}

#[test]
fn disable_and_enable_write_the_manifest_and_unknown_names_are_bad_input() {
    let root = tempfile::tempdir().unwrap();
    support::examples(root.path());
    assert!(hooks(root.path(), &["disable", "house-rules"])
        .status
        .success());
    let manifest = std::fs::read_to_string(root.path().join("house-rules/plugin.json")).unwrap();
    assert!(
        manifest.contains("\"enabled\": false")
            && manifest.contains("\"interpreter\": \"python3\"")
    );
    let list = stdout(&hooks(root.path(), &["list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("house-rules") && l.ends_with("disabled")),
        "{list}"
    );
    assert!(hooks(root.path(), &["enable", "house-rules"])
        .status
        .success());
    let list = stdout(&hooks(root.path(), &["list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("house-rules") && l.ends_with("loaded")),
        "{list}"
    );
    assert_eq!(hooks(root.path(), &["info", "nope"]).status.code(), Some(2));
    assert_eq!(
        hooks(root.path(), &["enable", "nope"]).status.code(),
        Some(2)
    );
}
