//! A WebSocket turn's `done` never comes without the turn's events (docs/serve.md,
//! "WebSocket"): the events go before it, and when the socket's bounded feed made it miss some
//! (`{"type":"lagged","missed":n}`), the `done` carries the turn's events in full (`events`).
//! Likewise the `done` of a turn's event stream (`Accept: text/event-stream`) after a `lagged`.
//!
//! The loss these tests reproduce (issue 49's load run: 1 WebSocket turn of 181,261 got `done`
//! without its `assistant` event): the socket's events were written by one task, the request's
//! answer by another, into one queue. When the queue was full both waited for room, the answer
//! behind the event being written and ahead of the turn's later events, so `done` overtook them.
//! Here the queue is filled on purpose: the client does not read (its receive buffer made
//! small), and requests of an unknown type fill the socket's outgoing queue with errors. That
//! race needs the server's tasks on two threads and was lost in about half the runs before the
//! fix (in round 1); the lag cases are deterministic (a feed of 16 events, a reader that reads
//! nothing until the turns are over) and failed in every run before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use hookline::host::gateway::Activity;
use hookline::host::provider::EchoProvider;
use hookline::messages::session::SessionId;
use serde_json::{json, Value};
use serve_support::{serve, Served, DEADLINE};
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// Requests of an unknown type sent to fill the socket's outgoing queue (256 messages) and what
/// the connection holds in flight (a small receive buffer on this side; the server's send
/// buffer, up to 4 MB): each is answered with an `error` naming the type, 16 KB, 16 MB in all.
const FILLERS: usize = 1_000;

/// A socket whose client reads nothing until told: its receive buffer as small as the kernel
/// allows, so the server's writes back up after a few kilobytes.
async fn slow_socket(served: &Served, key: &str) -> Socket {
    let tcp = tokio::net::TcpSocket::new_v4().unwrap();
    tcp.set_recv_buffer_size(4096).unwrap();
    let stream = tcp.connect(served.addr).await.unwrap();
    let (socket, _) =
        tokio_tungstenite::client_async(served.ws(&format!("/v1/sessions/{key}/ws")), stream)
            .await
            .unwrap();
    socket
}

/// Fills the server's outgoing queue for `socket` with error answers (nothing is read).
async fn fill(socket: &mut Socket) {
    let filler = json!({ "type": "x".repeat(16 * 1024) }).to_string();
    for _ in 0..FILLERS {
        socket.feed(Message::text(filler.clone())).await.unwrap();
    }
    socket.flush().await.unwrap();
}

/// Waits (bounded) until the session has run `turns` turns and is idle, then a moment for the
/// requests' tasks to hand their answers on (they get them as the session goes idle).
async fn until_turns(served: &Served, key: &str, turns: u64) {
    let handle = served.gateway().session(&SessionId::new(key)).unwrap();
    let mut status = handle.watch_status();
    tokio::time::timeout(
        DEADLINE,
        status.wait_for(|s| s.turns >= turns && s.activity == Activity::Idle),
    )
    .await
    .expect("the turns did not finish")
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// What a client reads, in order, from the server's messages (fillers' errors left out).
#[derive(Debug, Default)]
struct Read {
    /// Per turn `done`, in order: the assistant text of the events since the previous `done`,
    /// and the one in the `done`'s own `events` when it carries them.
    answers: Vec<(Option<String>, Option<String>)>,
    /// The `missed` of every `lagged`.
    missed: u64,
}

fn assistant_in(events: &[Value]) -> Option<String> {
    events
        .iter()
        .rev()
        .find(|e| e["event"] == "assistant")
        .and_then(|e| e["text"].as_str().map(str::to_owned))
}

/// Reads until `turns` turn `done`s came (bounded).
async fn read_turns(socket: &mut Socket, turns: usize) -> Read {
    let mut read = Read::default();
    let mut since: Vec<Value> = Vec::new();
    while read.answers.len() < turns {
        let next = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("no answer came")
            .expect("the socket ended")
            .unwrap();
        // A slow reader: the server's writes move on a message at a time.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let Message::Text(text) = next else { continue };
        let message: Value = serde_json::from_str(&text).unwrap();
        match message["type"].as_str() {
            Some("event") => since.push(message["event"].clone()),
            Some("lagged") => read.missed += message["missed"].as_u64().unwrap(),
            Some("done") if message["request"] == "turn" => {
                let carried = message["events"].as_array().and_then(|e| assistant_in(e));
                read.answers
                    .push((assistant_in(&std::mem::take(&mut since)), carried));
            }
            Some("error") if message["request"] == "unknown" => {}
            _ => panic!("unexpected: {message}"),
        }
    }
    read
}

/// The server's tasks on two worker threads, as `hookline serve` runs them: the request's task
/// and the forwarder run at once.
fn two_workers() -> actix_rt::SystemRunner {
    actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

#[test]
fn a_turns_done_comes_after_its_events_when_the_socket_is_backed_up() {
    two_workers().block_on(backed_up());
}

/// Rounds of the race below: each lost it three times in four before the fix.
const ROUNDS: u64 = 4;

async fn backed_up() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let mut socket = slow_socket(&served, &key).await;
    for round in 1..=ROUNDS {
        fill(&mut socket).await;
        let text = format!("r{round}");
        socket
            .send(Message::text(
                json!({"type": "turn", "text": text}).to_string(),
            ))
            .await
            .unwrap();
        until_turns(&served, &key, round).await;
        let read = read_turns(&mut socket, 1).await;
        assert_eq!(read.missed, 0, "this turn's few events fit the feed");
        assert_eq!(
            read.answers[0].0,
            Some(format!("echo: {text} (be brief)")),
            "round {round}: the turn's `done` came before its `assistant` event: {read:?}"
        );
    }
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_turn_whose_events_the_socket_missed_gets_them_with_its_done() {
    // The smallest feed: 16 events.
    // Served on the test's one thread: the server's reader does not drain the fillers while
    // the client writes them, so the outgoing queue is full when the turns run.
    let served = serve(
        Arc::new(EchoProvider::new()),
        |limits| limits.live_capacity = 16,
        |config| config.serve_on_shards = false,
    )
    .await;
    let key = served.open().await;
    let mut socket = slow_socket(&served, &key).await;
    fill(&mut socket).await;
    // Five turns' events do not fit a feed of 16 while nothing is read: the first turns' are
    // overwritten, their `assistant` among them.
    for i in 1..=5 {
        let turn = json!({"type": "turn", "text": format!("t{i}")}).to_string();
        socket.send(Message::text(turn)).await.unwrap();
    }
    until_turns(&served, &key, 5).await;
    let read = read_turns(&mut socket, 5).await;
    assert!(read.missed > 0, "the feed should have lagged: {read:?}");
    for (i, (streamed, carried)) in read.answers.iter().enumerate() {
        let expected = format!("echo: t{} (be brief)", i + 1);
        // A client takes the `done`'s events when it carries them, else those before it.
        let answer = carried.as_ref().or(streamed.as_ref());
        assert_eq!(
            answer,
            Some(&expected),
            "turn {} ended without its answer ({} events missed): {read:?}",
            i + 1,
            read.missed
        );
    }
    served.shutdown().await;
}

/// The raw body of a chunked HTTP/1.1 response read from `tcp` until it holds `until` (bounded).
async fn read_chunked_until(tcp: &mut tokio::net::TcpStream, until: &str) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut raw: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let body = dechunk(&raw);
        if let Some(at) = body.find(until) {
            // The event's data line, whole.
            if body[at..].contains("\n\n") {
                return body;
            }
        }
        let n = tokio::time::timeout(DEADLINE, tcp.read(&mut buf))
            .await
            .expect("the stream stalled")
            .unwrap();
        assert!(n > 0, "the stream ended before '{until}'");
        raw.extend_from_slice(&buf[..n]);
    }
}

