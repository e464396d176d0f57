//! `hookline serve` with real models, as a new user starts it (issue 21 items 1 and 2): the
//! provider flags of `run` and `chat`, and `--config FILE`. The complete example of
//! docs/configuration.md starts a server as it stands; a bad file exits 2 with one sentence
//! naming the file, the line and the key; the key never appears in any output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cluster_support;
mod provider_stub;

use std::path::Path;
use std::process::Command;

use cluster_support::Node;
use provider_stub::{stub_on_a_thread, Canned};
use serde_json::json;

const KEY: &str = "sk-serve-config-test-71ad";

/// Runs `future` to its end on a runtime of its own (the tests themselves are synchronous).
fn block<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// POSTs (or GETs, without a body) and returns the answer's text.
fn http(url: &str, body: Option<serde_json::Value>) -> String {
    block(async {
        let client = reqwest::Client::new();
        let request = match body {
            Some(body) => client.post(url).json(&body),
            None => client.get(url),
        };
        request.send().await.unwrap().text().await.unwrap()
    })
}

/// The ```toml block after the "complete example" heading of docs/configuration.md.
fn documented_example() -> String {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
    )
    .unwrap();
    let from = doc
        .find("## A complete example")
        .expect("no complete example");
    let rest = &doc[from..];
    let start = rest.find("```toml\n").unwrap() + "```toml\n".len();
    let end = rest[start..].find("```").unwrap();
    rest[start..start + end].to_owned()
}

fn serve_with(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookline"));
    command
        .arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env("HOOKLINE_HOME", dir)
        .current_dir(dir);
    for (name, value) in envs {
        command.env(name, value);
    }
    command.output().unwrap()
}

#[test]
fn the_documented_example_starts_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookline.toml");
    std::fs::write(&file, documented_example()).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookline"));
    command
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY);
    // The node's own flags (--listen, --workspace-root) override the file's.
    let node = Node::spawn(
        "doc",
        dir.path(),
        command,
        &["--config", file.to_str().unwrap()],
    );
    let status: serde_json::Value =
        serde_json::from_str(&http(&format!("{}/v1/sessions", node.url), None)).unwrap();
    assert!(status["sessions"].is_array(), "{status}");
    assert!(!node.log_text().contains(KEY));
}

#[test]
fn a_bad_file_exits_2_with_one_sentence_naming_the_file_the_line_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    let shown = file.display().to_string();
    let cases = [
        (
            "[[model]]\nname = \"gpt\"\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\ncolour = \"blue\"\n",
            format!("The config file {shown}, line 6, key model.colour: unknown field `colour`"),
        ),
        (
            "[[model]]\nname = \"gpt\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n",
            format!("The config file {shown}, line 1, key model.provider: missing field `provider`"),
        ),
        (
            "[[model]]\nname = \"gpt\"\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\napi_key_env = \"HOOKLINE_NO_SUCH_VAR_21\"\n",
            format!("The config file {shown}, line 6, key model.api_key_env: the environment variable HOOKLINE_NO_SUCH_VAR_21 (the API key of model \"gpt\") is not set."),
        ),
        (
            "[serve]\nlisten = \"not an address\"\n",
            format!("The config file {shown}, line 2, key serve.listen: invalid"),
        ),
    ];
    for (text, expected) in cases {
        std::fs::write(&file, text).unwrap();
        let output = serve_with(dir.path(), &["--config", &shown], &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("hookline serve: {expected}")),
            "{stderr}\nexpected: {expected}"
        );
    }
    let missing = dir.path().join("missing.toml");
    let output = serve_with(dir.path(), &["--config", missing.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        format!(
            "hookline serve: The config file {} cannot be read: entity not found.",
            missing.display()
        )
    );
}

