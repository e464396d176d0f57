//! The `SessionStore` contract (issue 14 items 1 to 3, issue 11 item 5), one generic body per
//! promise, run against both backends: `FileStore` on a temporary directory and `PgStore` on a
//! real PostgreSQL (`support/pg.rs`: a throwaway cluster, or `HOOKLINE_TEST_DATABASE_URL`).
//! Then what only PostgreSQL has: migrations, lease expiry, renewal, takeover and fencing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use hookline::host::store::{
    AnsweredApprovals, ArchivePage, ArchiveSummary, Claimed, CommitStats, FileStore,
    FileStoreOptions, IdempotencyKey, KeyClaim, KeyEntry, KeyOutcome, KeyState, NewSession,
    SessionStore, StoreError,
};
use hookline::messages::cut_off::{open_turn, CutOff};
use hookline::messages::record::{ArchiveEntry, Record};
use hookline::messages::session::{ApprovalMode, SessionId, SessionInfo};
use hookline::postgres::{migrate_url, PgStore, PgStoreOptions};

fn new_session() -> NewSession {
    NewSession {
        workspace_root: "/w".into(),
        approval_mode: ApprovalMode::AskAboveRead,
        model: None,
        mode: None,
        owner: None,
    }
}

fn user(text: &str) -> Record {
    Record::User {
        text: text.into(),
        images: Vec::new(),
    }
}

fn assistant(text: &str) -> Record {
    Record::Assistant { text: text.into() }
}

fn finished() -> ArchiveEntry {
    ArchiveEntry::TurnFinished {
        stop_reason: hookline::messages::user::StopReason::Completed,
    }
}

fn typed(text: &str) -> ArchiveEntry {
    ArchiveEntry::UserMessage {
        text: text.into(),
        original: None,
        images: Vec::new(),
    }
}

fn tool_call(id: &str) -> Record {
    Record::ToolCall {
        call_id: id.into(),
        name: "write_file".into(),
        arguments: serde_json::json!({"path": "a.txt"}),
    }
}

fn allowed(id: &str) -> ArchiveEntry {
    use hookline::messages::approval::{Authority, Classification, Risk};
    use hookline::messages::record::{ApprovalRecord, Decider, Decision};
    ArchiveEntry::Approval(ApprovalRecord {
        call_id: id.into(),
        tool: "write_file".into(),
        classification: Classification {
            risk: Risk::Write,
            authority: Authority::Workspace,
            summary: "write_file a.txt".into(),
            requires_prompt: false,
        },
        decision: Decision::Allow,
        decided_by: Decider::Policy,
        answered_by: None,
    })
}

fn result(id: &str) -> Record {
    Record::ToolResult {
        call_id: id.into(),
        name: "write_file".into(),
        text: "wrote a.txt".into(),
        images: Vec::new(),
        success: true,
    }
}

/// A turn's durable steps as the host appends them (issue 22): the user message, then the call
/// with its approval before the tool runs.
async fn turn_steps(w: &mut Box<dyn hookline::host::store::SessionWriter>) {
    w.append(&[user("write it")], &[typed("write it")])
        .await
        .unwrap();
    w.append(&[tool_call("call-1")], &[allowed("call-1")])
        .await
        .unwrap();
}

/// Issue 22: the steps of a turn cut off after its tool started are kept as appended, on another
/// process or node too, and say where it was cut off; the closing the host appends reads back.
async fn cut_off_turn(b: &Backend) {
    let (info, mut w) = b.store.create(new_session(), &[]).await.unwrap();
    turn_steps(&mut w).await;
    // The process dies here: nothing more is written (released, so another can open it now).
    w.release().await.unwrap();
    let (opened, mut w) = b.other.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(opened.records, vec![user("write it"), tool_call("call-1")]);
    let open = open_turn(&opened.records, &opened.summary.last_turn).expect("the turn is open");
    // The open turn found from the summary is the one the whole archive holds.
    let whole = b.other.read(&info.session_id).await.unwrap().unwrap();
    assert_eq!(
        open_turn(&whole.records, &whole.archive).as_ref(),
        Some(&open)
    );
    assert_eq!(opened.summary, whole.summary());
    assert_eq!(
        open.at,
        CutOff::ToolStarted {
            call_id: "call-1".into(),
            name: "write_file".into(),
        }
    );
    let stop = ArchiveEntry::TurnFinished {
        stop_reason: hookline::messages::user::StopReason::Interrupted,
    };
    w.append(&open.closing(), std::slice::from_ref(&stop))
        .await
        .unwrap();
    let read = b.store.read(&info.session_id).await.unwrap().unwrap();
    assert_eq!(read.records.len(), 4, "{:?}", read.records);
    assert!(matches!(read.records[3], Record::CutOff { .. }));
    assert_eq!(open_turn(&read.records, &read.archive), None, "closed");
    w.release().await.unwrap();
}

