//! Plugins from disk inside the Host: the shipped examples (Python and Rust) play a scenario, and
//! their hooks, their tools (through the approval pipeline, SPEC P1.3) and their event
//! subscriptions all fire; loading notes reach the first session; protocol faults reach notes as
//! typed skip reasons; the processes go down with the host.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hookline::host::approval::ScriptedOperator;
use hookline::host::loading::LoadOptions;
use hookline::host::provider::ScriptedProvider;
use hookline::host::scenario::{parse, play, Played, Script};
use hookline::host::session::ManualClock;
use hookline::host::tools::ToolRegistry;
use hookline::host::{Host, HostEvent};
use hookline::messages::event::{
    AgentBootstrapContext, BootstrapFile, CommandContext, CompactBeforeContext, Event as GwEvent,
    MessageReceivedContext,
};
use hookline::messages::hook::HookKind;
use hookline::messages::note::{Note, Skip, SkipReason};
use hookline::messages::record::{Decider, Decision};
use hookline::messages::session::ApprovalMode;
use hookline::messages::tool::ToolProvider;
use serde_json::json;
use support::{faulty, repo, shut_down};

/// A host over `plugins` (the user plugins directory), a scripted provider and operator, in a
/// fresh workspace, approving in `mode`.
struct Running {
    host: Host,
    script: Script,
    _dir: tempfile::TempDir,
}

async fn host_with(plugins: &Path, mode: ApprovalMode) -> Running {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let mut options = LoadOptions::new(Some(plugins.to_path_buf()), None);
    options.hello_timeout = Some(Duration::from_secs(10));
    let script = Script {
        provider: ScriptedProvider::new(true),
        operator: ScriptedOperator::default(),
        clock: ManualClock::new(0),
    };
    let host = Host::builder()
        .tools(ToolRegistry::with_builtins())
        .load_plugins(&options)
        .await
        .provider(Arc::new(script.provider.clone()))
        .operator(Arc::new(script.operator.clone()))
        .clock(Arc::new(script.clock.clone()))
        .workspace(dir.path().join("ws"))
        .approval_mode(mode)
        .start()
        .unwrap();
    Running {
        host,
        script,
        _dir: dir,
    }
}

/// Plays `scenario` (JSON) on a fresh session and returns every event.
async fn play_scenario(run: &mut Running, scenario: serde_json::Value) -> Vec<HostEvent> {
    let scenario = parse(
        Path::new("test.json"),
        &scenario.to_string(),
        run.host.tools(),
    )
    .unwrap();
    let mut played = Played::default();
    run.host.open().await.unwrap();
    play(&mut run.host, &run.script, &scenario, &mut played)
        .await
        .unwrap();
    played.events
}

fn notes(events: &[HostEvent]) -> Vec<Note> {
    events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Note { note, .. } => Some(note.clone()),
            _ => None,
        })
        .collect()
}

fn copy_house_rules(root: &Path) {
    let house = root.join("house-rules");
    std::fs::create_dir_all(&house).unwrap();
    for file in ["plugin.json", "plugin.py"] {
        std::fs::copy(
            repo().join("examples/plugins/house-rules").join(file),
            house.join(file),
        )
        .unwrap();
    }
}

