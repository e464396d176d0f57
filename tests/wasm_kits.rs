//! The WebAssembly kits end to end with the real binary (issue 36 items 1 and 4): a plugin
//! written by `hookline new plugin --lang c|zig` and built by its `build.sh` loads as kind
//! `wasm` (`hookline hooks info NAME --json`), and `hookline run` with its `scenario.json` shows
//! its prompt append in every system text and its `word_count` tool's answer.
//!
//! Needs `python3` with PyPI's `ziglang` (and `wasmtime`, as every kit test asks for both):
//! without them the test says so and skips, and fails under `HOOKLINE_REQUIRE_SYSTEM_TESTS=1`.
//! It also needs a host that loads WebAssembly plugins: while `hooks info` reports another kind
//! for the built plugin, the test says so and skips (that is host support missing from this
//! build, not a tool missing from the machine).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/system.rs"]
mod system;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output};

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

fn scaffolded_plugin_builds_loads_and_runs(lang: &str) {
    let test = format!("the {lang} WebAssembly plugin's end-to-end test");
    if !system::python_modules(&test, &["ziglang", "wasmtime"]) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let name = format!("wasm-{lang}");
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
    let dir = root.path().join(&name);
    let built = Command::new("sh")
        .arg(dir.join("build.sh"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let dirs = [
        "--user-dir",
        path(root.path()),
        "--workspace",
        path(root.path()),
    ];

    let info = hookline(&[&["hooks", "info", &name, "--json"][..], &dirs].concat());
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&info.stderr)
    );
    let info: serde_json::Value = serde_json::from_str(&text).unwrap();
    let plugin = &info["plugin"];
    if plugin["kind"] != "wasm" {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {test} needs a host that loads WebAssembly plugins (issue 36 item 1); \
             this build's `hookline hooks info` reports the kind {} for {name} (state {})",
            plugin["kind"],
            plugin["state"]
        );
        return;
    }
    assert_eq!(plugin["state"], "loaded", "{info}");
    assert_eq!(
        plugin["hello"]["hooks"],
        serde_json::json!(["on_prompt", "on_tool_call"]),
        "{info}"
    );
    assert_eq!(plugin["hello"]["tools"][0]["name"], "word_count", "{info}");

    let scenario = dir.join("scenario.json");
    let run = hookline(&[&["run", path(&scenario), "--json"][..], &dirs].concat());
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let events = report["events"].as_array().unwrap();
    let systems: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "system-text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(!systems.is_empty(), "{report}");
    assert!(
        systems
            .iter()
            .all(|text| text.ends_with("Answer in short sentences.")),
        "{systems:?}"
    );
    let runs: Vec<(&str, bool, &str)> = events
        .iter()
        .filter(|e| e["event"] == "tool-run")
        .map(|e| {
            (
                e["tool"].as_str().unwrap_or_default(),
                e["success"].as_bool().unwrap_or_default(),
                e["text"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(runs, [("word_count", true, "7 words")], "{report}");
    let notes = report["notes"].to_string();
    assert!(
        !notes.contains("skipped") && !notes.contains("broke"),
        "{notes}"
    );
}

#[test]
fn a_new_c_wasm_plugin_builds_loads_and_runs() {
    scaffolded_plugin_builds_loads_and_runs("c");
}

#[test]
fn a_new_zig_wasm_plugin_builds_loads_and_runs() {
    scaffolded_plugin_builds_loads_and_runs("zig");
}
