//! Shared by the replacement-under-load tests (issue 49): `tests/serve_replace_load.rs` (one
//! server on the file store) and `tests/serve_replace_rolling.rs` (two PostgreSQL nodes behind
//! HAProxy). Server processes and their plugin children, the plugin sets A and B, clients that
//! run turns without pause (JSON, event streams, WebSockets reconnected on 1012), turns that wait
//! for an approval across a replacement, and the figures reported.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::cluster_support;

/// A bound on every wait.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The plugin of both sets: appends ` [SET]` to every user message and rewrites a
/// `write_file` call's content to `SET`.
pub const MARKER: &str = r#"
import json, sys
SET = "@SET@"
print(json.dumps({"type": "hello", "protocol": 1, "hooks": ["on_user_message", "on_tool_call"]}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "goodbye":
        break
    if m.get("type") != "hook":
        continue
    v = m["value"]
    if m["hook"] == "on_user_message":
        v["text"] = v["text"] + " [" + SET + "]"
    elif m["hook"] == "on_tool_call" and v.get("name") == "write_file":
        v["arguments"]["content"] = SET
    else:
        print(json.dumps({"type": "keep", "id": m["id"]}), flush=True)
        continue
    print(json.dumps({"type": "replace", "id": m["id"], "value": v}), flush=True)
"#;

/// One server process: started by the test (a child) or by a server on SIGHUP (a pid).
pub struct Server {
    pub pid: i32,
    pub child: Option<Child>,
    pub log: PathBuf,
}

impl Server {
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (bounded) for it to exit; its exit code when it was our child.
    pub fn exited(&mut self) -> Option<i32> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            match &mut self.child {
                Some(child) => {
                    if let Some(status) = child.try_wait().unwrap() {
                        return status.code();
                    }
                }
                None if !alive(self.pid) => return None,
                None => {}
            }
            assert!(
                Instant::now() < deadline,
                "pid {} did not exit; log:\n{}",
                self.pid,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if alive(self.pid) {
            let _ = kill(Pid::from_raw(self.pid), Signal::SIGKILL);
        }
        if let Some(child) = &mut self.child {
            let _ = child.wait();
        }
    }
}

/// Whether process `id` runs (a zombie does not).
pub fn alive(id: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{id}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// The processes whose parent is `parent`.
pub fn children(parent: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(id) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(parent) && alive(id) {
            found.push(id);
        }
    }
    found
}

/// Resident memory of `pid`, in KiB: all of it (`VmRSS`).
pub fn rss_kib(pid: i32) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// Resident anonymous memory of `pid` (`RssAnon`: the heap and stacks, without the binary's and
/// libraries' pages, which a debug build has many of), in KiB.
pub fn anon_kib(pid: i32) -> u64 {
    status_kib(pid, "RssAnon:")
}

/// How often [`rss_median`] and [`rss_settled`] read a process's resident memory.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// Resident memory of `pid` (`VmRSS`) over a window of running: the median of `samples`
/// readings [`SAMPLE_EVERY`] apart, in KiB. One reading moves with the allocator's moment (a
/// burst of turns, a thread's arena); the median of a window does not.
pub fn rss_median(pid: i32, samples: usize) -> u64 {
    let mut taken: Vec<u64> = (0..samples.max(1))
        .map(|n| {
            if n > 0 {
                std::thread::sleep(SAMPLE_EVERY);
            }
            rss_kib(pid)
        })
        .collect();
    taken.sort_unstable();
    taken[taken.len() / 2]
}

/// Resident memory of `pid` once it stopped falling: the medians of consecutive windows of
/// `samples` readings ([`rss_median`]), until one is no more than 1% under the one before it, or
/// `windows` windows were taken (a bounded wait). Returns the last median and the windows taken.
/// A successor's memory peaks while it takes sessions over and falls for a few seconds after.
pub fn rss_settled(pid: i32, samples: usize, windows: usize) -> (u64, usize) {
    let mut last = rss_median(pid, samples);
    for taken in 2..=windows.max(2) {
        let next = rss_median(pid, samples);
        if next * 100 >= last * 99 {
            return (next, taken);
        }
        last = next;
    }
    (last, windows.max(2))
}

/// A number field of `/proc/<pid>/status` (a size there is in KiB).
pub fn status_kib(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// One acknowledged turn.
pub struct Turn {
    pub session: String,
    pub sent: String,
    pub marker: String,
    pub started: Instant,
    pub took: Duration,
}

/// What the clients saw.
#[derive(Default)]
pub struct Seen {
    pub turns: Mutex<Vec<Turn>>,
    pub failed: Mutex<Vec<String>>,
    /// Set by [`hold_turns`]: the clients start no turn until it is cleared.
    pub paused: AtomicBool,
    /// Clients past the pause check, in a turn (or about to start one).
    pub in_flight: AtomicUsize,
}

/// A client's turn, counted in [`Seen::in_flight`] until it is dropped.
struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits (polling; the clients are tasks) until `seen` is not paused, then counts a turn in
/// flight; `None` once `stop` is set.
async fn unpaused<'a>(seen: &'a Seen, stop: &AtomicBool) -> Option<Busy<'a>> {
    loop {
        // Counted before the pause is read, and both SeqCst: `hold_turns`, which sets the pause
        // before it reads the count, sees this turn or this client sees the pause.
        seen.in_flight.fetch_add(1, Ordering::SeqCst);
        let busy = Busy(&seen.in_flight);
        if stop.load(Ordering::Acquire) {
            return None;
        }
        if !seen.paused.load(Ordering::SeqCst) {
            return Some(busy);
        }
        drop(busy);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Stops the clients starting turns and waits (bounded) until every turn in flight ended, so a
/// server's memory is read with the same sessions and no request running. [`release_turns`]
/// lets them go on.
pub fn hold_turns(seen: &Seen) {
    seen.paused.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + DEADLINE;
    while seen.in_flight.load(Ordering::SeqCst) > 0 {
        assert!(Instant::now() < deadline, "turns still in flight");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Lets the clients start turns again after [`hold_turns`].
pub fn release_turns(seen: &Seen) {
    seen.paused.store(false, Ordering::SeqCst);
}

/// The marker in an answer `echo: t7 [A]`: the sets' markers it carries.
pub fn markers(answer: &str) -> Vec<String> {
    answer
        .match_indices(" [")
        .filter_map(|(at, _)| {
            let rest = &answer[at + 2..];
            rest.find(']').map(|end| rest[..end].to_owned())
        })
        .collect()
}

/// The assistant's text from a JSON turn answer or an event stream.
pub fn assistant_text(body: &str, streaming: bool) -> Option<String> {
    let events: Vec<serde_json::Value> = if streaming {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    } else {
        let answer: serde_json::Value = serde_json::from_str(body).ok()?;
        answer["events"].as_array()?.clone()
    };
    events
        .iter()
        .rev()
        .find(|e| e["event"] == "assistant")
        .and_then(|e| e["text"].as_str().map(str::to_owned))
}

/// One client per session: turns without pause until `stop`, each on a new connection (or, with
/// `keep_alive`, on a kept-alive one while the server keeps it); session `n` with `n % 4 == 1`
/// asks for event streams, `n % 4 == 3` runs its turns over a WebSocket, the others as JSON.
pub async fn client(
    base: String,
    n: usize,
    keep_alive: bool,
    stop: Arc<AtomicBool>,
    seen: Arc<Seen>,
) {
    let mut http = reqwest::Client::builder().timeout(DEADLINE);
    if !keep_alive {
        http = http.pool_max_idle_per_host(0);
    }
    let http = http.build().unwrap();
    let opened = http
        .post(format!("{base}/v1/sessions"))
        .json(&serde_json::json!({}))
        .send()
        .await;
    let key = match opened {
        Ok(r) if r.status() == 201 => {
            let body: serde_json::Value = r.json().await.unwrap();
            body["key"].as_str().unwrap().to_owned()
        }
        other => {
            seen.failed.lock().unwrap().push(format!("open: {other:?}"));
            return;
        }
    };
    // Who failed, in the failures: the session, its client and how it connects.
    let who = format!(
        "{key} (c{n}{})",
        if keep_alive { ", kept alive" } else { "" }
    );
    let streaming = n % 4 == 1;
    let mut socket: Option<Socket> = None;
    let mut i = 0;
    while let Some(_busy) = unpaused(&seen, &stop).await {
        i += 1;
        let sent = format!("c{n} t{i}");
        if n % 4 == 3 {
            let started = Instant::now();
            match ws_turn(&mut socket, &base, &key, &sent).await {
                Ok(text) => {
                    let marker = text.as_deref().map(markers).unwrap_or_default();
                    let one = text.is_none()
                        || (marker.len() == 1
                            && text
                                .as_deref()
                                .is_some_and(|t| t.starts_with(&format!("echo: {sent} ["))));
                    if !one {
                        seen.failed
                            .lock()
                            .unwrap()
                            .push(format!("{who}: '{sent}' answered {text:?}"));
                        continue;
                    }
                    seen.turns.lock().unwrap().push(Turn {
                        session: key.clone(),
                        sent,
                        // A replayed answer carries no events: its set is unknown here.
                        marker: marker.first().cloned().unwrap_or_default(),
                        started,
                        took: started.elapsed(),
                    });
                }
                Err(error) => seen.failed.lock().unwrap().push(format!("{who}: {error}")),
            }
            continue;
        }
        let mut request = http
            .post(format!("{base}/v1/sessions/{key}/turns"))
            .json(&serde_json::json!({ "text": sent }));
        if streaming {
            request = request.header("accept", "text/event-stream");
        }
        let started = Instant::now();
        let answer = match request.send().await {
            Ok(r) if r.status() == 200 => r.text().await.map_err(|e| e.to_string()),
            Ok(r) => Err(format!(
                "{}: {}",
                r.status(),
                r.text().await.unwrap_or_default()
            )),
            Err(e) => Err(format!("{e:?}")),
        };
        let took = started.elapsed();
        match answer.map(|body| assistant_text(&body, streaming).ok_or(body)) {
            Ok(Ok(text)) => {
                let found = markers(&text);
                if found.len() != 1 || !text.starts_with(&format!("echo: {sent} [")) {
                    seen.failed
                        .lock()
                        .unwrap()
                        .push(format!("{who}: '{sent}' answered '{text}'"));
                    continue;
                }
                seen.turns.lock().unwrap().push(Turn {
                    session: key.clone(),
                    sent,
                    marker: found[0].clone(),
                    started,
                    took,
                });
            }
            Ok(Err(body)) => seen
                .failed
                .lock()
                .unwrap()
                .push(format!("{who}: no answer in {body}")),
            Err(error) => seen.failed.lock().unwrap().push(format!("{who}: {error}")),
        }
    }
}

/// A session's WebSocket, opened again when the server closes it (1012 once it moved).
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One turn over the session's WebSocket, with an idempotency key: when the socket closes
/// before the turn's `done` (1012: the server was replaced) or the turn is answered
/// `session-moved` (it reached the old server while it hands over), it connects again and sends
/// the same turn, which runs once (a replay answers without the events). The assistant's text,
/// or `None` for a replayed answer.
pub async fn ws_turn(
    socket: &mut Option<Socket>,
    base: &str,
    key: &str,
    sent: &str,
) -> Result<Option<String>, String> {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let url = format!("{}/v1/sessions/{key}/ws", base.replacen("http", "ws", 1));
    let request = serde_json::json!({"type": "turn", "text": sent, "key": sent}).to_string();
    for _ in 0..50 {
        if socket.is_none() {
            let (opened, _) = tokio_tungstenite::connect_async(&url)
                .await
                .map_err(|e| format!("ws connect: {e}"))?;
            *socket = Some(opened);
        }
        let ws = socket.as_mut().unwrap();
        if ws.send(Message::text(request.clone())).await.is_err() {
            *socket = None;
            continue;
        }
        let mut text = None;
        // Events this socket missed (its forwarder fell behind the session's feed): said in a
        // failure; the turn's `done` then carries its events.
        let mut missed = 0;
        loop {
            match tokio::time::timeout(DEADLINE, ws.next()).await {
                Ok(Some(Ok(Message::Text(frame)))) => {
                    let message: serde_json::Value = serde_json::from_str(&frame).unwrap();
                    match message["type"].as_str() {
                        Some("lagged") => missed += message["missed"].as_u64().unwrap_or(0),
                        Some("event") if message["event"]["event"] == "assistant" => {
                            text = message["event"]["text"].as_str().map(str::to_owned);
                        }
                        Some("done") if message["request"] == "turn" => {
                            // A socket that missed events gets the turn's in its `done`.
                            if let Some(events) = message["events"].as_array() {
                                if let Some(answer) = events
                                    .iter()
                                    .rev()
                                    .find(|e| e["event"] == "assistant")
                                    .and_then(|e| e["text"].as_str())
                                {
                                    text = Some(answer.to_owned());
                                }
                            }
                            return if message["replayed"] == true {
                                Ok(None)
                            } else {
                                text.map(Some).ok_or_else(|| {
                                    format!("no answer ({missed} events missed): {message}")
                                })
                            };
                        }
                        // The old server hands the session over: this socket is its; the
                        // request sent again on a new one reaches the successor.
                        Some("error") if message["error"]["code"] == "session-moved" => {
                            *socket = None;
                            // A client's back-off: the old server's listener may still be
                            // the one a new connection reaches for a moment.
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            break;
                        }
                        Some("error") => return Err(format!("ws: {message}")),
                        _ => {}
                    }
                }
                Ok(Some(Ok(Message::Close(frame)))) => {
                    let code = frame.map(|f| u16::from(f.code));
                    if code != Some(1012) {
                        return Err(format!("ws closed with {code:?}"));
                    }
                    *socket = None;
                    break;
                }
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(_)) | None) => {
                    *socket = None;
                    break;
                }
                Err(_) => return Err("ws: no answer within the deadline".into()),
            }
        }
    }
    Err("ws: moved or closed 50 times in a row".into())
}

/// Turns that wait for an approval across a replacement: each opens a session and asks for a
/// `write_file` call the operator must allow; their requests run on the old server.
pub struct Waiting {
    pub keys: Vec<String>,
    pub files: Vec<String>,
    pub requests: Vec<tokio::task::JoinHandle<(u16, serde_json::Value)>>,
}

/// Starts `count` turns that wait for an approval, sent to `base`, on sessions `node` holds (the
/// server about to be replaced; `base` itself, or a balancer in front of it), and waits
/// (bounded) until `node` asks all of them.
pub fn ask_approvals(
    runtime: &tokio::runtime::Runtime,
    base: &str,
    node: &str,
    swap: usize,
    count: usize,
) -> Waiting {
    let client = cluster_support::Client::new();
    let mut waiting = Waiting {
        keys: Vec::new(),
        files: Vec::new(),
        requests: Vec::new(),
    };
    // Behind a balancer a new session lands on either node: open until `count` are on `node`.
    let mut opened = 0;
    while waiting.keys.len() < count {
        opened += 1;
        assert!(opened <= count * 20, "{node} never got {count} sessions");
        let key = runtime.block_on(client.open(base));
        let held = runtime.block_on(client.get(&format!("{node}/v1/sessions/{key}")));
        if !matches!(held, Ok((200, _))) {
            continue;
        }
        let file = format!("approved-{swap}-{}.txt", waiting.keys.len());
        let text = format!(r#"call write_file {{"path":"{file}","content":"unhooked"}}"#);
        let (client, base, session) = (client.clone(), base.to_owned(), key.clone());
        waiting
            .requests
            .push(runtime.spawn(async move { client.turn(&base, &session, &text).await.unwrap() }));
        waiting.keys.push(key);
        waiting.files.push(file);
    }
    let deadline = Instant::now() + DEADLINE;
    while pending_approvals(runtime, node, &waiting.keys).len() < count {
        assert!(
            Instant::now() < deadline,
            "the approvals were never all asked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    waiting
}

/// The approvals waiting for `keys`' sessions: session key to (call id, deadline).
pub fn pending_approvals(
    runtime: &tokio::runtime::Runtime,
    base: &str,
    keys: &[String],
) -> HashMap<String, (String, u64)> {
    let (_, body) = runtime
        .block_on(cluster_support::Client::new().get(&format!("{base}/v1/approvals")))
        .unwrap();
    body["approvals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| keys.iter().any(|k| a["session"] == k.as_str()))
        .map(|a| {
            (
                a["session"].as_str().unwrap().to_owned(),
                (
                    a["callId"].as_str().unwrap().to_owned(),
                    a["deadlineMs"].as_u64().unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// After the replacement: the old requests ended `turn-moved`; the successor (listed at `node`)
/// asks the same approvals again (same call ids and deadlines); each is answered once through
/// `base`, and each call runs once with the content the old plugin set wrote into it.
pub fn answer_after_swap(
    runtime: &tokio::runtime::Runtime,
    base: &str,
    node: &str,
    root: &Path,
    waiting: Waiting,
    asked: &HashMap<String, (String, u64)>,
    old_set: &str,
) {
    for request in waiting.requests {
        let (status, body) = runtime.block_on(request).unwrap();
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (202, Some("turn-moved")),
            "{body}"
        );
    }
    let deadline = Instant::now() + DEADLINE;
    let again = loop {
        let again = pending_approvals(runtime, node, &waiting.keys);
        if again.len() == waiting.keys.len() {
            break again;
        }
        assert!(
            Instant::now() < deadline,
            "asked again: {again:?} of {asked:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(&again, asked, "the same call ids and deadlines");
    let client = cluster_support::Client::new();
    for (key, (call, _)) in &again {
        let url = format!("{base}/v1/sessions/{key}/approvals/{call}");
        let allow = serde_json::json!({"decision": "allow"});
        let (status, body) = runtime.block_on(client.post(&url, allow.clone())).unwrap();
        assert_eq!(status, 200, "{body}");
        let (status, _) = runtime.block_on(client.post(&url, allow)).unwrap();
        assert_eq!(status, 404, "answered once");
    }
    for file in &waiting.files {
        let path = root.join(file);
        let deadline = Instant::now() + DEADLINE;
        // write_file creates the file, then writes it: an empty file is one being written.
        let written = loop {
            match std::fs::read_to_string(&path) {
                Ok(text) if !text.is_empty() => break text,
                _ => {}
            }
            assert!(Instant::now() < deadline, "{file} never written");
            std::thread::sleep(Duration::from_millis(20));
        };
        // As stored on the old server: its plugin set rewrote the content.
        assert_eq!(written, old_set, "{file}");
    }
}

/// The p99 of `took` over `turns`.
pub fn p99(mut took: Vec<Duration>) -> Duration {
    if took.is_empty() {
        return Duration::ZERO;
    }
    took.sort();
    took[(took.len() * 99 / 100).min(took.len() - 1)]
}

/// The p99 turn latency of the turns that overlapped a replacement (one of `windows`) beside
/// the p99 of the others, as the tests report it.
pub fn p99_during_and_outside(turns: &[Turn], windows: &[(Instant, Instant)]) -> String {
    let (during, outside): (Vec<&Turn>, Vec<&Turn>) = turns.iter().partition(|t| {
        let ended = t.started + t.took;
        windows
            .iter()
            .any(|(from, to)| t.started < *to && ended > *from)
    });
    format!(
        "p99 during replacements {} ms ({} turns), outside {} ms ({} turns)",
        p99(during.iter().map(|t| t.took).collect()).as_millis(),
        during.len(),
        p99(outside.iter().map(|t| t.took).collect()).as_millis(),
        outside.len(),
    )
}

/// Waits (bounded) until `seen` has `more` turns past `now`.
pub fn wait_turns(seen: &Seen, more: usize) {
    let target = seen.turns.lock().unwrap().len() + more;
    let deadline = Instant::now() + DEADLINE;
    while seen.turns.lock().unwrap().len() < target {
        assert!(
            Instant::now() < deadline,
            "no traffic: {:?}",
            seen.failed.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Each session's acknowledged turns, as the prefix of their stored user text (`c3 t7 [`: the
/// marker of a replayed WebSocket turn is not known here), in the order acknowledged.
pub fn acked_texts(turns: &[Turn]) -> HashMap<&str, Vec<String>> {
    let mut acked: HashMap<&str, Vec<String>> = HashMap::new();
    for turn in turns {
        acked
            .entry(turn.session.as_str())
            .or_default()
            .push(format!("{} [", turn.sent));
    }
    acked
}

/// Every one of `texts` (from [`acked_texts`]) is among `session`'s `stored` user texts, in order.
pub fn assert_in_order(session: &str, stored: &[&str], texts: &[String]) {
    let mut at = 0;
    for text in texts {
        let found = stored[at..]
            .iter()
            .position(|s| s.starts_with(text.as_str()));
        assert!(
            found.is_some(),
            "{session}: '{text}' not stored after position {at}"
        );
        at += found.unwrap_or_default() + 1;
    }
}