/// A store under test, a second independent store on the same data (another process or node),
/// and its commit counters.
struct Backend {
    store: Arc<dyn SessionStore>,
    other: Arc<dyn SessionStore>,
    stats: Box<dyn Fn() -> CommitStats>,
    _dir: Option<tempfile::TempDir>,
}

fn file_backend() -> Backend {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path(), FileStoreOptions::default()).unwrap();
    let other = FileStore::open(dir.path(), FileStoreOptions::default()).unwrap();
    let stats = store.clone();
    Backend {
        store: Arc::new(store),
        other: Arc::new(other),
        stats: Box::new(move || stats.stats()),
        _dir: Some(dir),
    }
}

fn pg_options(node: &str) -> PgStoreOptions {
    PgStoreOptions {
        node: node.into(),
        migrate: true,
        ..PgStoreOptions::default()
    }
}

async fn pg_backend() -> Backend {
    let url = pg::database_url();
    let store = PgStore::connect(&url, pg_options("node-a")).await.unwrap();
    let other = PgStore::connect(&url, pg_options("node-b")).await.unwrap();
    let stats = store.clone();
    Backend {
        store: Arc::new(store),
        other: Arc::new(other),
        stats: Box::new(move || stats.stats()),
        _dir: None,
    }
}

/// What a session holds after the same writes on any backend.
async fn round_trip(b: &Backend) -> (Vec<Record>, Vec<ArchiveEntry>) {
    let (info, mut w) = b
        .store
        .create(new_session(), &[user("first")])
        .await
        .unwrap();
    assert_eq!(w.session_id(), &info.session_id);
    w.append(&[assistant("a1")], &[finished()]).await.unwrap();
    let started = ArchiveEntry::SessionStarted(SessionInfo {
        session_id: SessionId::from("fixed"),
        ..info.info()
    });
    w.append(&[], std::slice::from_ref(&started)).await.unwrap();
    w.append(&[user("second"), assistant("a2")], &[])
        .await
        .unwrap();
    // Issue 26: the facts a resume restores (approval mode as last set, model, turn mode)
    // read back as written, on this store and on another process or node.
    let mut changed = info.clone();
    changed.approval_mode = ApprovalMode::AskAll;
    changed.model = Some("claude".into());
    changed.mode = Some(hookline::messages::prompt::PromptMode::Plan);
    w.set_facts(&changed).await.unwrap();
    let expect_records = vec![
        user("first"),
        assistant("a1"),
        user("second"),
        assistant("a2"),
    ];
    let expect_archive = vec![finished(), started];
    let read = b.store.read(&info.session_id).await.unwrap().unwrap();
    assert_eq!(read.facts, changed);
    assert_eq!(read.records, expect_records);
    assert_eq!(read.archive, expect_archive);
    w.release().await.unwrap();
    let (opened, w) = b.other.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(opened.facts, changed);
    assert_eq!(opened.records, expect_records);
    assert_eq!(
        opened.summary,
        expect_archive.iter().cloned().collect::<ArchiveSummary>()
    );
    assert_eq!(opened.summary.entries, 2);
    assert!(opened.repaired.is_empty(), "{:?}", opened.repaired);
    assert!(b.store.sessions().await.unwrap().contains(&info.session_id));
    w.release().await.unwrap();
    let reread = b.other.read(&info.session_id).await.unwrap().unwrap();
    assert_eq!(reread.archive, expect_archive);
    (opened.records, reread.archive)
}

async fn compaction(b: &Backend) {
    let (info, mut w) = b.store.create(new_session(), &[user("u")]).await.unwrap();
    w.append(&[assistant("a"), user("v")], &[finished()])
        .await
        .unwrap();
    let summary = Record::Summary { text: "s".into() };
    let entry = ArchiveEntry::Compaction {
        folded: 3,
        summary: "s".into(),
    };
    w.replace_records(std::slice::from_ref(&summary), std::slice::from_ref(&entry))
        .await
        .unwrap();
    w.append(&[user("after")], &[finished()]).await.unwrap();
    w.release().await.unwrap();
    let (stored, w) = b.store.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![summary, user("after")]);
    let archive = vec![finished(), entry, finished()];
    assert_eq!(stored.summary, archive.iter().cloned().collect());
    let read = b.store.read(&info.session_id).await.unwrap().unwrap();
    assert_eq!(read.archive, archive);
    w.release().await.unwrap();
}

