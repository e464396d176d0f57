//! `hookline new plugin NAME --lang python|node|rust` (issue 15): the directory it writes passes
//! `hookline hooks check` and `hookline run` loads it; copies of the kits stay the kits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::repo;

fn hookline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(args)
        .env("HOOKLINE_HOME", "/nonexistent/hookline-home")
        .output()
        .unwrap()
}

fn path(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

fn new_plugin_checks_and_runs(lang: &str) {
    let root = tempfile::tempdir().unwrap();
    let name = format!("my-{lang}");
    let made = hookline(&[
        "new",
        "plugin",
        &name,
        "--lang",
        lang,
        "--dir",
        path(root.path()),
    ]);
    assert!(made.status.success(), "{made:?}");
    assert!(root.path().join(&name).join("README.md").is_file());
    let dirs = [
        "--user-dir",
        path(root.path()),
        "--workspace",
        path(root.path()),
    ];
    let check = hookline(&[&["hooks", "check"][..], &dirs].concat());
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{text}");
    assert!(
        text.contains("1 plugin(s) loaded, 0 with problems."),
        "{text}"
    );
    let run = hookline(&[&["run", "--verbose"][..], &dirs].concat());
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The demo calls word_count, which the new plugin provides; its prompt hook appends.
    assert!(text.contains("ran word_count: ok"), "{text}");
    assert!(text.contains("Keep answers short."), "{text}");
    assert!(text.ends_with("0 notes.\n"), "{text}");
    let again = hookline(&[
        "new",
        "plugin",
        &name,
        "--lang",
        lang,
        "--dir",
        path(root.path()),
    ]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "an existing directory is not overwritten"
    );
}

#[test]
fn a_new_python_plugin_passes_check_and_runs() {
    new_plugin_checks_and_runs("python");
}

#[test]
fn a_new_node_plugin_passes_check_and_runs() {
    new_plugin_checks_and_runs("node");
}

#[test]
fn a_new_rust_plugin_is_a_cargo_project_on_the_rust_kit() {
    let root = tempfile::tempdir().unwrap();
    let made = hookline(&[
        "new",
        "plugin",
        "guard.rs",
        "--lang",
        "rust",
        "--dir",
        path(root.path()),
    ]);
    assert!(made.status.success(), "{made:?}");
    let dir = root.path().join("guard.rs");
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let kit = repo().join("sdk/rust").canonicalize().unwrap();
    assert!(cargo.contains(&format!(
        "hookline-plugin = {{ path = \"{}\" }}",
        kit.display()
    )));
    assert!(cargo.contains("name = \"guard_rs\""), "{cargo}");
    let manifest = std::fs::read_to_string(dir.join("plugin.json")).unwrap();
    assert!(
        manifest.contains("\"entry\": \"bin/guard_rs\""),
        "{manifest}"
    );
    // The source is the template the kit compiles as its `new-plugin-template` example.
    let template =
        std::fs::read_to_string(repo().join("cli/src/commands/templates/main.rs")).unwrap();
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    assert_eq!(main, template.replace("{{name}}", "guard.rs"));
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("cargo build --release"), "{readme}");
}

#[test]
fn a_bad_name_or_language_is_bad_input() {
    let root = tempfile::tempdir().unwrap();
    let bad = hookline(&[
        "new",
        "plugin",
        "hookline",
        "--lang",
        "python",
        "--dir",
        path(root.path()),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("reserved"));
    let bad = hookline(&["new", "plugin", "x", "--lang", "cobol"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_example_plugins_copy_of_the_python_kit_is_the_kit() {
    let kit = repo().join("sdk/python/src/hookline_plugin/__init__.py");
    let copy = repo().join("examples/plugins/house-rules/hookline_plugin/__init__.py");
    assert_eq!(
        std::fs::read_to_string(copy).unwrap(),
        std::fs::read_to_string(kit).unwrap(),
        "copy sdk/python/src/hookline_plugin into examples/plugins/house-rules/"
    );
}
