//! The external fault matrix: each fault an out-of-process plugin can commit, driven through a
//! whole [`Host`] session with real processes and real time, the faulty plugin first, middle and
//! last in load order (SPEC P1.4, P1.5, L1).
//!
//! Three plugins are loaded from a temporary plugins directory (directory name order decides the
//! load order): two small well-behaved Python plugins (`b-mark`, `d-mark`) and
//! `tests/plugins/faulty.py` as `a-faulty`, `c-faulty` or `e-faulty`. Each implements
//! `on_user_message` and appends ` +<its name>` to the text, which is stored (SPEC P2.3), so the
//! stored user records show which plugins ran, in which order.
//!
//! For each case and position the host survives, the session (open, two turns with a tool call
//! each, compaction, close) completes with every turn `Completed`, the session records exactly
//! the one note the fault calls for (none for a stderr flood) with its exact text, the marks show
//! the later plugins ran in order on every call (and the faulty one on the calls it did not
//! fault), the session's stored records are those of the same session without the faulty plugin
//! once its own marks are removed, and at shutdown every plugin process is stopped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;
mod support;

use std::path::Path;

use hookline::host::external::RunState;
use hookline::host::loading::LoadOptions;
use hookline::host::turn::UserInput;
use hookline::host::{Host, SessionCommand};
use hookline::messages::record::ArchiveEntry;
use hookline::messages::session::ApprovalMode;
use hookline::messages::user::StopReason;
use host_support::{call, rig_from, text, Rig};
use serde_json::json;
use support::{faulty, shut_down};

/// The faulty plugin's hook timeout; only a reply after the timeout waits for it.
const TIMEOUT_MS: u64 = 500;

/// The faulty plugin's directory name in each load position (first, middle, last).
const FAULTY: [&str; 3] = ["a-faulty", "c-faulty", "e-faulty"];

/// The well-behaved plugins, in load order; they sit between the faulty positions.
const MARKS: [&str; 2] = ["b-mark", "d-mark"];

/// The session's two user messages, one per turn.
const QUESTIONS: [&str; 2] = ["one", "two"];