async fn single_writer(b: &Backend) {
    let (info, w) = b.store.create(new_session(), &[]).await.unwrap();
    let id = info.session_id;
    match b.other.open(&id).await {
        Err(StoreError::Leased { session, .. }) => assert_eq!(session, id),
        Err(e) => panic!("expected Leased, got {e}"),
        Ok(_) => panic!("a second writer opened a held session"),
    }
    w.release().await.unwrap();
    let (_, w) = b
        .other
        .open(&id)
        .await
        .unwrap()
        .expect("released session opens");
    w.release().await.unwrap();
}

async fn unknown(b: &Backend) {
    let id = SessionId::from("no-such-session");
    assert!(b.store.read(&id).await.unwrap().is_none());
    assert!(b.store.open(&id).await.unwrap().is_none());
}

async fn concurrent_creates(b: &Backend) {
    let created = join_all((0..32).map(|_| b.store.create(new_session(), &[]))).await;
    let mut ids = Vec::new();
    for c in created {
        let (info, w) = c.unwrap();
        ids.push(info.session_id);
        w.release().await.unwrap();
    }
    let before = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), before, "ids are unique");
}

/// 64 sessions append at once: far fewer commits than appends (SPEC-free: issue 11 item 5).
async fn group_commit(b: &Backend) {
    const SESSIONS: usize = 64;
    let mut writers = Vec::new();
    for _ in 0..SESSIONS {
        writers.push(b.store.create(new_session(), &[]).await.unwrap());
    }
    let before = (b.stats)();
    let (records, archive) = ([user("x")], [finished()]);
    let appends = writers
        .iter_mut()
        .map(|(_, w)| w.append(&records, &archive));
    for r in join_all(appends).await {
        r.unwrap();
    }
    let after = (b.stats)();
    let appends = after.appends - before.appends;
    let commits = after.commits - before.commits;
    assert_eq!(appends, SESSIONS as u64);
    assert!(
        commits <= SESSIONS as u64 / 4,
        "{appends} appends took {commits} commits"
    );
    for (info, w) in writers {
        w.release().await.unwrap();
        let stored = b.store.read(&info.session_id).await.unwrap().unwrap();
        assert_eq!(stored.records, vec![user("x")]);
    }
}

fn key_claim(key: &str, digest: &str, owner: &str, now_ms: u64) -> KeyClaim {
    KeyClaim {
        key: IdempotencyKey::parse(key).unwrap(),
        digest: digest.into(),
        owner: owner.into(),
        now_ms,
        ttl_ms: 1_000,
        max_keys: 4,
    }
}

fn answer(n: u64) -> KeyOutcome {
    KeyOutcome {
        status: 200,
        body: serde_json::json!({"stopReason": "completed", "turn": n}),
    }
}

