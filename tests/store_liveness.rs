//! Node liveness tracked by PostgreSQL (issue 40 item 1): each `PgStore` holds an advisory lock on
//! its incarnation on a connection of its own, and a session whose holder's lock is gone is
//! taken over at once, long before its lease expires; a holder that runs keeps its sessions for
//! the TTL; and a holder that was taken for dead (its liveness connection cut) cannot write what
//! was taken over, and locks again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

use std::time::{Duration, Instant};

use hookline::host::store::{NewSession, SessionStore, StoreError};
use hookline::messages::record::Record;
use hookline::messages::session::{ApprovalMode, SessionId};
use hookline::postgres::{PgStore, PgStoreOptions};

/// A lease far longer than any wait here: a takeover within the test is liveness, not expiry.
const LONG_TTL: Duration = Duration::from_secs(120);
const WAIT: Duration = Duration::from_secs(10);

fn options(node: &str) -> PgStoreOptions {
    PgStoreOptions {
        node: node.into(),
        migrate: true,
        lease_ttl: LONG_TTL,
        renew_every: None,
        ..PgStoreOptions::default()
    }
}

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

/// Polls `check` until it is true or [`WAIT`] passes.
async fn eventually(mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn alive(store: &PgStore, id: &SessionId) -> Option<bool> {
    store.lease(id).await.unwrap().unwrap().holder_alive
}

#[tokio::test]
async fn a_dead_holder_s_session_is_taken_over_at_once_and_a_live_one_s_waits_for_the_ttl() {
    let url = pg::database_url();
    let a = PgStore::connect(&url, options("a")).await.unwrap();
    let b = PgStore::connect(&url, options("b")).await.unwrap();
    let (info, wa) = a.create(new_session(), &[user("on a")]).await.unwrap();
    let id = info.session_id;
    assert_eq!(alive(&b, &id).await, Some(true));
    // A holder that runs keeps its lease, however long it says nothing.
    assert!(matches!(b.open(&id).await, Err(StoreError::Leased { .. })));

    // The holder goes away without releasing (as a killed process does): its lock goes with
    // its connection, and the session moves at once, with a higher token.
    let before = b.lease(&id).await.unwrap().unwrap();
    drop(wa);
    drop(a);
    assert!(
        eventually(async || alive(&b, &id).await == Some(false)).await,
        "the dropped store's liveness lock was never released"
    );
    let started = Instant::now();
    let (stored, _wb) = b
        .open(&id)
        .await
        .unwrap()
        .expect("b takes the session over");
    assert!(started.elapsed() < LONG_TTL / 4);
    assert_eq!(stored.records, vec![user("on a")]);
    let after = b.lease(&id).await.unwrap().unwrap();
    assert_eq!(after.holder.as_deref(), Some("b"));
    assert!(after.token > before.token);
    assert!(after.expires_in_ms.unwrap() > 60_000, "{after:?}");
    assert_eq!(after.holder_alive, Some(true));
}

#[tokio::test]
async fn a_holder_taken_for_dead_cannot_write_what_was_taken_over_and_locks_again() {
    let url = pg::database_url();
    // a connects again 2 s after its liveness connection is cut: the window b takes it over in.
    let a = PgStore::connect(
        &url,
        PgStoreOptions {
            liveness_retry: Duration::from_secs(2),
            ..options("cut-a")
        },
    )
    .await
    .unwrap();
    let b = PgStore::connect(&url, options("cut-b")).await.unwrap();
    let (info, mut wa) = a.create(new_session(), &[user("first")]).await.unwrap();
    let id = info.session_id;
    // Cut a's liveness connection while a runs (a partition between a and the database, or an
    // operator's pg_terminate_backend): the database takes a for dead.
    let admin = PgStore::connect(&url, options("admin")).await.unwrap();
    let cut = admin.terminate_liveness_of(&id).await.unwrap();
    assert!(cut, "no liveness connection held the holder's lock");
    assert!(eventually(async || alive(&b, &id).await == Some(false)).await);
    let (_, _wb) = b.open(&id).await.unwrap().expect("taken over at once");
    // a comes back: its write is refused and stores nothing.
    let before = b.read(&id).await.unwrap().unwrap();
    assert!(matches!(
        wa.append(&[user("stale")], &[]).await,
        Err(StoreError::LeaseLost { .. })
    ));
    assert_eq!(b.read(&id).await.unwrap().unwrap(), before);
    // ... and its liveness connection locks again: what it opens now is its own, alive.
    let (fresh, _wa2) = a.create(new_session(), &[]).await.unwrap();
    assert!(
        eventually(async || alive(&b, &fresh.session_id).await == Some(true)).await,
        "the liveness lock was never taken again"
    );
    assert!(matches!(
        b.open(&fresh.session_id).await,
        Err(StoreError::Leased { .. })
    ));
}
