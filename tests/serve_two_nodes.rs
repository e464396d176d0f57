//! Two `hookline serve` nodes on one PostgreSQL store (issue 14 item 4): sessions run turns on
//! node A, A is killed with SIGKILL mid-turn, and node B resumes every session: each turn A
//! acknowledged is there, a turn cut off by the kill keeps the steps A stored and is closed by
//! B's resume (issue 22: an answer or a cut-off marker ends every turn, every call has its
//! result), and the sessions go on. Then a third node that held some of those sessions' leases while frozen with
//! SIGSTOP (B took them over when they expired) is continued with SIGCONT and tries to write:
//! its writes are refused (409 `lease-lost`), it drops the sessions, and nothing stored changes.
//! And a node given a bad database URL, or one that does not answer, stops with a sentence.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

mod cluster_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cluster_support::{assert_turns_whole, reader, stored, user_texts, Client, Node};
use hookline::messages::session::SessionId;

/// Sessions run at once on node A.
const SESSIONS: usize = 20;
/// Turns A must acknowledge before it is killed.
const BEFORE_KILL: usize = 60;
/// Sessions the stale node holds when it is frozen.
const STALE: usize = 3;
/// Turns each session runs on B after the takeover.
const TURNS_ON_B: usize = 2;
/// Short leases keep the takeover fast: renewed every 300 ms, expired 900 ms after the last.
const LEASE_TTL_MS: &str = "900";
/// The bound on the whole test's waits.
const DEADLINE: Duration = Duration::from_secs(45);

/// session key -> the user texts A acknowledged, and the text of a turn cut off by the kill.
#[derive(Default)]
struct Seen {
    acked: HashMap<String, Vec<String>>,
    cut_off: HashMap<String, String>,
}

/// Runs turns on `key` at `base` until the node stops answering.
async fn run_turns(
    client: Client,
    base: String,
    key: String,
    seen: Arc<Mutex<Seen>>,
    count: Arc<AtomicUsize>,
    enough: Arc<tokio::sync::Notify>,
) {
    for n in 0.. {
        let text = format!("{key} turn {n} on a");
        seen.lock()
            .unwrap()
            .cut_off
            .insert(key.clone(), text.clone());
        match client.turn(&base, &key, &text).await {
            Ok((200, _)) => {
                let mut seen = seen.lock().unwrap();
                seen.cut_off.remove(&key);
                seen.acked.entry(key.clone()).or_default().push(text);
            }
            Ok((status, body)) => panic!("node a refused a turn of {key}: {status} {body}"),
            // The node was killed: this turn was cut off.
            Err(_) => return,
        }
        if count.fetch_add(1, Ordering::SeqCst) + 1 == BEFORE_KILL {
            enough.notify_one();
        }
    }
}

