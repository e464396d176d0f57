//! `hookline chat` driven as a person would, through a pseudo-terminal (issue 12 item 6): type a
//! message, watch the hooks and the streamed text, answer the approval question, run slash
//! commands, stop a turn with Ctrl-C, end the session with Ctrl-D. Once with the built-in
//! offline model, once against a local OpenAI-compatible stub server. Every wait is bounded by
//! the session's expect timeout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod provider_stub;

use std::path::Path;
use std::process::Command;

use hookline::host::store::{Log, Store};
use hookline::messages::record::ArchiveEntry;
use hookline::messages::session::SessionId;
use provider_stub::{stub_on_a_thread, Canned};
use rexpect::session::PtySession;
use serde_json::json;

/// The longest any one expectation waits.
const EXPECT_MS: u64 = 30_000;

/// A chat in `ws` with an empty user plugins directory, plus `args`.
fn chat(ws: &Path, plugins: &Path, args: &[&str], env: &[(&str, &str)]) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookline"));
    command
        .arg("chat")
        .arg("--workspace")
        .arg(ws)
        .arg("--plugins")
        .arg(plugins)
        .args(args)
        .env("NO_COLOR", "1");
    for (name, value) in env {
        command.env(name, value);
    }
    rexpect::session::spawn_command(command, Some(EXPECT_MS)).unwrap()
}

/// Everything the terminal showed, kept as it is read.
struct Screen {
    session: PtySession,
    seen: String,
}

impl Screen {
    fn expect(&mut self, text: &str) {
        match self.session.exp_string(text) {
            Ok(before) => {
                self.seen.push_str(&before);
                self.seen.push_str(text);
            }
            Err(error) => panic!("expected {text:?}: {error}\nscreen so far:\n{}", self.seen),
        }
    }

    fn type_line(&mut self, line: &str) {
        self.session.send_line(line).unwrap();
    }

    fn control(&mut self, c: char) {
        self.session.send_control(c).unwrap();
    }

    fn until_exit(&mut self) {
        let rest = self.session.exp_eof().unwrap();
        self.seen.push_str(&rest);
    }
}

fn archive(ws: &Path, id: &str) -> Vec<ArchiveEntry> {
    let store = Store::open(ws.join(".hookline")).unwrap();
    let dir = store.session_dir(&SessionId::new(id)).unwrap();
    Log::<ArchiveEntry>::open(&dir.join("archive.log"))
        .unwrap()
        .1
        .records
}

/// What a person types to have the offline model write a file.
const WRITE_HELLO: &str =
    r#"call write_file {"path": "hookline-echo.txt", "content": "hello there"}"#;