#[test]
fn serve_takes_the_provider_flags_of_run_and_chat() {
    let (stub, _runtime) = stub_on_a_thread(vec![Canned::ok(json!({
        "choices": [{"index": 0, "message": {"content": "hello from the stub"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3}
    }))]);
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookline"));
    command.env("HOOKLINE_SERVE_FLAGS_KEY", KEY);
    let node = Node::spawn(
        "flags",
        dir.path(),
        command,
        &[
            "--provider",
            "openai",
            "--base-url",
            &stub.base_url,
            "--model",
            "m",
            "--api-key-env",
            "HOOKLINE_SERVE_FLAGS_KEY",
            "--no-stream",
        ],
    );
    let opened: serde_json::Value =
        serde_json::from_str(&http(&format!("{}/v1/sessions", node.url), Some(json!({})))).unwrap();
    assert_eq!(opened["model"], "m", "{opened}");
    let key = opened["key"].as_str().unwrap();
    let answer = http(
        &format!("{}/v1/sessions/{key}/turns", node.url),
        Some(json!({"text": "hi"})),
    );
    assert!(answer.contains("hello from the stub"), "{answer}");
    let parsed: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        parsed["usage"],
        json!({"inputTokens": 7, "outputTokens": 3, "modelCalls": 1}),
        "{answer}"
    );
    let metrics = http(&format!("{}/metrics", node.url), None);
    assert_eq!(
        stub.received()[0].headers.get("authorization").unwrap(),
        &format!("Bearer {KEY}")
    );
    for text in [&answer, &metrics, &node.log_text(), &opened.to_string()] {
        assert!(!text.contains(KEY), "the key leaked: {text}");
    }
}

/// What `GET /v1/plugins` lists and what a turn's answer stores for a password (the demo's
/// house-style plugin would redact it).
fn plugins_and_a_turn(node: &Node) -> (serde_json::Value, String) {
    let plugins: serde_json::Value =
        serde_json::from_str(&http(&format!("{}/v1/plugins", node.url), None)).unwrap();
    let opened: serde_json::Value =
        serde_json::from_str(&http(&format!("{}/v1/sessions", node.url), Some(json!({})))).unwrap();
    let key = opened["key"].as_str().unwrap();
    let answer = http(
        &format!("{}/v1/sessions/{key}/turns", node.url),
        Some(json!({"text": "hello, my password is hunter2"})),
    );
    (plugins, answer)
}

#[test]
fn serve_with_no_plugin_runs_none_and_says_so_once() {
    // Issue 34 item 7: an empty plugin directory, then no plugin directory at all.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty-plugins");
    std::fs::create_dir_all(&empty).unwrap();
    let with_empty = Node::spawn(
        "empty",
        dir.path(),
        Command::new(env!("CARGO_BIN_EXE_hookline")),
        &["--plugins", empty.to_str().unwrap()],
    );
    let without = Node::spawn(
        "none",
        dir.path(),
        Command::new(env!("CARGO_BIN_EXE_hookline")),
        &[],
    );
    for node in [&with_empty, &without] {
        let (plugins, answer) = plugins_and_a_turn(node);
        assert_eq!(plugins["plugins"], json!([]), "{plugins}");
        assert_eq!(plugins["inProcess"], json!([]), "{plugins}");
        // No demo hook ran: the password is stored as typed, nothing changed a hook's value.
        assert!(answer.contains("my password is hunter2"), "{answer}");
        assert!(!answer.contains("redacted"), "{answer}");
        assert!(!answer.contains("house-style"), "{answer}");
        let log = node.log_text();
        let said = "serving with no plugins (--demo-plugins runs the bundled demo plugins)";
        assert_eq!(log.matches(said).count(), 1, "{log}");
    }
    // Asked for, the demo plugins run.
    let demo = Node::spawn(
        "demo",
        dir.path(),
        Command::new(env!("CARGO_BIN_EXE_hookline")),
        &["--demo-plugins"],
    );
    let (plugins, answer) = plugins_and_a_turn(&demo);
    assert!(
        plugins["inProcess"]
            .as_array()
            .unwrap()
            .contains(&json!("house-style")),
        "{plugins}"
    );
    assert!(answer.contains("[password redacted]"), "{answer}");
    assert!(!demo.log_text().contains("serving with no plugins"));
}

#[test]
fn a_bad_jwt_section_or_an_unreadable_jwks_ends_the_start_before_any_plugin_loads() {
    // Issue 48: the JWKS is read before the plugins are looked for, so the only line on stderr
    // is the reason (no "serving with no plugins" first: nothing was loaded).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwt.toml");
    let shown = file.display().to_string();
    let jwt = "issuer = \"https://idp.example\"\naudience = \"hookline\"\nalgorithm = \"ES256\"\n";
    let cases = [
        (
            format!("[jwt]\njwks_url = \"http://127.0.0.1:1/jwks.json\"\n{jwt}"),
            "cannot fetch the JWKS http://127.0.0.1:1/jwks.json",
        ),
        (
            format!("[jwt]\njwks_file = \"missing.json\"\n{jwt}"),
            "cannot read the JWKS",
        ),
        (
            format!("[jwt]\n{jwt}"),
            "[jwt] needs exactly one of jwks_file and jwks_url",
        ),
    ];
    for (text, expected) in cases {
        std::fs::write(&file, text).unwrap();
        let output = serve_with(dir.path(), &["--config", &shown], &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{stderr}\nexpected: {expected}");
    }
}