fn node_args(name: &str) -> Vec<String> {
    [
        "--node",
        name,
        "--lease-ttl-ms",
        LEASE_TTL_MS,
        "--arbiters",
        "2",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn start(name: &str, dir: &std::path::Path, url: &str) -> Node {
    let args = node_args(name);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Node::start(name, dir, url, &args)
}

#[tokio::test]
async fn sessions_survive_a_killed_node_and_a_stale_node_cannot_write() {
    let url = pg::database_url();
    let started = Instant::now();
    let deadline = started + DEADLINE;
    let dir = tempfile::tempdir().unwrap();
    let db = reader(&url).await;
    let mut a = start("a", dir.path(), &url);
    let b = start("b", dir.path(), &url);
    let c = start("c", dir.path(), &url);
    let client = Client::new();

    // Node A: many sessions running turns at once, killed mid-turn.
    let keys: Vec<String> =
        futures::future::join_all((0..SESSIONS).map(|_| client.open(&a.url))).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let count = Arc::new(AtomicUsize::new(0));
    let enough = Arc::new(tokio::sync::Notify::new());
    let runners: Vec<_> = keys
        .iter()
        .map(|key| {
            tokio::spawn(run_turns(
                client.clone(),
                a.url.clone(),
                key.clone(),
                seen.clone(),
                count.clone(),
                enough.clone(),
            ))
        })
        .collect();
    tokio::time::timeout(DEADLINE, enough.notified())
        .await
        .expect("node a never acknowledged enough turns");
    a.kill();
    for runner in runners {
        tokio::time::timeout(DEADLINE, runner)
            .await
            .expect("a client hung after the kill")
            .unwrap();
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let acked: usize = seen.acked.values().map(Vec::len).sum();
    assert!(acked >= BEFORE_KILL, "{acked} turns acknowledged");
    let mut cut_stored = 0;

    // Node C takes some sessions once A's leases expire, then freezes holding them.
    let stale: Vec<&String> = keys.iter().take(STALE).collect();
    for key in &stale {
        let status = client.resume(&c.url, key, deadline).await;
        assert_eq!(status["key"], key.as_str());
    }
    c.pause();

    // Node B resumes every session: at once for A's expired leases, after the frozen node's
    // leases expire for the others.
    for key in &keys {
        let status = client.resume(&b.url, key, deadline).await;
        assert_eq!(status["key"], key.as_str(), "{status}");
        let records = stored(&db, key).await;
        let texts = user_texts(&records);
        let acked = seen.acked.get(key).cloned().unwrap_or_default();
        assert!(
            texts.starts_with(&acked),
            "session {key}: stored {texts:?}, acknowledged {acked:?}"
        );
        let extra = &texts[acked.len()..];
        match seen.cut_off.get(key) {
            Some(cut) => {
                assert!(
                    extra.is_empty() || extra == [cut.clone()],
                    "session {key}: beyond the acknowledged turns, {extra:?} (cut off: {cut})"
                );
                cut_stored += extra.len();
            }
            None => assert!(extra.is_empty(), "session {key}: {extra:?} never sent"),
        }
        assert_turns_whole(key, &records);
        let (status, shown) = client
            .get(&format!("{}/v1/sessions/{key}?limit=1000", b.url))
            .await
            .unwrap();
        assert_eq!(status, 200, "{shown}");
        assert_eq!(
            shown["records"]["total"].as_u64(),
            Some(records.len() as u64),
            "node b reads what is stored"
        );
    }
    eprintln!(
        "node a acknowledged {acked} turns; {} were cut off by the kill, {cut_stored} of them \
         committed whole before it",
        seen.cut_off.len()
    );
    // A node whose database answers is ready.
    let (status, body) = client.get(&format!("{}/readyz", b.url)).await.unwrap();
    assert_eq!(status, 200, "{body}");
    // ... and they go on there.
    for n in 0..TURNS_ON_B {
        let turns = keys.iter().map(|key| {
            let text = format!("{key} turn {n} on b");
            let (client, base) = (client.clone(), b.url.clone());
            async move {
                let (status, body) = client.turn(&base, key, &text).await.unwrap();
                assert_eq!(status, 200, "node b, {key}: {body}");
                (key, text)
            }
        });
        for (key, text) in futures::future::join_all(turns).await {
            let records = stored(&db, key).await;
            assert_eq!(user_texts(&records).last(), Some(&text));
            assert_turns_whole(key, &records);
        }
    }
    for key in &keys {
        let lease = db
            .lease(&SessionId::new(key.as_str()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(lease.holder.as_deref(), Some("b"), "{key}: {lease:?}");
    }

    // The frozen node comes back and tries to write the sessions it held: refused, dropped,
    // and nothing stored changes.
    let mut before = Vec::new();
    for key in &keys {
        before.push(stored(&db, key).await);
    }
    c.resume_process();
    for key in &stale {
        let (status, body) = client
            .turn(&c.url, key, "a stale write")
            .await
            .expect("the continued node answers");
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["error"]["code"], "lease-lost", "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(key.as_str()) && message.contains("another node"),
            "{message}"
        );
        // Dropped: a request for it on c now finds b holding it (issue 40 item 2: c would take
        // it over only if b were gone).
        let (status, body) = client
            .get(&format!("{}/v1/sessions/{key}", c.url))
            .await
            .unwrap();
        assert_eq!(status, 409, "node c dropped {key}: {body}");
        assert_eq!(body["error"]["code"], "session-leased", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("node b"),
            "{body}"
        );
    }
    for (key, before) in keys.iter().zip(&before) {
        assert_eq!(
            &stored(&db, key).await,
            before,
            "session {key} changed after the stale node's writes"
        );
    }
    // The node that dropped them may open them again once B lets go; B still holds them.
    let (status, body) = client
        .post(
            &format!("{}/v1/sessions/{}/resume", c.url, stale[0]),
            serde_json::json!({}),
        )
        .await
        .unwrap();
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "session-leased", "{body}");
    assert!(
        started.elapsed() < DEADLINE,
        "the test took {:?}",
        started.elapsed()
    );
    drop(b);
    drop(c);
}

#[test]
fn a_bad_url_or_an_unreachable_database_stops_the_start_with_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1 on loopback refuses connections; "notaport" does not parse.
    for (url, shown, why) in [
        (
            "postgres://u:secret@127.0.0.1:1/db",
            "postgres://u:***@127.0.0.1:1/db",
            "could not connect",
        ),
        (
            "postgres://u:secret@h:notaport/db",
            "postgres://u:***@h:notaport/db",
            "could not parse the database URL",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookline"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--store",
                url,
                "--workspace-root",
            ])
            .arg(dir.path())
            .env("HOOKLINE_HOME", dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "hookline serve: cannot use the PostgreSQL store at {shown}: "
            )) && stderr.contains(why),
            "{url}: {stderr}"
        );
        assert!(
            !stderr.contains("secret") && !stderr.contains("panicked"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "it never listened");
    }
}
