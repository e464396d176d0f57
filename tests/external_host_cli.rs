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
    support::copy_dir(
        &repo().join("examples/plugins/house-rules"),
        &plugins.path().join("house-rules"),
    );
    let empty = tempfile::tempdir().unwrap();
    let out = hookline(&[
        "run",
        "--user-dir",
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
        "--user-dir",
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
        "--user-dir",
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
    let out = hookline(&["run", "--user-dir", "/nonexistent/plugins"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a directory"));
}

// Issue 15 defect 4: `run` loads plugins as `hooks` does, the trust file included.
#[test]
fn run_loads_a_workspace_plugin_once_hooks_trust_trusted_it() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let house = workspace.path().join(".hookline/plugins/house-rules");
    support::copy_dir(&repo().join("examples/plugins/house-rules"), &house);
    let with_home = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hookline"))
            .args(args)
            .env("HOOKLINE_HOME", home.path())
            .output()
            .unwrap()
    };
    let ws = path(workspace.path());
    let trusted = with_home(&["hooks", "trust", "house-rules", "--workspace", ws]);
    assert!(trusted.status.success(), "{trusted:?}");
    let out = with_home(&["run", "--workspace", ws]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("not trusted"), "{text}");
    assert!(
        text.contains("hook on_prompt: changed by house-rules"),
        "{text}"
    );
}

fn house_rules_in(plugins: &Path) {
    let house = plugins.join("house-rules");
    support::copy_dir(&repo().join("examples/plugins/house-rules"), &house);
}

// Issue 15: a plugin's stderr is visible from the CLI with --verbose, prefixed with its name.
#[test]
fn run_verbose_shows_plugin_stderr_prefixed_with_its_name() {
    let plugins = tempfile::tempdir().unwrap();
    house_rules_in(plugins.path());
    let empty = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--user-dir",
        path(plugins.path()),
        "--workspace",
        path(empty.path()),
    ];
    let quiet = hookline(&args);
    assert!(quiet.status.success());
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("[house-rules]"));
    let loud = hookline(&[&args[..], &["--verbose"]].concat());
    let stderr = String::from_utf8_lossy(&loud.stderr);
    assert!(loud.status.success(), "{stderr}");
    assert!(
        stderr.contains("[house-rules] session s1 started in "),
        "{stderr}"
    );
}

// Issue 15: `hooks list` with nothing found says where it looked.
#[test]
fn hooks_list_with_nothing_found_says_where_it_looked() {
    let (user, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = [
        "hooks",
        "list",
        "--user-dir",
        path(user.path()),
        "--workspace",
    ];
    let out = hookline(&[&args[..], &[path(workspace.path())]].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    let expected = format!(
        "No plugins found in {} and {}.",
        user.path().display(),
        workspace.path().join(".hookline/plugins").display()
    );
    assert_eq!(text.trim(), expected);
}

// Issue 15: a run without a scenario workspace leaves no `hookline-run-<pid>` directory behind.
#[test]
fn run_without_a_scenario_workspace_removes_its_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["run", "--workspace", path(tmp.path())])
        .env("HOOKLINE_HOME", "/nonexistent/hookline-home")
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with("hookline-run-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
