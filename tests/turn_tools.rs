//! One pipeline for every tool (SPEC P1.3): a built-in tool, a plugin's tool and an external tool
//! from a tools directory all go through `on_tool_call`, approval and `on_tool_result` alike.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration, Reply};
use hookline::host::approval::ScriptedOperator;
use hookline::host::demo::WordCount;
use hookline::host::provider::ScriptedProvider;
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::Host;
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::note::Note;
use hookline::messages::record::{ArchiveEntry, Decision};
use hookline::messages::session::ApprovalMode;
use hookline::messages::tool::{ToolCall, ToolResult};
use host_support::{call, text};
use serde_json::json;

/// Records every tool call and result it is sent, and marks each result.
#[derive(Default)]
struct Watch(Mutex<Vec<String>>);

#[async_trait]
impl Plugin for Watch {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnToolCall, HookKind::OnToolResult])
    }
    async fn on_tool_call(&self, _: &HookContext, call: ToolCall) -> HookResult<Reply<ToolCall>> {
        let line = format!("call {} {:?}", call.name, call.provider);
        self.0.lock().unwrap().push(line);
        Ok(Reply::Keep)
    }
    async fn on_tool_result(
        &self,
        _: &HookContext,
        result: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        let line = format!("result {} {}", result.name, result.text.trim());
        self.0.lock().unwrap().push(line);
        let text = format!("{} [watched]", result.text.trim());
        Ok(Reply::Replace(ToolResult { text, ..result }))
    }
}

fn write_tool(tools: &Path, name: &str, manifest: &serde_json::Value, script: &str) {
    let dir = tools.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tool.json"), manifest.to_string()).unwrap();
    let run = dir.join("run.py");
    std::fs::write(&run, script).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
}

const SHOUT: &str = "#!/usr/bin/env python3\nimport json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({\"text\": args[\"text\"].upper(), \"success\": True}))\n";

#[actix_rt::test]
async fn built_in_plugin_and_external_tools_share_one_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, tools) = (dir.path().join("ws"), dir.path().join("tools"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "three little words").unwrap();
    let manifest = json!({"name": "shout", "description": "Upper-case a text.",
        "command": "run.py", "risk": "read", "authority": "workspace"});
    write_tool(&tools, "shout", &manifest, SHOUT);
    write_tool(&tools, "broken", &json!({"name": "broken"}), SHOUT);
    let watch = Arc::new(Watch::default());
    let provider = ScriptedProvider::new(false);
    provider.push_replies(vec![
        call("c1", "read_file", json!({"path": "notes.txt"})),
        call("c2", "word_count", json!({"path": "notes.txt"})),
        call("c3", "shout", json!({"text": "quiet please"})),
        text("done"),
    ]);
    let mut host = Host::builder()
        .plugin(PluginRegistration::new("watch").with_hooks(watch.clone()))
        .tools(ToolRegistry::with_builtins())
        .tool(Arc::new(WordCount::new()))
        .external_tools(&tools)
        .provider(Arc::new(provider))
        .operator(Arc::new(ScriptedOperator::default()))
        .workspace(&ws)
        .spaces_root(dir.path())
        .approval_mode(ApprovalMode::AllowWorkspace)
        .start()
        .unwrap();
    host.open().await.unwrap();
    host.user_turn(UserInput::work("go")).await.unwrap();

    let seen = watch.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "call read_file BuiltIn",
            "result read_file three little words",
            "call word_count Plugin",
            "result word_count 3 words",
            "call shout External",
            "result shout QUIET PLEASE",
        ]
    );
    let store = host.store().session_dir(&"s1".into()).unwrap();
    let archive = hookline::host::store::Log::<ArchiveEntry>::open(&store.join("archive.log"))
        .unwrap()
        .1
        .records;
    let approvals: Vec<(String, Decision)> = archive
        .iter()
        .filter_map(|e| match e {
            ArchiveEntry::Approval(a) => Some((a.tool.clone(), a.decision)),
            _ => None,
        })
        .collect();
    assert_eq!(
        approvals,
        [
            ("read_file".to_owned(), Decision::Allow),
            ("word_count".to_owned(), Decision::Allow),
            ("shout".to_owned(), Decision::Allow),
        ]
    );
    let skipped: Vec<String> = archive
        .iter()
        .filter_map(|e| match e {
            ArchiveEntry::Note {
                note: Note::ExternalToolSkipped { problem },
                ..
            } => Some(problem.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(
        skipped[0].starts_with("Skipped the external tool in ") && skipped[0].contains("broken"),
        "{skipped:?}"
    );
}
