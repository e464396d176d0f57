//! The file store's idempotency keys (issue 34 item 3): a claim rides with the session's next
//! commit, an answer is synced (beside the committer's batches) before it is acknowledged, and a crash keeps
//! neither records without their claim nor an acknowledged answer's loss.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::tests::{new, user};
use super::*;
use crate::store::keys::{KeyEntry, KeyState};

fn claim(key: &str, owner: &str, now_ms: u64, max_keys: usize) -> KeyClaim {
    KeyClaim {
        key: IdempotencyKey::parse(key).unwrap(),
        digest: "d".into(),
        owner: owner.into(),
        now_ms,
        ttl_ms: 1_000_000,
        max_keys,
    }
}

fn answer(n: u64) -> KeyOutcome {
    KeyOutcome {
        status: 200,
        body: serde_json::json!({ "turn": n }),
    }
}

fn key(name: &str) -> IdempotencyKey {
    IdempotencyKey::parse(name).unwrap()
}

/// The entry a store that resumes the session finds for `name`.
async fn found(root: &Path, id: &SessionId, name: &str) -> Claimed {
    let other = FileStore::open(root, FileStoreOptions::default()).unwrap();
    other
        .claim_key(id, &claim(name, "later/1", 10, 256))
        .await
        .unwrap()
}

#[tokio::test]
async fn one_group_commit_carries_a_claim_with_its_records_and_the_answer_is_synced_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[]).await.unwrap();
    let id = info.session_id;
    let before = store.stats();
    assert_eq!(
        store
            .claim_key(&id, &claim("k", "a/1", 1, 256))
            .await
            .unwrap(),
        Claimed::New
    );
    // The claim alone costs no commit and no sync: it waits for the turn's first step.
    assert_eq!(store.stats(), before);
    let dir = store.session_dir(&id).unwrap();
    assert_eq!(keys::durable_seq(&dir).unwrap(), 0);
    w.append(&[user("hello")], &[]).await.unwrap();
    let stats = store.stats();
    assert_eq!(stats.commits - before.commits, 1, "one commit for both");
    assert_eq!(keys::durable_seq(&dir).unwrap(), 1);
    // The commit point that committed the records names the claim's frame.
    let points = scan::<CommitPoint>(&dir.join(COMMITS)).unwrap().unwrap();
    assert_eq!(points.records.last().unwrap().keys, Some(1));
    // The answer is synced when settle returns, beside the committer (no commit of its own).
    assert!(store
        .settle_key(&id, &key("k"), "a/1", Some(&answer(1)))
        .await
        .unwrap());
    assert_eq!(store.stats(), stats);
    assert_eq!(keys::durable_seq(&dir).unwrap(), 2);
    // As a crash leaves it (the writer gone without release): the answer is there.
    drop(w);
    let Claimed::Existing(entry) = found(tmp.path(), &id, "k").await else {
        panic!("the acknowledged answer was lost");
    };
    assert_eq!(entry.state, KeyState::Done { outcome: answer(1) });
}

#[tokio::test]
async fn records_whose_claim_did_not_reach_the_disk_are_not_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    let id = info.session_id;
    let dir = store.session_dir(&id).unwrap();
    store
        .claim_key(&id, &claim("k", "a/1", 1, 256))
        .await
        .unwrap();
    w.append(&[user("b")], &[]).await.unwrap();
    drop(w);
    // A crash that lost the claim's frame but kept the records and their commit point.
    let file = OpenOptions::new()
        .write(true)
        .open(dir.join(keys::KEYS_LOG))
        .unwrap();
    file.set_len(0).unwrap();
    let read = store.read(&id).await.unwrap().unwrap();
    assert_eq!(read.records, vec![user("a")], "the turn is absent, whole");
    // And the key is free: the request never ran.
    assert_eq!(found(tmp.path(), &id, "k").await, Claimed::New);
}