/// Issue 22 item 3: a key is claimed once; its owner settles it; the answer reads back on
/// another store (process or node) once the session is let go; only the owner settles; a
/// forgotten key is free again. Keys are claimed by the store that holds the session (issue 34
/// item 3: the file store keeps a claim with the session's next commit).
async fn idempotency_keys(b: &Backend) {
    let (info, w) = b.store.create(new_session(), &[]).await.unwrap();
    let id = info.session_id;
    let first = key_claim("k-1", "d1", "a/1", 10);
    assert_eq!(b.store.claim_key(&id, &first).await.unwrap(), Claimed::New);
    // Claimed again (by another request): running, with its digest.
    let again = key_claim("k-1", "d2", "b/1", 20);
    let Claimed::Existing(entry) = b.store.claim_key(&id, &again).await.unwrap() else {
        panic!("the key was claimed twice");
    };
    assert_eq!(entry.digest, "d1");
    assert_eq!(entry.created_ms, 10);
    assert_eq!(
        entry.state,
        KeyState::Running {
            owner: "a/1".into()
        }
    );
    // Only the owner settles it.
    let key = IdempotencyKey::parse("k-1").unwrap();
    assert!(!b
        .store
        .settle_key(&id, &key, "b/1", Some(&answer(0)))
        .await
        .unwrap());
    assert!(b
        .store
        .settle_key(&id, &key, "a/1", Some(&answer(1)))
        .await
        .unwrap());
    assert!(!b.store.settle_key(&id, &key, "a/1", None).await.unwrap());
    w.release().await.unwrap();
    // The answer on the other store (a process or node that resumes the session).
    let Claimed::Existing(entry) = b.other.claim_key(&id, &again).await.unwrap() else {
        panic!("the settled key was claimed again");
    };
    assert_eq!(entry.state, KeyState::Done { outcome: answer(1) });
    // A key forgotten by its owner (a refused request) is free for the next claim.
    let refused = key_claim("k-2", "d1", "a/2", 30);
    assert_eq!(
        b.other.claim_key(&id, &refused).await.unwrap(),
        Claimed::New
    );
    let k2 = IdempotencyKey::parse("k-2").unwrap();
    assert!(b.other.settle_key(&id, &k2, "a/2", None).await.unwrap());
    assert_eq!(
        b.store.claim_key(&id, &refused).await.unwrap(),
        Claimed::New
    );
    // Keys are the session's own: another session has none of them.
    let (other, w2) = b.store.create(new_session(), &[]).await.unwrap();
    assert_eq!(
        b.store.claim_key(&other.session_id, &first).await.unwrap(),
        Claimed::New
    );
    w2.release().await.unwrap();
}

/// Issue 22 item 3: an entry expires `ttl_ms` after its claim; past `max_keys` the oldest
/// finished entries are forgotten, running ones never.
async fn idempotency_keys_expire_and_are_bounded(b: &Backend) {
    let (info, w) = b.store.create(new_session(), &[]).await.unwrap();
    let id = info.session_id;
    let old = key_claim("old", "d", "a/1", 1_000);
    assert_eq!(b.store.claim_key(&id, &old).await.unwrap(), Claimed::New);
    let key = IdempotencyKey::parse("old").unwrap();
    assert!(b
        .store
        .settle_key(&id, &key, "a/1", Some(&answer(1)))
        .await
        .unwrap());
    // Just before its time it is there; at its time it is free.
    let before = key_claim("old", "d", "a/2", 1_999);
    assert!(matches!(
        b.store.claim_key(&id, &before).await.unwrap(),
        Claimed::Existing(_)
    ));
    let at = key_claim("old", "other", "a/3", 2_000);
    assert_eq!(b.store.claim_key(&id, &at).await.unwrap(), Claimed::New);
    // "old" now runs (a/3); four more finished keys push the session past its bound of four.
    for n in 1..=4u64 {
        let name = format!("f-{n}");
        let claim = key_claim(&name, "d", "a/f", 2_000 + n);
        assert_eq!(b.store.claim_key(&id, &claim).await.unwrap(), Claimed::New);
        let key = IdempotencyKey::parse(&name).unwrap();
        assert!(b
            .store
            .settle_key(&id, &key, "a/f", Some(&answer(n)))
            .await
            .unwrap());
    }
    w.release().await.unwrap();
    // Five entries: the oldest finished one ("f-1") went, the running "old" stayed.
    let f1 = key_claim("f-1", "d", "a/x", 2_100);
    assert_eq!(b.other.claim_key(&id, &f1).await.unwrap(), Claimed::New);
    let running = key_claim("old", "other", "a/y", 2_100);
    assert!(matches!(
        b.other.claim_key(&id, &running).await.unwrap(),
        Claimed::Existing(KeyEntry {
            state: KeyState::Running { .. },
            ..
        })
    ));
    let f4 = key_claim("f-4", "d", "a/z", 2_100);
    let Claimed::Existing(entry) = b.other.claim_key(&id, &f4).await.unwrap() else {
        panic!("the newest finished key was forgotten");
    };
    assert_eq!(entry.state, KeyState::Done { outcome: answer(4) });
}