fn copy_rust_guard(root: &Path) {
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

#[actix_rt::test]
async fn house_rules_hooks_tool_and_event_run_through_the_host() {
    let plugins = tempfile::tempdir().unwrap();
    copy_house_rules(plugins.path());
    let mut run = host_with(plugins.path(), ApprovalMode::AskAboveRead).await;
    let tool = run.host.tools().get("word_count").unwrap();
    assert_eq!(tool.spec().provider, ToolProvider::Plugin);
    let events = play_scenario(
        &mut run,
        json!({
            "steps": [{
                "user": "How many words?",
                "replies": [
                    {"toolCalls": [{"id": "c1", "name": "word_count",
                                    "arguments": {"text": "please delete these words"}}]},
                    {"text": "Four."}
                ],
                "operator": ["allow"]
            }]
        }),
    )
    .await;
    // on_prompt appended (SPEC P2.2).
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::SystemText { text, .. } if text.ends_with("Use British spelling."))));
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::HookChanged { hook: HookKind::OnPrompt, changed_by, .. } if changed_by == &["house-rules"])));
    // The plugin tool went through on_approval (raised to write, prompt required: the summary
    // says "delete"), the operator allowed it, and the plugin's process ran it.
    let approval = events
        .iter()
        .find_map(|e| match e {
            HostEvent::Approval(record) => Some(record.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(approval.tool, "word_count");
    assert!(approval.classification.requires_prompt);
    assert_eq!(
        (approval.decision, approval.decided_by),
        (Decision::Allow, Decider::Operator)
    );
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::ToolRun { tool, success: true, text, .. } if tool == "word_count" && text == "4")));
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::ToolResult(result) if result.call_id == "c1" && result.text == "4")));
    // The unknown subscription is warned about once, in the Note's words (SPEC G4.1).
    let warnings: Vec<String> = notes(&events)
        .iter()
        .filter(|n| matches!(n, Note::UnknownSubscription { .. }))
        .map(Note::text)
        .collect();
    assert_eq!(
        warnings,
        ["Plugin 'house-rules' subscribes to 'command:nwe', which the gateway never emits."]
    );
    // Its event handler is on the host's event bus.
    let command: CommandContext = serde_json::from_value(json!({
        "agentId": "main", "sessionEntry": {"sessionId": "s1"},
        "commandSource": "chat", "workspaceDir": "/ws", "storePath": "/s", "cfg": {}
    }))
    .unwrap();
    let delivery = run
        .host
        .pipeline()
        .events()
        .dispatch(GwEvent::CommandNew(command))
        .await
        .unwrap();
    assert_eq!((delivery.calls, delivery.notes), (1, vec![]));
    run.host.close().await.unwrap();
    shut_down(run.host).await;
}

#[actix_rt::test]
async fn rust_guard_hooks_tool_and_events_run_through_the_host() {
    let plugins = tempfile::tempdir().unwrap();
    copy_rust_guard(plugins.path());
    let mut run = host_with(plugins.path(), ApprovalMode::AskAll).await;
    let events = play_scenario(
        &mut run,
        json!({
            "steps": [{
                "user": "my password hunter2 echo it",
                "replies": [
                    {"toolCalls": [{"id": "c1", "name": "echo", "arguments": {"text": "hi"}}]},
                    {"text": "Echoed."}
                ],
                "operator": ["allow"]
            }]
        }),
    )
    .await;
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::User { text, .. } if text == "my password [redacted] echo it")));
    assert!(notes(&events).contains(&Note::RawHookRegistered {
        plugin: "rust-guard".into()
    }));
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::Approval(r) if r.tool == "echo" && r.decided_by == Decider::Operator)));
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::ToolRun { tool, success: true, text, .. } if tool == "echo" && text == "hi")));
    let bus = run.host.pipeline().events();
    let received = MessageReceivedContext {
        from: "u1".into(),
        content: "hello".into(),
        channel_id: "telegram".into(),
        ..MessageReceivedContext::default()
    };
    let delivery = bus
        .dispatch(GwEvent::MessageReceived(received))
        .await
        .unwrap();
    assert_eq!((delivery.calls, delivery.notes), (1, vec![]));
    // The `session` family subscription (SPEC G1.2).
    let compact: CompactBeforeContext = serde_json::from_value(json!({
        "sessionId": "s1", "missingSessionKey": false,
        "messageCount": 3, "messageCountOriginal": 3
    }))
    .unwrap();
    let delivery = bus
        .dispatch(GwEvent::SessionCompactBefore(compact))
        .await
        .unwrap();
    assert_eq!((delivery.calls, delivery.notes), (1, vec![]));
    shut_down(run.host).await;
}

