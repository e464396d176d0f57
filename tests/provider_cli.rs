//! `hookline run SCENARIO --provider openai ...` (issue 12 item 6): the scenario's user turns go
//! to the model behind a local stub server, its scripted replies are ignored, and the report
//! holds what the model answered and every request as sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod provider_stub;

use std::process::Command;

use provider_stub::{stub_on_a_thread, Canned};
use serde_json::{json, Value};

fn answer(text: &str) -> Canned {
    Canned::ok(
        json!({"choices": [{"index": 0, "message": {"content": text}, "finish_reason": "stop"}]}),
    )
}

#[test]
fn run_plays_the_user_turns_against_the_model_and_ignores_the_scripted_replies() {
    let (stub, _runtime) = stub_on_a_thread(vec![
        Canned::ok(
            json!({"choices": [{"index": 0, "message": {"content": "Let me read it.", "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}}
        ]}, "finish_reason": "tool_calls"}]}),
        ),
        answer("It says hello."),
        answer("Bye."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.json");
    let scenario_json = json!({
        "workspace": "ws",
        "files": {"notes.txt": "hello\n"},
        "steps": [
            {"user": "what does notes.txt say?", "replies": [{"text": "scripted, never used"}]},
            {"user": "thanks"}
        ]
    });
    std::fs::write(&scenario, scenario_json.to_string()).unwrap();
    std::fs::create_dir_all(dir.path().join("plugins")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .arg("run")
        .arg(&scenario)
        .args(["--json", "--no-demo-plugins", "--plugins"])
        .arg(dir.path().join("plugins"))
        .args([
            "--provider",
            "openai",
            "--base-url",
            &stub.base_url,
            "--model",
            "stub-model",
        ])
        .args(["--api-key-env", "HOOKLINE_RUN_TEST_KEY", "--timeout", "10"])
        .env("HOOKLINE_RUN_TEST_KEY", "sk-run-test-5e9")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stdout.contains("sk-run-test-5e9") && !stderr.contains("sk-run-test-5e9"));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let said: Vec<&str> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "assistant")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(said, ["Let me read it.", "It says hello.", "Bye."]);
    assert!(!stdout.contains("scripted, never used"));
    assert!(!stdout.contains("scripted model replies unused"));
    // The report's requests are the ones the stub received, one per model call.
    assert_eq!(report["requests"].as_array().unwrap().len(), 3);
    let received = stub.received();
    assert_eq!(received.len(), 3);
    assert_eq!(
        received[1].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        &json!({"role": "tool", "tool_call_id": "call_9", "content": "hello\n"})
    );
}

#[test]
fn run_names_a_missing_flag_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["run", "--plugins"])
        .arg(dir.path())
        .arg("--workspace")
        .arg(dir.path())
        .args([
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the provider is misconfigured: --provider openai needs --model NAME"),
        "{stderr}"
    );
}
