//! `hookline replay` (issue 25): sessions recorded with the demo plugins replay with 0
//! differences on the same plugins and write nothing; a changed plugin shows its difference with
//! the turn, the hook and the plugin; the command's exit codes and JSON document.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use async_trait::async_trait;
use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration, Reply};
use hookline::host::approval::ScriptedOperator;
use hookline::host::demo::{example_plugins, WordCount, DEMO_SCENARIO};
use hookline::host::provider::ScriptedProvider;
use hookline::host::replay::SessionReplay;
use hookline::host::session::SessionCommand;
use hookline::host::store::{FileStore, FileStoreOptions, SessionStore};
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::{Host, HostBuilder};
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::scenario::{OperatorAnswer, ScriptedReply};
use hookline::messages::session::ApprovalMode;
use hookline::messages::tool::ToolResult;
use serde_json::{json, Value};

/// The demo plugins, their tool and the built-in tools, as `hookline run` assembles them.
fn demo(extra: Vec<PluginRegistration>) -> HostBuilder {
    Host::builder()
        .tools(ToolRegistry::with_builtins())
        .plugins(example_plugins())
        .plugins(extra)
        .tool(Arc::new(WordCount::new()))
}

fn reply(value: Value) -> ScriptedReply {
    serde_json::from_value(value).unwrap()
}

/// Every directory under `root` (`root` first) and every file, each list in the order found.
fn walk(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut dirs, mut files) = (vec![root.to_path_buf()], Vec::new());
    let mut at = 0;
    while let Some(dir) = dirs.get(at).cloned() {
        at += 1;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    (dirs, files)
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walk(dir)
        .1
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// Asserts that `after` (a [`snapshot`]) is `before`, naming the files that differ (not their
/// bytes: a session's logs are kilobytes).
fn assert_unchanged(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) {
    let changed: Vec<&PathBuf> = before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(changed.is_empty(), "written by the replay: {changed:?}");
}

/// Records two sessions in `ws` with the demo plugins: tool calls (one allowed by the
/// operator, one denied), images, a compaction, a failed model call, and a `/new`.
async fn record(ws: &Path) {
    record_in(ws, demo(Vec::new())).await;
}

/// [`record`] on `builder` (a store of its own, or the file store under `ws`).
async fn record_in(ws: &Path, builder: HostBuilder) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "hookline notes\n").unwrap();
    std::fs::write(ws.join("AGENTS.md"), "Keep answers short.\n").unwrap();
    let provider = ScriptedProvider::new(true);
    let operator = ScriptedOperator::default();
    let mut host = builder
        .provider(Arc::new(provider.clone()))
        .operator(Arc::new(operator.clone()))
        .workspace(ws)
        .approval_mode(ApprovalMode::AskAboveRead)
        .start()
        .unwrap();
    host.open().await.unwrap();
    provider.push_replies([
        reply(
            json!({"reasoning": "Read first.", "usage": {"inputTokens": 10, "outputTokens": 2},
            "toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "notes.txt"}}]}),
        ),
        reply(json!({"text": "The notes say hookline."})),
    ]);
    let mut input = UserInput::work("Read notes.txt, my password is hunter2");
    input.images = vec![hookline::messages::model::MediaType::Png];
    host.user_turn(input).await.unwrap();
    provider.push_replies([
        reply(json!({"toolCalls": [
            {"id": "c2", "name": "write_file", "arguments": {"path": "out.txt", "content": "x"}},
            {"id": "c3", "name": "write_file", "arguments": {"path": "notes.txt", "content": ""}},
            {"id": "c4", "name": "word_count", "arguments": {"text": "three little words"}}]})),
        reply(json!({"text": "Saved out.txt."})),
    ]);
    operator.push_answers([OperatorAnswer::Allow, OperatorAnswer::Deny]);
    host.user_turn(UserInput::work("Save out.txt"))
        .await
        .unwrap();
    provider.push_replies([reply(
        json!({"text": "The conversation read and saved files."}),
    )]);
    host.command(SessionCommand::Compact).await.unwrap();
    provider.push_replies([reply(json!({"fail": "the server is down"}))]);
    host.user_turn(UserInput::work("And now?")).await.unwrap();
    host.command(SessionCommand::New).await.unwrap();
    provider.push_replies([
        reply(json!({"toolCalls": [{"id": "c5", "name": "list_dir", "arguments": {"path": "."}}]})),
        reply(json!({"text": "notes.txt and out.txt."})),
    ]);
    host.user_turn(UserInput::work("What is here?"))
        .await
        .unwrap();
    let closed = host.shutdown("recorded", None).await.unwrap();
    // The leases are given back when the shared state closes.
    assert!(closed.wait(std::time::Duration::from_secs(10)).await);
}

/// Replays every session of the store in `ws` against `builder`'s plugins.
async fn replay_all(ws: &Path, builder: HostBuilder) -> Vec<SessionReplay> {
    let store = FileStore::open(ws.join(".hookline"), FileStoreOptions::default()).unwrap();
    let replayer = builder.start_replay().unwrap();
    let mut replays = Vec::new();
    for id in store.sessions().await.unwrap() {
        let stored = store.read(&id).await.unwrap().unwrap();
        replays.push(replayer.replay(&stored).await.unwrap());
    }
    replayer.shutdown().await;
    replays
}

#[actix_rt::test]
async fn sessions_replayed_with_their_plugins_reproduce_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    record(&ws).await;
    let before = snapshot(&ws);
    let replays = replay_all(&ws, demo(Vec::new())).await;
    assert_eq!(replays.len(), 2, "{replays:#?}");
    assert_eq!(replays.iter().map(|r| r.turns).sum::<usize>(), 4);
    for replay in &replays {
        assert!(!replay.differs(), "{replay:#?}");
    }
    // Nothing written: not the store, not the workspace (the denied write stays denied, the
    // allowed one is answered from the recording).
    assert_unchanged(&before, &snapshot(&ws));
}

