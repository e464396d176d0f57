//! `hookline new plugin NAME --lang python|node|rust|c|zig` (issues 15 and 36): the directory it
//! writes passes `hookline hooks check` and `hookline run` loads it; copies of the kits stay the
//! kits. A C or Zig plugin's `build.sh` builds a `plugin.wasm` that passes the guest ABI check of
//! `sdk/tests/wasm_abi.py` (where `python3` has PyPI's `ziglang` and `wasmtime`; else the test
//! says so and skips, and fails under `HOOKLINE_REQUIRE_SYSTEM_TESTS=1`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
#[path = "support/system.rs"]
mod system;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

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
        "--plugins",
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
    // The README's promise (issue 46 item 8e): its scenario ends with `/new`, and `--verbose`
    // shows the plugin's `command:new` log line.
    let readme = std::fs::read_to_string(root.path().join(&name).join("README.md")).unwrap();
    let scenario = root.path().join(&name).join("scenario.json");
    let command = format!(
        "hookline run {} --plugins {} --verbose",
        scenario.display(),
        root.path().display()
    );
    assert!(readme.contains(&command), "{readme}");
    let promised = "a new session was asked for from cli";
    assert!(readme.contains(promised), "{readme}");
    let run = hookline(&[&["run", path(&scenario), "--verbose"][..], &dirs].concat());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("[{name}] {promised}")), "{stderr}");
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("ran word_count: ok"),
        "{run:?}"
    );
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

/// `hookline new plugin NAME --lang LANG --dir ROOT`, checked; the plugin's directory.
fn new_wasm_plugin(root: &Path, name: &str, lang: &str) -> std::path::PathBuf {
    let made = hookline(&["new", "plugin", name, "--lang", lang, "--dir", path(root)]);
    assert!(made.status.success(), "{made:?}");
    root.join(name)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What every WebAssembly plugin directory holds, and that its kit files are `sdk/`'s.
fn check_wasm_files(dir: &Path, name: &str, lang: &str, kit: &[&str], source: &str) {
    let manifest: serde_json::Value =
        serde_json::from_str(&read(&dir.join("plugin.json"))).unwrap();
    assert_eq!(manifest["entry"], "plugin.wasm", "{manifest}");
    assert!(manifest.get("interpreter").is_none(), "{manifest}");
    for file in kit {
        assert_eq!(
            read(&dir.join(file)),
            read(&repo().join("sdk").join(format!("wasm-{lang}")).join(file)),
            "{file} is not the kit's"
        );
    }
    let template = read(&repo().join("cli/src/commands/templates").join(source));
    assert_eq!(read(&dir.join(source)), template.replace("{{name}}", name));
    let build = read(&dir.join("build.sh"));
    assert!(build.contains("-m pip install ziglang"), "{build}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.join("build.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "build.sh is executable");
    }
    let readme = read(&dir.join("README.md"));
    assert!(readme.contains("/build.sh\n"), "{readme}");
    assert!(
        readme.contains(&format!("hookline hooks info {name}")),
        "{readme}"
    );
    assert!(
        !readme.contains("{{"),
        "every placeholder is filled: {readme}"
    );
    let scenario: serde_json::Value =
        serde_json::from_str(&read(&dir.join("scenario.json"))).unwrap();
    assert_eq!(
        scenario["steps"][0]["replies"][0]["toolCalls"][0]["name"],
        "word_count"
    );
}

#[test]
fn a_new_c_plugin_is_the_c_kit_with_a_handler_and_build_sh() {
    let root = tempfile::tempdir().unwrap();
    let dir = new_wasm_plugin(root.path(), "shout.c", "c");
    check_wasm_files(
        &dir,
        "shout.c",
        "c",
        &["hookline.h", "hookline.c"],
        "plugin.c",
    );
    let again = hookline(&[
        "new",
        "plugin",
        "shout.c",
        "--lang",
        "c",
        "--dir",
        path(root.path()),
    ]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "an existing directory is not overwritten"
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
}

#[test]
fn a_new_zig_plugin_is_the_zig_kit_with_a_handler_and_build_sh() {
    let root = tempfile::tempdir().unwrap();
    let dir = new_wasm_plugin(root.path(), "shout-zig", "zig");
    check_wasm_files(&dir, "shout-zig", "zig", &["hookline.zig"], "plugin.zig");
    let bad = hookline(&[
        "new",
        "plugin",
        "hookline_host",
        "--lang",
        "zig",
        "--dir",
        path(root.path()),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("reserved"));
}

/// Builds the new plugin with its `build.sh`, then drives `plugin.wasm` through the ABI with
/// `sdk/tests/wasm_abi.py`: the hello, the prompt append, a kept tool call, the tool.
fn build_sh_makes_a_guest_passing_the_abi_check(lang: &str) {
    let test = format!("the {lang} plugin's build.sh test");
    if !system::python_modules(&test, &["ziglang", "wasmtime"]) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let dir = new_wasm_plugin(root.path(), "guest", lang);
    let built = Command::new("sh")
        .arg(dir.join("build.sh"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    assert!(String::from_utf8_lossy(&built.stdout).starts_with("built plugin.wasm ("));
    let requests = [
        serde_json::json!({"type": "hook", "id": 1, "hook": "on_prompt", "session": "s1",
            "value": {"mode": "work", "text": "Be kind.", "appended": ["Use tabs."]}}),
        serde_json::json!({"type": "hook", "id": 2, "hook": "on_tool_call", "session": "s1",
            "value": {"id": "c1", "name": "word_count", "arguments": {"text": "a b"}}}),
        serde_json::json!({"type": "tool", "id": 3, "tool": "word_count", "session": "s1",
            "arguments": {"text": "one two\nthree "}, "workspace_root": "/w",
            "approval_mode": "ask-all"}),
        serde_json::json!({"type": "tool", "id": 4, "tool": "word_count", "session": "s1",
            "arguments": {"path": "notes.txt"}, "workspace_root": "/w",
            "approval_mode": "ask-all"}),
    ];
    let mut check = Command::new("python3")
        .arg(repo().join("sdk/tests/wasm_abi.py"))
        .arg(dir.join("plugin.wasm"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = check.stdin.take().unwrap();
    for request in &requests {
        writeln!(stdin, "{request}").unwrap();
    }
    drop(stdin);
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let hello = &lines[0];
    assert_eq!(
        hello["hooks"],
        serde_json::json!(["on_prompt", "on_tool_call"])
    );
    assert_eq!(hello["tools"][0]["name"], "word_count");
    assert_eq!(
        lines[1],
        serde_json::json!({"type": "replace", "id": 1, "value": {"mode": "work", "text": "Be kind.",
            "appended": ["Use tabs.", "Answer in short sentences."]}})
    );
    assert_eq!(lines[2], serde_json::json!({"type": "keep", "id": 2}));
    assert_eq!(
        lines[3],
        serde_json::json!({"type": "replace", "id": 3, "value": {"text": "3 words", "success": true}})
    );
    assert_eq!(lines[4]["type"], "error");
    assert_eq!(lines[4]["id"], 4);
    assert_eq!(lines.len(), 5);
}

#[test]
fn a_new_c_plugins_build_sh_makes_a_guest_passing_the_abi_check() {
    build_sh_makes_a_guest_passing_the_abi_check("c");
}

#[test]
fn a_new_zig_plugins_build_sh_makes_a_guest_passing_the_abi_check() {
    build_sh_makes_a_guest_passing_the_abi_check("zig");
}
