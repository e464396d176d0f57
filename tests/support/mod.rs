//! Builds plugin directories for the tests: the shipped examples and the faulty plugin.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use hookline::actors::Pipeline;
use hookline::host::external::RunState;
use hookline::host::loading::{load, LoadOptions, LoadReport};
use hookline::host::Host;
use hookline::messages::hook::OnToolCall;
use hookline::messages::session::SessionId;
use hookline::messages::tool::{ToolCall, ToolProvider};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `<root>/<name>/` running `tests/plugins/faulty.py MODE`, with extra manifest fields.
pub fn faulty(root: &Path, name: &str, mode: &str, extra: serde_json::Value) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        repo().join("tests/plugins/faulty.py"),
        dir.join("faulty.py"),
    )
    .unwrap();
    let mut manifest =
        serde_json::json!({"entry": "faulty.py", "interpreter": "python3", "args": [mode]});
    if let (Some(target), Some(more)) = (manifest.as_object_mut(), extra.as_object()) {
        target.extend(more.clone());
    }
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

/// A scripted plugin answering each hook from `replies`.
pub fn scripted(root: &Path, name: &str, replies: serde_json::Value) -> PathBuf {
    let dir = faulty(root, name, "script", serde_json::json!({}));
    std::fs::write(dir.join("replies.json"), replies.to_string()).unwrap();
    dir
}

/// Copies the directory `from` to `to`, recursively (files and directories only).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Copies the shipped examples into `root`, with the Rust example's binary in its `bin/`.
pub fn examples(root: &Path) {
    copy_dir(
        &repo().join("examples/plugins/house-rules"),
        &root.join("house-rules"),
    );
    let guard = root.join("rust-guard");
    std::fs::create_dir_all(guard.join("bin")).unwrap();
    std::fs::copy(
        repo().join("examples/plugins/rust-guard/plugin.json"),
        guard.join("plugin.json"),
    )
    .unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_hookline-example-plugin"),
        guard.join("bin/rust-guard"),
    )
    .unwrap();
}

/// Loads `dir` as the user plugins directory.
pub async fn load_user(dir: &Path) -> LoadReport {
    let mut options = LoadOptions::new(Some(dir.to_path_buf()), None);
    options.hello_timeout = Some(Duration::from_secs(10));
    load(&options).await
}

pub fn tool_call(name: &str, id: &str) -> ToolCall {
    ToolCall {
        call_id: id.into(),
        name: name.into(),
        arguments: serde_json::json!({}),
        provider: ToolProvider::BuiltIn,
    }
}

pub fn texts<T: ToString>(notes: &[T]) -> Vec<String> {
    notes.iter().map(ToString::to_string).collect()
}

/// Shuts `host` down and checks that its shared state closed and every plugin process stopped.
pub async fn shut_down(mut host: Host) {
    let processes = host.loaded_plugins().to_vec();
    assert!(!processes.is_empty());
    let closed = host.shutdown("test finished", None).await.unwrap();
    assert!(
        closed.wait(Duration::from_secs(30)).await,
        "the shared state closed"
    );
    for plugin in processes {
        assert_eq!(plugin.run_state(), RunState::Stopped, "{}", plugin.name());
    }
}

/// Runs one `on_tool_call` for tool `t` in each of sessions `s1` and `s2` (call ids `c1`, `c2`)
/// through the plugins `report` loaded, in load order; returns each call's final tool name and
/// the notes of both, as text.
pub async fn two_tool_calls(report: &LoadReport) -> (Vec<String>, Vec<String>) {
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    let mut names = Vec::new();
    let mut notes = Vec::new();
    for (session, id) in [("s1", "c1"), ("s2", "c2")] {
        let outcome = pipeline
            .call::<OnToolCall>(&SessionId::new(session), tool_call("t", id))
            .await
            .unwrap();
        assert_eq!(outcome.value.call_id, id);
        names.push(outcome.value.name);
        notes.extend(texts(&outcome.notes));
    }
    (names, notes)
}