/// Issue 34 item 3: keys go through the group committer. Keyed requests of many sessions at
/// once share commits, with each other and with the sessions' records: every claim with its
/// turn's first append, then every answer, cost a handful of commits, not one or two each.
async fn keys_share_group_commits(b: &Backend) {
    const SESSIONS: usize = 64;
    let mut writers = Vec::new();
    for _ in 0..SESSIONS {
        writers.push(b.store.create(new_session(), &[]).await.unwrap());
    }
    let before = (b.stats)();
    let steps = writers.iter_mut().enumerate().map(|(n, (info, w))| {
        let (store, id) = (b.store.clone(), info.session_id.clone());
        async move {
            let claim = key_claim(&format!("k-{n}"), "d", &format!("a/{n}"), 10);
            assert_eq!(store.claim_key(&id, &claim).await.unwrap(), Claimed::New);
            w.append(&[user("x")], &[]).await.unwrap();
        }
    });
    join_all(steps).await;
    let claimed = (b.stats)();
    assert_eq!(claimed.appends - before.appends, SESSIONS as u64);
    let commits = claimed.commits - before.commits;
    assert!(
        commits <= SESSIONS as u64 / 2,
        "{SESSIONS} claims and appends took {commits} commits"
    );
    let answers = writers.iter().enumerate().map(|(n, (info, _))| {
        let (store, id) = (b.store.clone(), info.session_id.clone());
        async move {
            let key = IdempotencyKey::parse(&format!("k-{n}")).unwrap();
            let (owner, outcome) = (format!("a/{n}"), answer(n as u64));
            let answered = store.settle_key(&id, &key, &owner, Some(&outcome));
            assert!(answered.await.unwrap());
        }
    });
    join_all(answers).await;
    let settled = (b.stats)();
    let commits = settled.commits - claimed.commits;
    // Together (PostgreSQL), or synced beside the committer's batches (the file store).
    assert!(
        commits <= SESSIONS as u64 / 4,
        "{SESSIONS} answers took {commits} commits"
    );
    assert_eq!(
        settled.appends, claimed.appends,
        "an answer is not an append"
    );
    // Each answer reads back once the sessions are let go.
    for (n, (info, w)) in writers.into_iter().enumerate() {
        w.release().await.unwrap();
        let probe = key_claim(&format!("k-{n}"), "d", "b/1", 20);
        let Claimed::Existing(entry) = b.other.claim_key(&info.session_id, &probe).await.unwrap()
        else {
            panic!("the answer of k-{n} was lost");
        };
        assert_eq!(
            entry.state,
            KeyState::Done {
                outcome: answer(n as u64)
            }
        );
    }
}

/// Approval `i` of [`answers_and_pages`]: every third one the policy's or a guard's, the others
/// an operator's answer, every other one of those naming who answered.
fn decided(i: usize) -> ArchiveEntry {
    use hookline::messages::approval::{Authority, Classification, Risk};
    use hookline::messages::record::{ApprovalRecord, Decider, Decision};
    let (decided_by, answered_by) = match i % 6 {
        0 => (Decider::Policy, None),
        3 => (Decider::Guard, None),
        n if n % 2 == 0 => (Decider::Operator, Some(format!("acme/p{i}"))),
        _ => (Decider::Operator, None),
    };
    ArchiveEntry::Approval(ApprovalRecord {
        call_id: format!("call-{i}"),
        tool: "write_file".into(),
        classification: Classification {
            risk: Risk::Write,
            authority: Authority::Workspace,
            summary: format!("write_file {i}.txt"),
            requires_prompt: true,
        },
        decision: if i % 4 == 0 {
            Decision::Deny
        } else {
            Decision::Allow
        },
        decided_by,
        answered_by,
    })
}

