//! Issue 15 defect 1: every tool (in-process, a plugin's, an external one) sees the session id and
//! the current approval mode, the same session facts hooks read (SPEC P2.1, P1.3), and sees the
//! new mode after it changes mid-session.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;
mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hookline::host::approval::ScriptedOperator;
use hookline::host::loading::LoadOptions;
use hookline::host::provider::ScriptedProvider;
use hookline::host::tools::{Tool, ToolContext, ToolOutput, ToolSpec};
use hookline::host::turn::UserInput;
use hookline::host::{Host, SessionCommand};
use hookline::messages::approval::{Authority, Risk};
use hookline::messages::record::ArchiveEntry;
use hookline::messages::session::ApprovalMode;
use hookline::messages::tool::ToolProvider;
use host_support::{call, text};
use serde_json::json;

/// An in-process tool answering with what its context says.
struct Facts {
    spec: ToolSpec,
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl Tool for Facts {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn run(&self, cx: &ToolContext, _: serde_json::Value) -> ToolOutput {
        let line = format!("{} {}", cx.session_id, cx.approval_mode.as_str());
        self.seen.lock().unwrap().push(line.clone());
        ToolOutput::success(line)
    }
}

/// A plugin whose tool `plugin_facts` answers with the request's session and approval mode.
const PLUGIN: &str = r#"
import json, sys
print(json.dumps({"type": "hello", "protocol": 1, "tools": [{"name": "plugin_facts",
    "description": "Session facts.", "risk": "read", "authority": "workspace"}]}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    if request["type"] == "goodbye":
        break
    if request["type"] == "tool":
        text = request["session"] + " " + request["approval_mode"]
        print(json.dumps({"type": "replace", "id": request["id"],
                          "value": {"text": text, "success": True}}), flush=True)
"#;

/// An external tool answering with its session environment.
const EXTERNAL: &str = r#"#!/bin/sh
cat >/dev/null
printf '{"text": "%s %s", "success": true}' "$HOOKLINE_SESSION_ID" "$HOOKLINE_APPROVAL_MODE"
"#;

fn write(path: &Path, text: &str, executable: bool) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    if executable {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn tool_results(archive: &[ArchiveEntry]) -> Vec<String> {
    archive
        .iter()
        .filter_map(|e| match e {
            ArchiveEntry::ToolResult(result) => Some(format!("{} {}", result.name, result.text)),
            _ => None,
        })
        .collect()
}

#[actix_rt::test]
async fn every_tool_sees_the_session_id_and_the_current_approval_mode() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, tools, plugins) = (
        dir.path().join("ws"),
        dir.path().join("tools"),
        dir.path().join("plugins"),
    );
    std::fs::create_dir_all(&ws).unwrap();
    write(&plugins.join("facts/plugin.py"), PLUGIN, false);
    write(
        &plugins.join("facts/plugin.json"),
        r#"{"entry": "plugin.py", "interpreter": "python3"}"#,
        false,
    );
    write(&tools.join("facts/run.sh"), EXTERNAL, true);
    let manifest = json!({"name": "external_facts", "description": "Session facts.",
        "command": "run.sh", "risk": "read", "authority": "workspace"});
    write(&tools.join("facts/tool.json"), &manifest.to_string(), false);
    let facts = Arc::new(Facts {
        spec: ToolSpec {
            name: "facts".into(),
            description: "Session facts.".into(),
            provider: ToolProvider::Plugin,
            risk: Risk::Read,
            authority: Authority::Workspace,
        },
        seen: Mutex::default(),
    });
    let provider = ScriptedProvider::new(false);
    let calls = |n: usize| {
        vec![
            call(&format!("a{n}"), "facts", json!({})),
            call(&format!("b{n}"), "plugin_facts", json!({})),
            call(&format!("c{n}"), "external_facts", json!({})),
            text("done"),
        ]
    };
    provider.push_replies(calls(1));
    let options = LoadOptions::new(Some(plugins), None);
    let mut host = Host::builder()
        .load_plugins(&options)
        .await
        .tool(facts.clone())
        .external_tools(&tools)
        .provider(Arc::new(provider.clone()))
        .operator(Arc::new(ScriptedOperator::default()))
        .workspace(&ws)
        .spaces_root(dir.path())
        .approval_mode(ApprovalMode::AllowWorkspace)
        .start()
        .unwrap();
    assert_eq!(host.loaded_plugins().len(), 1);
    host.open().await.unwrap();
    host.user_turn(UserInput::work("one")).await.unwrap();
    host.command(SessionCommand::Approvals(ApprovalMode::AskAboveRead))
        .await
        .unwrap();
    provider.push_replies(calls(2));
    host.user_turn(UserInput::work("two")).await.unwrap();

    let store = host.store().session_dir(&"s1".into()).unwrap();
    let archive = hookline::host::store::Log::<ArchiveEntry>::open(&store.join("archive.log"))
        .unwrap()
        .1
        .records;
    assert_eq!(
        tool_results(&archive),
        [
            "facts s1 allow-workspace",
            "plugin_facts s1 allow-workspace",
            "external_facts s1 allow-workspace",
            "facts s1 ask-above-read",
            "plugin_facts s1 ask-above-read",
            "external_facts s1 ask-above-read",
        ]
    );
    support::shut_down(host).await;
}