/// A well-behaved plugin: appends ` +<its name>` to every user message.
const MARKER: &str = r#"
import json, os, sys
name = os.environ.get("HOOKLINE_PLUGIN", "mark")
print(json.dumps({"type": "hello", "protocol": 1, "hooks": ["on_user_message"]}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    if request["type"] == "goodbye":
        break
    if request["type"] == "hook":
        value = request["value"]
        value["text"] += " +" + name
        print(json.dumps({"type": "replace", "id": request["id"], "value": value}), flush=True)
"#;

/// What a fault should leave behind.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// The faulty plugin's call in turn `turn` (0 or 1) is skipped with this reason; its other
    /// call is served.
    Skip { turn: usize, reason: &'static str },
    /// Every call is served and no note is recorded.
    Served,
    /// Every call is served; the fault is pinned on the plugin with one note (issue 15 defect 3).
    Pinned { reason: &'static str },
    /// The plugin is skipped at load with this problem and never runs; the others load.
    NotLoaded { problem: &'static str },
}

/// One row of the matrix: the faulty plugin's mode, its hello deadline, and the expectation.
#[derive(Clone, Copy, Debug)]
struct Case {
    mode: &'static str,
    hello_ms: u64,
    expect: Expect,
}

const fn skip(mode: &'static str, turn: usize, reason: &'static str) -> Case {
    Case {
        mode,
        hello_ms: 5_000,
        expect: Expect::Skip { turn, reason },
    }
}

const fn not_loaded(mode: &'static str, hello_ms: u64, problem: &'static str) -> Case {
    Case {
        mode,
        hello_ms,
        expect: Expect::NotLoaded { problem },
    }
}

/// What one session left behind.
struct Outcome {
    /// The stored records (after compaction), as JSON.
    records: Vec<String>,
    /// The archive without its notes, as JSON with the temporary workspace path blanked.
    archive: Vec<String>,
    /// The archived user texts, in order.
    users: Vec<String>,
    /// Every note the session recorded, rendered.
    notes: Vec<String>,
    /// The names of the plugins that loaded, in load order.
    loaded: Vec<String>,
}

fn marker(root: &Path, name: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plugin.py"), MARKER).unwrap();
    let manifest = json!({"entry": "plugin.py", "interpreter": "python3"});
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
}

/// Runs the whole session over the two markers and, if given, the faulty plugin `(dir, case)`.
async fn session(faulty_plugin: Option<(&str, Case)>) -> Outcome {
    let plugins = tempfile::tempdir().unwrap();
    for name in MARKS {
        marker(plugins.path(), name);
    }
    if let Some((name, case)) = faulty_plugin {
        let manifest = json!({
            "args": [case.mode, "on_user_message"],
            "timeout_ms": TIMEOUT_MS,
            "hello_timeout_ms": case.hello_ms,
        });
        faulty(plugins.path(), name, case.mode, manifest);
    }
    let options = LoadOptions::new(Some(plugins.path().to_path_buf()), None);
    let builder = Host::builder().load_plugins(&options).await;
    let mut rig = rig_from(builder, false, ApprovalMode::AskAboveRead);
    let loaded = rig
        .host
        .loaded_plugins()
        .iter()
        .map(|p| p.name().to_owned())
        .collect();
    rig.host.open().await.unwrap();
    rig.replies(vec![
        call("c1", "read_file", json!({"path": "notes.txt"})),
        text("first answer"),
        call("c2", "read_file", json!({"path": "notes.txt"})),
        text("second answer"),
        text("the summary"),
    ]);
    for question in QUESTIONS {
        let stop = rig.host.user_turn(UserInput::work(question)).await.unwrap();
        assert_eq!(stop, StopReason::Completed, "turn '{question}'");
        // A plugin that crashed restarts after its back-off: the next turn is the one that
        // shows it serving again, however fast this turn ended.
        until_restarted(&rig).await;
    }
    rig.host.command(SessionCommand::Compact).await.unwrap();
    rig.host.close().await.unwrap();
    let outcome = outcome_of(&rig, loaded);
    let Rig { host, dir, .. } = rig;
    shut_down(host).await;
    drop((dir, plugins));
    outcome
}

/// Waits (bounded) until no loaded plugin is between a crash and its restart.
async fn until_restarted(rig: &Rig) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while rig
        .host
        .loaded_plugins()
        .iter()
        .any(|p| p.run_state() == RunState::Restarting)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "a plugin never restarted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

fn outcome_of(rig: &Rig, loaded: Vec<String>) -> Outcome {
    let workspace = rig.workspace().display().to_string();
    let archive = rig.archive("s1");
    Outcome {
        records: rig
            .records("s1")
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect(),
        archive: archive
            .iter()
            .filter(|e| !matches!(e, ArchiveEntry::Note { .. }))
            .map(|e| {
                serde_json::to_string(e)
                    .unwrap()
                    .replace(&workspace, "<ws>")
            })
            .collect(),
        users: archive
            .iter()
            .filter_map(|e| match e {
                ArchiveEntry::UserMessage { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect(),
        notes: rig.notes("s1").iter().map(ToString::to_string).collect(),
        loaded,
    }
}

/// The user texts when the faulty plugin sits at `position`: every mark in load order, the
/// faulty plugin's missing from the calls it faulted.
fn expected_users(position: usize, expect: Expect) -> Vec<String> {
    QUESTIONS
        .iter()
        .enumerate()
        .map(|(turn, question)| {
            let faulty_ran = match expect {
                Expect::Skip { turn: faulted, .. } => faulted != turn,
                Expect::Served | Expect::Pinned { .. } => true,
                Expect::NotLoaded { .. } => false,
            };
            let mut text = (*question).to_owned();
            for (index, mark) in MARKS.iter().enumerate() {
                if index == position && faulty_ran {
                    text.push_str(&format!(" +{}", FAULTY[position]));
                }
                text.push_str(&format!(" +{mark}"));
            }
            if position == MARKS.len() && faulty_ran {
                text.push_str(&format!(" +{}", FAULTY[position]));
            }
            text
        })
        .collect()
}

/// The notes the fault calls for, for the faulty plugin `name`.
fn expected_notes(name: &str, expect: Expect) -> Vec<String> {
    match expect {
        Expect::Skip { reason, .. } => {
            vec![format!(
                "Plugin hook '{name}' user-message was skipped: {reason}"
            )]
        }
        Expect::Served => vec![],
        Expect::Pinned { reason } => vec![format!("Plugin '{name}' broke the protocol: {reason}")],
        Expect::NotLoaded { problem } => vec![problem.replace("{}", name)],
    }
}

/// Checks `case` with the faulty plugin in every load position against the session without it.
async fn check(case: Case) {
    let clean = session(None).await;
    assert!(clean.notes.is_empty(), "clean run notes: {:?}", clean.notes);
    assert_eq!(clean.loaded, MARKS);
    for (position, name) in FAULTY.iter().enumerate() {
        let at = format!("mode {} at {name}", case.mode);
        let run = session(Some((name, case))).await;
        let notes = match case.expect {
            // The note names the directory, which is only known inside the session's temp dir.
            Expect::NotLoaded { .. } => run.notes.iter().map(|n| without_dir(n, name)).collect(),
            _ => run.notes.clone(),
        };
        assert_eq!(notes, expected_notes(name, case.expect), "notes, {at}");
        assert_eq!(
            run.users,
            expected_users(position, case.expect),
            "user texts, {at}"
        );
        let mut loaded: Vec<&str> = MARKS.to_vec();
        if !matches!(case.expect, Expect::NotLoaded { .. }) {
            loaded.insert(position, name);
        }
        assert_eq!(run.loaded, loaded, "loaded plugins, {at}");
        let mark = format!(" +{name}");
        let strip = |lines: &[String]| -> Vec<String> {
            lines.iter().map(|line| line.replace(&mark, "")).collect()
        };
        assert_eq!(strip(&run.records), clean.records, "stored records, {at}");
        // A request's SHA-256 (kept for `hookline replay`) hashes the marks too, and a gateway
        // event's handler count counts the faulty plugin's handlers: compared apart from both.
        let unhashed = |lines: &[String]| -> Vec<String> {
            lines
                .iter()
                .map(|l| {
                    without_digits_after(&without_digits_after(l, "\"sha256\":\""), "\"calls\":")
                })
                .collect()
        };
        assert_eq!(
            unhashed(&strip(&run.archive)),
            unhashed(&clean.archive),
            "archive, {at}"
        );
    }
}

/// `line` with the hex of each `"sha256":"..."` field removed.
/// `line` without the hex digits after each `key` (a request's SHA-256, an event's handler
/// count).
fn without_digits_after(line: &str, key: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(key) {
        out.push_str(&rest[..at + key.len()]);
        rest = &rest[at + key.len()..];
        rest = rest.trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

/// `note` with the plugin directory `'.../<name>'` it names replaced by `'<name>'`, checking
/// that it names that directory.
fn without_dir(note: &str, name: &str) -> String {
    let Some((head, rest)) = note.split_once('\'') else {
        return note.to_owned();
    };
    let Some((dir, tail)) = rest.split_once('\'') else {
        return note.to_owned();
    };
    if Path::new(dir).file_name() != Some(name.as_ref()) || !Path::new(dir).is_absolute() {
        return note.to_owned();
    }
    format!("{head}'{name}'{tail}")
}

macro_rules! cases {
    ($( $test:ident: $case:expr; )*) => {
        $(
            #[actix_rt::test]
            async fn $test() {
                check($case).await;
            }
        )*
    };
}

cases! {
    output_that_is_not_the_protocol_is_skipped_with_one_note_in_every_position:
        skip("garbage", 0, "it wrote output that is not the protocol.");
    a_crash_mid_reply_is_skipped_with_one_note_and_the_plugin_restarts_in_every_position:
        skip("crash-once", 0, "it exited before it replied.");
    a_line_over_the_cap_is_skipped_with_one_note_in_every_position:
        skip("oversize", 0, "it wrote a line longer than 1048576 bytes.");
    an_output_flood_costs_one_call_and_one_note_in_every_position:
        skip("flood", 0, "it wrote output that is not the protocol.");
    a_reply_with_an_unknown_id_is_skipped_with_one_note_in_every_position:
        skip("unknown-id", 0, "it replied with an id it was never given.");
    a_repeated_reply_id_costs_no_call_and_one_note_in_every_position:
        Case {
            mode: "repeat-id",
            hello_ms: 5_000,
            expect: Expect::Pinned { reason: "it replied twice with the same id." },
        };
    a_reply_after_the_timeout_is_dropped_with_one_note_in_every_position:
        skip("reply-after-cancel", 0, "it timed out after 500 ms.");
    a_stderr_flood_costs_no_call_and_no_note_in_every_position:
        Case { mode: "stderr-flood", hello_ms: 5_000, expect: Expect::Served };
    a_missing_hello_skips_the_plugin_at_load_with_one_note_in_every_position:
        not_loaded("no-hello", 300,
            "Plugin directory '{}' was skipped: it did not say hello within 300 ms.");
    an_incompatible_hello_skips_the_plugin_at_load_with_one_note_in_every_position:
        not_loaded("bad-version", 5_000,
            "Plugin directory '{}' was skipped: it speaks protocol version 99, but this host speaks version 1.");
    an_exit_at_start_skips_the_plugin_at_load_with_one_note_in_every_position:
        not_loaded("exit-at-start", 5_000,
            "Plugin directory '{}' was skipped: it exited before saying hello (-v shows what it wrote to its stderr).");
}