/// A changed plugin: it now also rewrites what `word_count` returns.
struct Shouty;

#[async_trait]
impl Plugin for Shouty {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnToolResult])
    }

    async fn on_tool_result(
        &self,
        _: &HookContext,
        result: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        if result.name != "word_count" {
            return Ok(Reply::Keep);
        }
        Ok(Reply::Replace(ToolResult {
            text: result.text.to_uppercase() + "!",
            ..result
        }))
    }
}

#[actix_rt::test]
async fn a_changed_plugin_shows_its_difference_with_turn_hook_and_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    record(&ws).await;
    let shouty = PluginRegistration::new("shouty").with_hooks(Arc::new(Shouty));
    let replays = replay_all(&ws, demo(vec![shouty])).await;
    let first = &replays[0];
    assert!(first.differs());
    assert!(!replays[1].differs(), "{:#?}", replays[1]);
    let in_turn_2: Vec<_> = first
        .differences
        .iter()
        .filter(|d| d.turn == Some(2) && d.what == "tool-result")
        .collect();
    assert_eq!(in_turn_2.len(), 1, "{:#?}", first.differences);
    let difference = in_turn_2[0];
    assert_eq!(difference.hook, Some(HookKind::OnToolResult));
    // Every plugin that changed that call's result in the replay (guard did when recorded too).
    assert!(
        difference.plugins.contains(&"shouty".to_owned()),
        "{difference:#?}"
    );
    let patch = serde_json::to_value(&difference.patch).unwrap();
    assert_eq!(patch[0]["op"], "replace");
    assert_eq!(patch[0]["path"], "/text");
    assert!(
        patch[0]["value"].as_str().unwrap().ends_with('!'),
        "{patch}"
    );
    // The next request of the turn carries the new text; turn 1 is as recorded.
    assert!(first
        .differences
        .iter()
        .any(|d| d.turn == Some(2) && d.what == "model-request"));
    assert!(first.differences.iter().all(|d| d.turn != Some(1)));
}

fn hookline(args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(args)
        .current_dir(cwd)
        .env("HOOKLINE_HOME", cwd.join("home"))
        .output()
        .unwrap()
}

/// Sets the mode of `root` and everything under it: `dirs` for directories, `files` for files.
fn set_modes(root: &Path, dirs: u32, files: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let (all_dirs, all_files) = walk(root);
    for path in all_files {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(files)).unwrap();
    }
    for dir in all_dirs {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(dirs)).unwrap();
    }
}

#[test]
fn the_command_replays_a_store_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let ws = run_demo(dir.path());
    let store = ws.join(".hookline");
    // A store on read-only media: `replay` only reads, and a file store that only reads makes
    // no journal (docs/storage.md, "The store journal").
    set_modes(&store, 0o555, 0o444);
    if std::fs::write(store.join("probe"), b"").is_ok() {
        set_modes(&store, 0o755, 0o644);
        eprintln!("skipped: permissions are not enforced for this user (running as root?)");
        return;
    }
    let before = snapshot(&ws);
    let replayed = replay_same(&store, dir.path());
    let after = snapshot(&ws);
    set_modes(&store, 0o755, 0o644);
    replayed.unwrap();
    assert_unchanged(&before, &after);
}