#[test]
fn a_person_chats_with_the_offline_model_approves_denies_stops_and_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, plugins) = (dir.path().join("ws"), dir.path().join("plugins"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&plugins).unwrap();
    let mut screen = Screen {
        session: chat(&ws, &plugins, &[], &[]),
        seen: String::new(),
    };
    screen.expect("built-in offline model");
    screen.expect("== session s1 started");
    screen.expect("you> ");

    // A message: the demo plugins' hooks change values and the model echoes it. The offline
    // model is `serve`'s echo model (issue 46 item 6): a plain "hello" calls no tool, so no
    // approval is asked.
    screen.type_line("hello there");
    screen.expect("hook on_prompt: changed by house-style");
    screen.expect("model> echo: hello there");
    screen.expect("you> ");
    assert!(
        !screen.seen.contains("approve") && !screen.seen.contains("[y/n]"),
        "a plain message asked for an approval:\n{}",
        screen.seen
    );
    assert!(!ws.join("hookline-echo.txt").exists());

    // Asked for a tool call, the model makes it, and the operator is asked.
    screen.type_line(WRITE_HELLO);
    screen.expect("approve write_file");
    screen.expect("[y/n] ");
    screen.type_line("y");
    screen.expect("Allow by Operator");
    screen.expect("ran write_file: ok");
    screen.expect("model> The tool did it");
    screen.expect("you> ");
    let written = std::fs::read_to_string(ws.join("hookline-echo.txt")).unwrap();
    assert!(written.starts_with("hello there"), "{written}");

    // Slash commands run as session commands; a wrong one is said, and the chat goes on.
    screen.type_line("/mode plan");
    screen.expect("-- /mode plan: done.");
    screen.type_line("/nope");
    screen.expect("unknown command '/nope'");

    // A refusal: the tool does not run.
    screen.type_line(r#"call write_file {"path": "hookline-echo.txt", "content": "second"}"#);
    screen.expect("[y/n] ");
    screen.type_line("maybe");
    screen.expect("answer y or n: ");
    screen.type_line("n");
    screen.expect("Deny by Operator");
    screen.expect("model> The tool did not");
    screen.expect("you> ");

    // Ctrl-C while the question waits: refused, and the turn ends cancelled.
    screen.type_line(r#"call write_file {"path": "hookline-echo.txt", "content": "third"}"#);
    screen.expect("[y/n] ");
    screen.control('c');
    screen.expect("-- Stopping the turn...");
    screen.expect("-- The turn ended: Cancelled.");
    screen.expect("you> ");
    // Ctrl-C with no turn running does not end the chat.
    screen.control('c');
    screen.expect("No turn is running; Ctrl-D ends the session.");

    // Ctrl-D ends the session, with its end hooks.
    screen.control('d');
    screen.expect("== session s1 ended");
    screen.expect("Session ended.");
    screen.until_exit();
    let archive = archive(&ws, "s1");
    assert!(archive.iter().any(
        |e| matches!(e, ArchiveEntry::SessionEnded(info) if info.session_id.as_str() == "s1")
    ));
    let written = std::fs::read_to_string(ws.join("hookline-echo.txt")).unwrap();
    assert!(
        written.starts_with("hello there"),
        "a refused call wrote: {written}"
    );
}

#[test]
fn a_person_chats_with_a_real_model_sees_it_stream_and_stops_it_mid_answer() {
    const KEY: &str = "sk-hookline-chat-test-0b7d41";
    let delta = |text: &str| json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let (stub, runtime) = stub_on_a_thread(vec![
        Canned::sse(
            &[
                delta("Hello "),
                delta("from "),
                delta("the stub."),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ],
            6,
        ),
        Canned::Stream {
            pieces: vec![format!("data: {}\n\n", delta("Let me think"))],
            hang: true,
        },
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (ws, plugins) = (dir.path().join("ws"), dir.path().join("plugins"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&plugins).unwrap();
    let args = [
        "--no-demo-plugins",
        "--provider",
        "openai",
        "--base-url",
        &stub.base_url,
        "--model",
        "stub-model",
        "--api-key-env",
        "HOOKLINE_CHAT_TEST_KEY",
    ];
    let mut screen = Screen {
        session: chat(&ws, &plugins, &args, &[("HOOKLINE_CHAT_TEST_KEY", KEY)]),
        seen: String::new(),
    };
    screen.expect("stub-model at http://127.0.0.1:");
    screen.expect("you> ");
    screen.type_line("hi");
    screen.expect("model> Hello from the stub.");
    screen.expect("you> ");
    // The second answer hangs after its first words: Ctrl-C stops it.
    screen.type_line("tell me more");
    screen.expect("model> Let me think");
    screen.control('c');
    screen.expect("model call (Work) failed: the call was stopped");
    screen.expect("-- The turn ended: Cancelled.");
    screen.expect("you> ");
    assert!(
        runtime.block_on(stub.client_went_away()),
        "Ctrl-C did not close the request"
    );
    screen.control('d');
    screen.expect("Session ended.");
    screen.until_exit();

    let received = stub.received();
    assert_eq!(received.len(), 2);
    let messages = received[0].body["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap(),
        &json!({"role": "user", "content": "hi"})
    );
    assert_eq!(received[0].body["stream"], json!(true));
    let auth = received[0].headers.get("authorization").unwrap();
    assert_eq!(auth.to_str().unwrap(), format!("Bearer {KEY}"));
    assert!(!screen.seen.contains(KEY), "the key showed on the terminal");
}