/// A plugin that answers `agent:bootstrap` with a replacement list and declares a tool named
/// like a built-in.
const BOOTSTRAPPER: &str = r#"
import json, sys
tools = [{"name": "read_file", "risk": "read", "authority": "workspace"}]
print(json.dumps({"type": "hello", "protocol": 1, "events": ["agent:bootstrap"], "tools": tools}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    if request["type"] == "goodbye":
        break
    if request["type"] == "event":
        files = request["context"]["bootstrapFiles"]
        files.append({"name": "HOUSE.md", "path": "/ws/HOUSE.md", "missing": False, "content": "rules"})
        print(json.dumps({"type": "replace", "id": request["id"], "value": files}), flush=True)
"#;

#[actix_rt::test]
async fn bootstrap_replacement_tool_collision_and_skipped_directory_are_handled() {
    let plugins = tempfile::tempdir().unwrap();
    let dir = plugins.path().join("bootstrapper");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plugin.py"), BOOTSTRAPPER).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        json!({"entry": "plugin.py", "interpreter": "python3"}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(plugins.path().join("no-manifest")).unwrap();
    let mut run = host_with(plugins.path(), ApprovalMode::AskAboveRead).await;
    let events = play_scenario(&mut run, json!({"steps": []})).await;
    let skipped = plugins.path().join("no-manifest");
    assert_eq!(
        notes(&events),
        [
            Note::PluginDirectorySkipped {
                dir: skipped.display().to_string(),
                problem: "it has no plugin.json".into(),
            },
            Note::PluginToolNotRegistered {
                plugin: "bootstrapper".into(),
                tool: "read_file".into(),
            },
        ]
    );
    // Built-in tools are never replaced (SPEC X).
    let read = run.host.tools().get("read_file").unwrap();
    assert_eq!(read.spec().provider, ToolProvider::BuiltIn);
    let agents = BootstrapFile {
        name: "AGENTS.md".into(),
        path: "/ws/AGENTS.md".into(),
        missing: false,
        content: None,
    };
    let context = AgentBootstrapContext {
        workspace_dir: "/ws".into(),
        bootstrap_files: vec![agents.clone()],
        cfg: None,
        session_key: None,
        session_id: None,
        agent_id: None,
    };
    let delivery = run
        .host
        .pipeline()
        .events()
        .dispatch(GwEvent::AgentBootstrap(context))
        .await
        .unwrap();
    assert!(delivery.notes.is_empty(), "{:?}", delivery.notes);
    let GwEvent::AgentBootstrap(after) = delivery.event else {
        panic!("the event stays agent:bootstrap");
    };
    let names: Vec<&str> = after
        .bootstrap_files
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["AGENTS.md", "HOUSE.md"]);
    shut_down(run.host).await;
}

#[actix_rt::test]
async fn a_protocol_fault_reaches_the_note_as_a_typed_skip_reason() {
    let plugins = tempfile::tempdir().unwrap();
    faulty(plugins.path(), "garbler", "garbage", json!({}));
    let mut run = host_with(plugins.path(), ApprovalMode::AskAboveRead).await;
    let events = play_scenario(
        &mut run,
        json!({
            "steps": [{
                "user": "list",
                "replies": [
                    {"toolCalls": [{"id": "c1", "name": "list_dir", "arguments": {"path": "."}}]},
                    {"text": "Listed."}
                ]
            }]
        }),
    )
    .await;
    let skipped: Vec<Skip> = notes(&events)
        .into_iter()
        .filter_map(|n| match n {
            Note::Skipped(skip) => Some(skip),
            _ => None,
        })
        .collect();
    assert_eq!(
        skipped,
        [Skip {
            plugin: "garbler".into(),
            hook: HookKind::OnToolCall,
            reason: SkipReason::NotProtocol,
        }]
    );
    // The session went on: the tool still ran, under its own name.
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::ToolRun { tool, success: true, .. } if tool == "list_dir")));
    shut_down(run.host).await;
}