/// `hookline replay --store STORE --json` run in `dir`: its report, once it exited 0 with every
/// session replayed the same (at least the demo's two); else what it said.
fn replay_same(store: &Path, dir: &Path) -> Result<Value, String> {
    let out = hookline(
        &["replay", "--store", store.to_str().unwrap(), "--json"],
        dir,
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let same = out.status.code() == Some(0)
        && report["sessions"].as_u64().is_some_and(|n| n >= 2)
        && report["differing"] == 0;
    if same {
        Ok(report)
    } else {
        Err(format!(
            "{report:#}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The bundled demo scenario, run by `hookline run` in a workspace that stays.
fn run_demo(dir: &Path) -> PathBuf {
    let mut scenario: Value = serde_json::from_str(DEMO_SCENARIO).unwrap();
    scenario["workspace"] = json!("ws");
    let file = dir.join("demo.json");
    std::fs::write(&file, scenario.to_string()).unwrap();
    let out = hookline(&["run", file.to_str().unwrap()], dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("ws")
}

#[test]
fn the_command_replays_a_run_and_gates_on_differences() {
    let dir = tempfile::tempdir().unwrap();
    let ws = run_demo(dir.path());
    let store = ws.join(".hookline");
    let before = snapshot(&ws);
    let store_arg = store.to_str().unwrap();
    let report = replay_same(&store, dir.path()).unwrap();
    assert!(report["turns"].as_u64().unwrap() >= 3);
    // Each plugin actor times its first batch at least.
    let latency = report["latency"].as_array().unwrap();
    assert!(
        latency.iter().any(|l| l["plugin"] == "house-style"),
        "{report:#}"
    );
    assert!(latency
        .iter()
        .all(|l| l["samples"].as_u64().unwrap() > 0 && l["p50Us"].as_u64() <= l["p99Us"].as_u64()));
    assert_unchanged(&before, &snapshot(&ws));

    // Another plugin set (none at all): the sessions differ, exit 1.
    let out = hookline(
        &[
            "replay",
            "--store",
            store_arg,
            "--no-demo-plugins",
            "--json",
        ],
        dir.path(),
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    assert!(report["differing"].as_u64().unwrap() >= 1);

    // The readable summary names each session and the total.
    let out = hookline(&["replay", "--store", store_arg], dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("0 of "), "{text}");

    // Bad input: exit 2 with a sentence.
    let out = hookline(&["replay", "--store", store_arg, "s-unknown"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("there is no session 's-unknown' in the store"),
        "{err}"
    );
    let missing = dir.path().join("nowhere");
    let out = hookline(
        &["replay", "--store", missing.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no session store"));
    assert!(!missing.exists());
}

/// Every row of the store's tables, as JSON text, in order.
async fn rows(url: &str) -> Vec<String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    actix_rt::spawn(connection);
    let mut rows = Vec::new();
    for table in ["hookline_sessions", "hookline_records", "hookline_archive"] {
        let query = format!("SELECT row_to_json(t)::text FROM {table} t ORDER BY 1");
        for row in client.query(query.as_str(), &[]).await.unwrap() {
            rows.push(row.get::<_, String>(0));
        }
    }
    rows
}

#[actix_rt::test]
async fn postgres_sessions_replay_with_0_differences_and_no_row_changes() {
    use hookline::postgres::{PgStore, PgStoreOptions};
    let url = pg::database_url();
    let options = PgStoreOptions {
        migrate: true,
        ..PgStoreOptions::default()
    };
    let store = PgStore::connect(&url, options).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    record_in(&ws, demo(Vec::new()).session_store(Arc::new(store))).await;
    let before = rows(&url).await;
    assert!(before.len() > 10, "{before:?}");
    let out = hookline(&["replay", "--store", &url, "--json"], dir.path());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report:#}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report["sessions"].as_u64().unwrap() >= 2, "{report:#}");
    assert_eq!(report["differing"], 0);
    assert_eq!(rows(&url).await, before);
}

#[actix_rt::test]
async fn sessions_a_gateway_ran_side_by_side_replay_with_0_differences() {
    use hookline::host::gateway::{GatewayLimits, OpenSession};
    use hookline::host::provider::EchoProvider;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "hookline notes\n").unwrap();
    // `hookline serve`'s runtime: one gateway, many sessions at once, the offline model.
    let gateway = demo(Vec::new())
        .provider(Arc::new(EchoProvider::new()))
        .workspace(&ws)
        .start_gateway(GatewayLimits::default())
        .unwrap();
    let opens = (0..20).map(|_| gateway.open(OpenSession::default()));
    let handles = futures::future::try_join_all(opens).await.unwrap();
    let runs = handles.iter().enumerate().map(|(i, handle)| async move {
        for turn in 0..3 {
            let text = match turn {
                1 => r#"call read_file {"path":"notes.txt"}"#.to_owned(),
                _ => format!("session {i} turn {turn}, my password is hunter2"),
            };
            handle.turn(UserInput::work(text)).await.unwrap();
        }
    });
    futures::future::join_all(runs).await;
    let summary = gateway.shutdown("recorded", None).await.unwrap();
    // The sessions are released (checkpointed) by the time the shared state closes.
    assert!(
        summary
            .closed
            .wait(std::time::Duration::from_secs(10))
            .await
    );
    let before = snapshot(&ws);
    let replays = replay_all(&ws, demo(Vec::new())).await;
    assert_eq!(replays.len(), 20);
    for replay in &replays {
        assert_eq!(replay.turns, 3);
        assert!(!replay.differs(), "{replay:#?}");
    }
    assert_unchanged(&before, &snapshot(&ws));
}