/// Issue 49 follow-ups: the last answered approvals (the session view's `answered`) and a page of
/// the archive, which each backend reads without holding the archive, are what the whole `read`
/// gives, on this store and another process or node, while the writer holds the session; an
/// unknown session is `None`.
async fn answers_and_pages(b: &Backend) {
    const APPROVALS: usize = 120;
    let (info, mut w) = b.store.create(new_session(), &[]).await.unwrap();
    let archive: Vec<ArchiveEntry> = (0..APPROVALS)
        .flat_map(|i| [typed(&format!("turn {i}")), decided(i), finished()])
        .collect();
    for piece in archive.chunks(45) {
        w.append(&[], piece).await.unwrap();
    }
    let answered: Vec<ArchiveEntry> = (0..APPROVALS).filter(|i| i % 3 != 0).map(decided).collect();
    let last_50: Vec<_> = answered[answered.len() - 50..]
        .iter()
        .map(|entry| match entry {
            ArchiveEntry::Approval(record) => record.clone(),
            _ => unreachable!(),
        })
        .collect();
    let id = &info.session_id;
    for store in [&b.store, &b.other] {
        let whole = store.read(id).await.unwrap().unwrap().archive;
        assert_eq!(whole, archive);
        assert_eq!(
            store.answered_approvals(id, 50).await.unwrap(),
            Some(last_50.clone())
        );
        for keep in [0, 1, 7, 80, 1000] {
            assert_eq!(
                store.answered_approvals(id, keep).await.unwrap(),
                Some(AnsweredApprovals::of(whole.clone(), keep)),
                "keep {keep}"
            );
        }
        for (offset, limit) in [(0, 0), (0, 10), (7, 25), (355, 10), (360, 5), (1000, 5)] {
            assert_eq!(
                store.archive_page(id, offset, limit).await.unwrap(),
                Some(ArchivePage::of(&whole, offset, limit)),
                "offset {offset} limit {limit}"
            );
        }
    }
    let unknown = SessionId::from("s-never-stored");
    assert_eq!(
        b.store.answered_approvals(&unknown, 50).await.unwrap(),
        None
    );
    assert_eq!(b.store.archive_page(&unknown, 0, 50).await.unwrap(), None);
    w.release().await.unwrap();
}

macro_rules! contract {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;

            #[tokio::test]
            async fn round_trip_reads_back_every_write() {
                round_trip(&$make).await;
            }

            #[tokio::test]
            async fn compaction_replaces_records_and_keeps_the_archive() {
                compaction(&$make).await;
            }

            #[tokio::test]
            async fn a_held_session_has_one_writer() {
                single_writer(&$make).await;
            }

            #[tokio::test]
            async fn unknown_sessions_are_none() {
                unknown(&$make).await;
            }

            #[tokio::test]
            async fn concurrent_creates_get_distinct_ids() {
                concurrent_creates(&$make).await;
            }

            #[tokio::test]
            async fn appends_arriving_together_share_commits() {
                group_commit(&$make).await;
            }

            #[tokio::test]
            async fn a_cut_off_turn_keeps_its_steps_and_says_where_it_stopped() {
                cut_off_turn(&$make).await;
            }

            #[tokio::test]
            async fn an_idempotency_key_is_claimed_once_and_its_answer_kept() {
                idempotency_keys(&$make).await;
            }

            #[tokio::test]
            async fn keys_of_many_sessions_share_group_commits() {
                keys_share_group_commits(&$make).await;
            }

            #[tokio::test]
            async fn answers_and_pages_are_those_of_the_whole_archive() {
                answers_and_pages(&$make).await;
            }

            #[tokio::test]
            async fn idempotency_keys_expire_and_are_bounded_per_session() {
                idempotency_keys_expire_and_are_bounded(&$make).await;
            }
        }
    };
}

contract!(files, file_backend());
contract!(postgres, pg_backend().await);

#[tokio::test]
async fn both_backends_store_the_same_session() {
    let files = round_trip(&file_backend()).await;
    let postgres = round_trip(&pg_backend().await).await;
    assert_eq!(files, postgres);
}

/// Issue 34 item 3: PostgreSQL's claims and answers are transactions of the committer (before,
/// each was a transaction of its own beside it).
#[tokio::test]
async fn postgres_keys_are_committed_by_the_committer() {
    let b = pg_backend().await;
    let (info, w) = b.store.create(new_session(), &[]).await.unwrap();
    let id = info.session_id;
    let before = (b.stats)();
    let claim = key_claim("k", "d", "a/1", 10);
    assert_eq!(b.store.claim_key(&id, &claim).await.unwrap(), Claimed::New);
    let key = IdempotencyKey::parse("k").unwrap();
    assert!(b
        .store
        .settle_key(&id, &key, "a/1", Some(&answer(1)))
        .await
        .unwrap());
    let after = (b.stats)();
    assert_eq!(after.commits - before.commits, 2);
    assert_eq!(after.appends, before.appends);
    w.release().await.unwrap();
}

#[tokio::test]
async fn migration_is_idempotent() {
    let url = pg::database_url();
    // Whatever ran first, a second and third run apply nothing and the store connects.
    migrate_url(&url, None).await.unwrap();
    assert!(migrate_url(&url, None).await.unwrap().is_empty());
    assert!(migrate_url(&url, None).await.unwrap().is_empty());
    PgStore::connect(
        &url,
        PgStoreOptions {
            migrate: false,
            ..pg_options("n")
        },
    )
    .await
    .unwrap();
}