/// The body of a chunked response so far (headers and chunk sizes left out).
fn dechunk(raw: &[u8]) -> String {
    let Some(start) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return String::new();
    };
    let mut rest = &raw[start + 4..];
    let mut body = Vec::new();
    while let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[..end]).unwrap().trim(), 16).unwrap();
        let from = end + 2;
        if rest.len() < from + size {
            break;
        }
        body.extend_from_slice(&rest[from..from + size]);
        rest = &rest[(from + size + 2).min(rest.len())..];
    }
    String::from_utf8_lossy(&body).into_owned()
}

#[actix_rt::test]
async fn an_event_stream_that_missed_its_turns_events_gets_them_with_its_done() {
    let served = serve(
        Arc::new(EchoProvider::new()),
        |limits| limits.live_capacity = 16,
        |config| config.body_limit = 16 * 1024 * 1024,
    )
    .await;
    let key = served.open().await;
    // A turn whose events (its text, 2 MB, in several of them) back up the stream of a client
    // that reads nothing yet.
    let text = "a".repeat(2 * 1024 * 1024);
    let body = json!({ "text": text }).to_string();
    let tcp = tokio::net::TcpSocket::new_v4().unwrap();
    tcp.set_recv_buffer_size(4096).unwrap();
    let mut stream = tcp.connect(served.addr).await.unwrap();
    let request = format!(
        "POST /v1/sessions/{key}/turns HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        served.addr,
        body.len()
    );
    tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
        .await
        .unwrap();
    // Three more turns run after it meanwhile: their events overwrite its last ones (its
    // `assistant` among them) in the feed of 16 the stream has not read.
    until_turns(&served, &key, 1).await;
    let path = format!("/v1/sessions/{key}/turns");
    for i in 1..=3 {
        let (status, answer) = served.post(&path, json!({ "text": format!("o{i}") })).await;
        assert_eq!(status, 200, "{answer}");
    }
    let body = read_chunked_until(&mut stream, "event: done\n").await;
    assert!(
        body.contains("event: lagged"),
        "the stream should have lagged"
    );
    let data = body[body.find("event: done\n").unwrap()..]
        .lines()
        .nth(1)
        .and_then(|l| l.strip_prefix("data: "))
        .expect("no data in done");
    let done: Value = serde_json::from_str(data).unwrap();
    let events = done["events"]
        .as_array()
        .expect("done without the turn's events");
    assert_eq!(
        assistant_in(events),
        Some(format!("echo: {text} (be brief)")),
        "the turn's answer is not in its done"
    );
    served.shutdown().await;
}