#[tokio::test]
async fn a_claim_of_a_request_that_stored_nothing_is_stored_at_release_not_at_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, w) = store.create(new(), &[]).await.unwrap();
    let id = info.session_id;
    store
        .claim_key(&id, &claim("crashed", "a/1", 1, 256))
        .await
        .unwrap();
    drop(w);
    // Nothing of the request was stored, so neither was its claim: a retry runs it.
    assert_eq!(found(tmp.path(), &id, "crashed").await, Claimed::New);
    let (_, w) = store.open(&id).await.unwrap().unwrap();
    store
        .claim_key(&id, &claim("released", "a/2", 2, 256))
        .await
        .unwrap();
    w.release().await.unwrap();
    assert!(matches!(
        found(tmp.path(), &id, "released").await,
        Claimed::Existing(KeyEntry {
            state: KeyState::Running { .. },
            ..
        })
    ));
}

#[tokio::test]
async fn keys_of_a_session_the_store_does_not_hold_are_written_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, w) = store.create(new(), &[]).await.unwrap();
    let id = info.session_id;
    w.release().await.unwrap();
    assert_eq!(
        store
            .claim_key(&id, &claim("k", "a/1", 1, 256))
            .await
            .unwrap(),
        Claimed::New
    );
    assert!(matches!(
        found(tmp.path(), &id, "k").await,
        Claimed::Existing(_)
    ));
    // Another store holding the session: the key cannot be written beside its writer.
    let (_, held) = store.open(&id).await.unwrap().unwrap();
    let other = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    assert!(matches!(
        other.claim_key(&id, &claim("x", "b/1", 1, 256)).await,
        Err(StoreError::Leased { .. })
    ));
    drop(held);
}

#[tokio::test]
async fn keys_of_the_one_file_per_key_layout_are_folded_into_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, w) = store.create(new(), &[]).await.unwrap();
    let id = info.session_id;
    w.release().await.unwrap();
    let dir = store.session_dir(&id).unwrap();
    // As the store before issue 34 wrote it: keys/<sha-256 of the key>.json.
    let entry = KeyEntry {
        key: key("old"),
        digest: "d".into(),
        created_ms: 5,
        state: KeyState::Done { outcome: answer(7) },
    };
    fs::create_dir(dir.join("keys")).unwrap();
    fs::write(
        dir.join("keys").join("0f1e.json"),
        serde_json::to_vec(&entry).unwrap(),
    )
    .unwrap();
    assert_eq!(
        found(tmp.path(), &id, "old").await,
        Claimed::Existing(entry)
    );
    assert!(!dir.join("keys").exists());
    assert_eq!(keys::durable_seq(&dir).unwrap(), 1);
}

#[tokio::test]
async fn a_long_keys_log_is_rewritten_to_its_live_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[]).await.unwrap();
    let id = info.session_id;
    let dir = store.session_dir(&id).unwrap();
    for n in 0..400u64 {
        let name = format!("k-{n}");
        store
            .claim_key(&id, &claim(&name, "a/1", n, 8))
            .await
            .unwrap();
        w.append(&[user(&name)], &[]).await.unwrap();
        store
            .settle_key(&id, &key(&name), "a/1", Some(&answer(n)))
            .await
            .unwrap();
    }
    let frames = scan::<keys::KeyFrame>(&dir.join(keys::KEYS_LOG))
        .unwrap()
        .unwrap()
        .records
        .len();
    assert!(frames <= 8 * 4 + 8, "{frames} frames for at most 8 keys");
    drop(w);
    // Every append stayed committed across the rewrites, and the newest answers are kept.
    let read = store.read(&id).await.unwrap().unwrap();
    assert_eq!(read.records.len(), 400);
    let Claimed::Existing(entry) = found(tmp.path(), &id, "k-399").await else {
        panic!("the newest answer was forgotten");
    };
    assert_eq!(
        entry.state,
        KeyState::Done {
            outcome: answer(399)
        }
    );
    assert_eq!(found(tmp.path(), &id, "k-0").await, Claimed::New);
}