/// Polls `check` until it is true or `limit` passes (a bounded wait on the database's clock).
async fn eventually(limit: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn short_lease(node: &str, renew: Option<Duration>) -> PgStoreOptions {
    PgStoreOptions {
        lease_ttl: Duration::from_millis(800),
        renew_every: renew,
        ..pg_options(node)
    }
}

#[tokio::test]
async fn a_lease_is_renewed_then_expires_and_is_taken_over_with_a_new_token() {
    let url = pg::database_url();
    let a = PgStore::connect(&url, short_lease("a", None))
        .await
        .unwrap();
    let b = PgStore::connect(&url, short_lease("b", None))
        .await
        .unwrap();
    let (info, mut wa) = a.create(new_session(), &[user("u")]).await.unwrap();
    let id = info.session_id;
    let first = a.lease(&id).await.unwrap().unwrap();
    assert_eq!(first.holder.as_deref(), Some("a"));
    // Renewal pushes the expiry out again.
    assert!(
        eventually(Duration::from_secs(5), async || {
            let before = a.lease(&id).await.unwrap().unwrap().expires_in_ms.unwrap();
            a.renew_now().await.unwrap() == 1
                && a.lease(&id).await.unwrap().unwrap().expires_in_ms.unwrap() > before
        })
        .await
    );
    assert!(matches!(b.open(&id).await, Err(StoreError::Leased { .. })));
    // Not renewed, it expires, and b takes it over at once with a higher token.
    let taken = eventually(Duration::from_secs(10), async || {
        b.open(&id).await.is_ok_and(|o| o.is_some())
    })
    .await;
    assert!(taken, "the expired lease was not taken over");
    let second = b.lease(&id).await.unwrap().unwrap();
    assert_eq!(second.holder.as_deref(), Some("b"));
    assert!(second.token > first.token);
    // a's write is fenced off and changes nothing.
    let before = a.read(&id).await.unwrap().unwrap();
    match wa.append(&[user("stale")], &[finished()]).await {
        Err(StoreError::LeaseLost { session, token }) => {
            assert_eq!(session, id);
            assert_eq!(token, first.token);
        }
        other => panic!("a stale append was not refused: {other:?}"),
    }
    assert!(matches!(
        wa.replace_records(&[], &[]).await,
        Err(StoreError::LeaseLost { .. })
    ));
    assert!(matches!(
        wa.set_facts(&before.facts).await,
        Err(StoreError::LeaseLost { .. })
    ));
    assert_eq!(a.read(&id).await.unwrap().unwrap(), before);
}

#[tokio::test]
async fn a_renewed_lease_outlives_its_ttl() {
    let url = pg::database_url();
    let a = PgStore::connect(&url, short_lease("a", Some(Duration::from_millis(150))))
        .await
        .unwrap();
    let b = PgStore::connect(&url, short_lease("b", None))
        .await
        .unwrap();
    let (info, w) = a.create(new_session(), &[]).await.unwrap();
    // Three TTLs later the background renewer still holds it.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(2400) {
        assert!(
            matches!(
                b.open(&info.session_id).await,
                Err(StoreError::Leased { .. })
            ),
            "lease lapsed after {:?}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Released on drain: taken over at once.
    w.release().await.unwrap();
    assert!(b.open(&info.session_id).await.unwrap().is_some());
}

#[tokio::test]
async fn a_stale_writer_in_a_group_commit_is_refused_alone() {
    let url = pg::database_url();
    let a = PgStore::connect(&url, short_lease("a", None))
        .await
        .unwrap();
    let b = PgStore::connect(&url, short_lease("b", None))
        .await
        .unwrap();
    let (lost, mut stale) = a.create(new_session(), &[]).await.unwrap();
    let (_, mut fine) = a.create(new_session(), &[]).await.unwrap();
    let taken = eventually(Duration::from_secs(10), async || {
        b.open(&lost.session_id).await.is_ok_and(|o| o.is_some())
    })
    .await;
    assert!(taken);
    let (r1, r2) = ([user("stale")], [user("fine")]);
    let (r1, r2) = tokio::join!(stale.append(&r1, &[]), fine.append(&r2, &[]));
    assert!(matches!(r1, Err(StoreError::LeaseLost { .. })), "{r1:?}");
    r2.unwrap();
    assert!(a
        .read(&lost.session_id)
        .await
        .unwrap()
        .unwrap()
        .records
        .is_empty());
}

#[test]
fn store_migrate_command_applies_then_finds_the_schema_current() {
    let url = pg::database_url();
    let run = |url: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hookline"))
            .args(["store", "migrate", "--database-url", url])
            .output()
            .unwrap()
    };
    let first = run(&url);
    assert!(first.status.success(), "{first:?}");
    let second = run(&url);
    assert!(second.status.success(), "{second:?}");
    assert!(String::from_utf8_lossy(&second.stdout).contains("schema is current"));
    let bad = run("postgres://nobody@127.0.0.1:1/none");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("hookline store migrate:"));
}

