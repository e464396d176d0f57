//! The kit's side of the protocol, driven in memory: hello, ids, calls in flight, cancel,
//! errors, goodbye.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hookline_plugin::messages::hook::OnPrompt;
use hookline_plugin::{Plugin, ToolDecl};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

struct FakeHost {
    to_plugin: DuplexStream,
    from_plugin: Lines<BufReader<DuplexStream>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl FakeHost {
    fn start(plugin: Plugin) -> Self {
        let (to_plugin, plugin_in) = tokio::io::duplex(1 << 16);
        let (plugin_out, from_plugin) = tokio::io::duplex(1 << 16);
        let served = tokio::spawn(plugin.serve(plugin_in, plugin_out));
        Self {
            to_plugin,
            from_plugin: BufReader::new(from_plugin).lines(),
            served,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.to_plugin.write_all(line.as_bytes()).await.unwrap();
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.from_plugin.next_line())
            .await
            .expect("a line within 10 s")
            .unwrap()
            .expect("the plugin is still talking");
        serde_json::from_str(&line).unwrap()
    }

    async fn goodbye(mut self) -> Option<String> {
        self.send(json!({"type": "goodbye"})).await;
        tokio::time::timeout(Duration::from_secs(10), self.served)
            .await
            .expect("goodbye ends the plugin")
            .unwrap()
            .unwrap();
        self.from_plugin.next_line().await.unwrap()
    }
}

fn tool(id: u64, name: &str, arguments: Value) -> Value {
    json!({"type": "tool", "id": id, "tool": name, "arguments": arguments,
           "workspace_root": "/w", "session": "s9", "approval_mode": "ask-all"})
}

fn plugin() -> Plugin {
    let mut plugin = Plugin::new();
    plugin
        .hook::<OnPrompt, _>(|mut prompt, cx| async move {
            prompt.appended.push("kit".into());
            // The trace context, when the host sends one, is the handler's to use (here: echoed).
            prompt.appended.extend(cx.traceparent);
            Ok(Some(prompt))
        })
        .event("session", |_, _| async { Ok(None) })
        .tool(
            ToolDecl::read("wait", "Waits."),
            |arguments, cx| async move {
                let millis = arguments["ms"].as_u64().unwrap_or_default();
                tokio::time::sleep(Duration::from_millis(millis)).await;
                Ok(format!(
                    "waited {millis} in {} {}",
                    cx.session,
                    cx.approval_mode.as_str()
                ))
            },
        )
        .tool_sync(ToolDecl::read("fail", "Fails."), |_, _| Err("no".into()));
    plugin
}

#[tokio::test]
async fn hello_lists_exactly_what_is_registered() {
    let mut host = FakeHost::start(plugin());
    let hello = host.read().await;
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["protocol"], 1);
    assert_eq!(hello["hooks"], json!(["on_prompt"]));
    assert_eq!(hello["raw_hooks"], json!([]));
    assert_eq!(hello["events"], json!(["session"]));
    assert_eq!(hello["tools"][1]["name"], "fail");
    assert_eq!(host.goodbye().await, None);
}

#[tokio::test(start_paused = true)]
async fn calls_in_flight_are_answered_by_id_and_a_cancelled_call_never_is() {
    let mut host = FakeHost::start(plugin());
    host.read().await;
    host.send(tool(1, "wait", json!({"ms": 5_000}))).await;
    host.send(tool(2, "wait", json!({"ms": 10}))).await;
    host.send(tool(3, "wait", json!({"ms": 60_000}))).await;
    host.send(json!({"type": "cancel", "id": 3})).await;
    let first = host.read().await;
    assert_eq!(first["id"], 2);
    assert_eq!(first["value"]["text"], "waited 10 in s9 ask-all");
    assert_eq!(host.read().await["id"], 1);
    host.send(tool(4, "fail", json!({}))).await;
    assert_eq!(
        host.read().await,
        json!({"type": "replace", "id": 4, "value": {"text": "no", "success": false}})
    );
    // Nothing more: the cancelled call 3 sends no reply before or after goodbye.
    assert_eq!(host.goodbye().await, None);
}

#[tokio::test]
async fn a_calls_traceparent_reaches_the_handlers_context() {
    let mut host = FakeHost::start(plugin());
    host.read().await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let prompt = json!({"mode": "work", "text": "base", "appended": []});
    host.send(
        json!({"type": "hook", "id": 1, "hook": "on_prompt", "session": "s",
                     "value": prompt, "traceparent": traceparent}),
    )
    .await;
    let reply = host.read().await;
    assert_eq!(reply["value"]["appended"], json!(["kit", traceparent]));
    assert_eq!(host.goodbye().await, None);
}

#[tokio::test]
async fn hooks_replace_unhandled_requests_keep_and_bad_values_are_errors() {
    let mut host = FakeHost::start(plugin());
    host.read().await;
    let prompt = json!({"mode": "work", "text": "base", "appended": []});
    host.send(
        json!({"type": "hook", "id": 1, "hook": "on_prompt", "session": "s", "value": prompt}),
    )
    .await;
    let reply = host.read().await;
    assert_eq!(reply["type"], "replace");
    assert_eq!(reply["value"]["appended"], json!(["kit"]));
    host.send(json!({"type": "hook", "id": 2, "hook": "on_approval", "session": "s", "value": {}}))
        .await;
    assert_eq!(host.read().await, json!({"type": "keep", "id": 2}));
    host.send(json!({"type": "event", "id": 3, "key": "session:patch", "context": {}}))
        .await;
    assert_eq!(host.read().await, json!({"type": "keep", "id": 3}));
    host.send(json!({"type": "hook", "id": 4, "hook": "on_prompt", "session": "s", "value": 7}))
        .await;
    assert_eq!(host.read().await["type"], "error");
    assert_eq!(host.goodbye().await, None);
}

#[tokio::test]
async fn end_of_input_ends_the_plugin() {
    let host = FakeHost::start(plugin());
    drop(host.to_plugin);
    tokio::time::timeout(Duration::from_secs(10), host.served)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