#[tokio::test]
async fn a_dropped_writer_is_no_longer_renewed() {
    let url = pg::database_url();
    let a = PgStore::connect(&url, short_lease("a", None))
        .await
        .unwrap();
    let (_, w) = a.create(new_session(), &[]).await.unwrap();
    assert_eq!(a.renew_now().await.unwrap(), 1);
    drop(w);
    assert_eq!(a.renew_now().await.unwrap(), 0);
}

#[tokio::test]
async fn renewals_and_group_commits_of_many_sessions_never_deadlock() {
    // The renewer and the committer each lock many sessions' rows in one statement. The renewer
    // (every held session) and a batch of appends (a few, in arrival order) were planned
    // differently, so they locked rows in different orders, deadlocked under load, and
    // PostgreSQL aborted the appends. Appends arrive here in small batches in another order than
    // the sessions were created, while renewals run.
    const SESSIONS: usize = 1000;
    const BATCH: usize = 20;
    const ROUNDS: usize = 3;
    let url = pg::database_url();
    let store = PgStore::connect(
        &url,
        PgStoreOptions {
            renew_every: None,
            ..pg_options("many")
        },
    )
    .await
    .unwrap();
    let mut writers = Vec::new();
    for _ in 0..SESSIONS / 100 {
        let created = join_all((0..100).map(|_| store.create(new_session(), &[]))).await;
        writers.extend(created.into_iter().map(|c| c.unwrap().1));
    }
    for round in 0..ROUNDS {
        let record = [user(&format!("round {round}"))];
        let done = std::sync::atomic::AtomicBool::new(false);
        let appends = async {
            for chunk in writers.chunks_mut(BATCH).rev() {
                for result in join_all(chunk.iter_mut().rev().map(|w| w.append(&record, &[]))).await
                {
                    result.unwrap();
                }
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        };
        let renewals = async {
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                assert_eq!(store.renew_now().await.unwrap(), SESSIONS);
            }
        };
        tokio::join!(appends, renewals);
    }
}

/// Issue 22 with fencing: node a's turn stored its call and approval, then a lost its lease;
/// b takes the session over and sees where the turn was cut off; a's result (the next step) is
/// refused and changes nothing; b closes the turn.
#[tokio::test]
async fn a_cut_off_turn_taken_over_is_fenced_and_closed_by_the_new_holder() {
    let url = pg::database_url();
    let a = PgStore::connect(&url, short_lease("a", None))
        .await
        .unwrap();
    let b = PgStore::connect(&url, short_lease("b", None))
        .await
        .unwrap();
    let (info, mut wa) = a.create(new_session(), &[]).await.unwrap();
    let id = info.session_id;
    turn_steps(&mut wa).await;
    let mut taken = None;
    assert!(
        eventually(Duration::from_secs(10), async || {
            taken = b.open(&id).await.ok().flatten();
            taken.is_some()
        })
        .await,
        "the expired lease was not taken over"
    );
    let (opened, mut wb) = taken.unwrap();
    let open = open_turn(&opened.records, &opened.summary.last_turn).expect("the turn is open");
    assert!(matches!(open.at, CutOff::ToolStarted { .. }));
    assert!(matches!(
        wa.append(&[result("call-1")], &[]).await,
        Err(StoreError::LeaseLost { .. })
    ));
    let stop = ArchiveEntry::TurnFinished {
        stop_reason: hookline::messages::user::StopReason::Interrupted,
    };
    wb.append(&open.closing(), std::slice::from_ref(&stop))
        .await
        .unwrap();
    let read = b.read(&id).await.unwrap().unwrap();
    assert!(!read.records.contains(&result("call-1")), "a's late result");
    assert!(matches!(read.records.last(), Some(Record::CutOff { .. })));
    wb.release().await.unwrap();
}
