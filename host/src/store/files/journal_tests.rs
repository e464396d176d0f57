//! `commit.log` as a journal (issue 47): one sync per unkeyed append, every acknowledged append
//! restored whatever a crash left in the unsynced data files, a torn journal frame's append
//! absent, checkpoints leaving plain points, older sessions unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::tests::{new, user};
use super::*;
use crate::store::log::scan;

fn points(dir: &Path) -> Vec<CommitPoint> {
    scan::<CommitPoint>(&dir.join(COMMITS))
        .unwrap()
        .unwrap()
        .records
}

fn started(info: &SessionFacts) -> ArchiveEntry {
    ArchiveEntry::SessionStarted(info.info())
}

/// A session created with "a", then three acknowledged appends ("b" with an archive entry,
/// "c", "d"), its writer dropped without a release (a crash: no checkpoint). Returns the store,
/// the id, the directory and the lengths of the data files after the create.
async fn crashed_session() -> (tempfile::TempDir, FileStore, SessionId, PathBuf, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    let dir = store.session_dir(&info.session_id).unwrap();
    let created = fs::metadata(dir.join(RECORDS)).unwrap().len();
    w.append(&[user("b")], &[started(&info)]).await.unwrap();
    w.append(&[user("c")], &[]).await.unwrap();
    w.append(&[user("d")], &[]).await.unwrap();
    // Another reader sees every acknowledged append while the writer lives.
    let read = store.read(&info.session_id).await.unwrap().unwrap();
    assert_eq!(read.records.len(), 4);
    drop(w);
    let all = points(&dir);
    assert_eq!(all.len(), 4, "the create's point and three journal frames");
    assert!(all[0].journal.is_none() && all[1..].iter().all(|p| p.journal.is_some()));
    (tmp, store, info.session_id, dir, created)
}

fn all_records() -> Vec<Record> {
    vec![user("a"), user("b"), user("c"), user("d")]
}

/// What a crash may leave of a file's unsynced tail beyond `from`.
#[derive(Clone, Copy, Debug)]
enum Loss {
    Cut,
    Zeros,
    Garbage,
}

fn lose(path: &Path, from: u64, loss: Loss) {
    let len = fs::metadata(path).unwrap().len();
    let file = OpenOptions::new().write(true).open(path).unwrap();
    match loss {
        Loss::Cut => file.set_len(from).unwrap(),
        Loss::Zeros => file
            .write_all_at(&vec![0; (len - from) as usize], from)
            .unwrap(),
        Loss::Garbage => {
            let garbage: Vec<u8> = (0..len - from).map(|i| (i * 37 + 11) as u8).collect();
            file.write_all_at(&garbage, from).unwrap();
        }
    }
}

#[tokio::test]
async fn an_unkeyed_append_costs_one_sync_and_a_keyed_one_two() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    let before = store.syncs();
    for n in 0..10 {
        w.append(&[user(&n.to_string())], &[started(&info)])
            .await
            .unwrap();
    }
    assert_eq!(store.syncs() - before, 10, "one fdatasync per append");
    assert_eq!(store.stats().appends, 10);
    let claim = KeyClaim {
        key: IdempotencyKey::parse("k").unwrap(),
        digest: "d".into(),
        owner: "o/1".into(),
        now_ms: 1,
        ttl_ms: 1_000_000,
        max_keys: 16,
    };
    store.claim_key(&info.session_id, &claim).await.unwrap();
    let before = store.syncs();
    w.append(&[user("keyed")], &[]).await.unwrap();
    assert_eq!(store.syncs() - before, 2, "commit.log and keys.log");
    w.release().await.unwrap();
}

#[tokio::test]
async fn acknowledged_appends_survive_any_loss_of_the_unsynced_data_files() {
    for loss in [Loss::Cut, Loss::Zeros, Loss::Garbage] {
        let (_tmp, store, id, dir, created) = crashed_session().await;
        lose(&dir.join(RECORDS), created, loss);
        lose(&dir.join(ARCHIVE), 0, loss);
        let read = store.read(&id).await.unwrap().unwrap();
        assert_eq!(
            read.records,
            all_records(),
            "{loss:?}: read restores in memory"
        );
        assert_eq!(read.archive.len(), 1, "{loss:?}");
        let (stored, w) = store.open(&id).await.unwrap().unwrap();
        assert_eq!(stored.records, all_records(), "{loss:?}");
        assert_eq!(stored.summary.entries, 1, "{loss:?}");
        assert!(
            stored.repaired.iter().any(|r| r.contains("journal")),
            "{loss:?}: {:?}",
            stored.repaired
        );
        // Open checkpointed: the files hold the appends, commit.log one plain point.
        let after = points(&dir);
        assert_eq!(after.len(), 1, "{loss:?}");
        assert!(after[0].journal.is_none());
        drop(w);
        let on_disk = store.read(&id).await.unwrap().unwrap();
        assert_eq!(
            on_disk.archive, read.archive,
            "{loss:?}: the archive restored on disk"
        );
        let (again, _w) = store.open(&id).await.unwrap().unwrap();
        assert_eq!(again.records, all_records(), "{loss:?}");
        assert!(again.repaired.is_empty(), "{loss:?}: {:?}", again.repaired);
    }
}

#[tokio::test]
async fn a_loss_inside_an_earlier_append_is_restored_too() {
    let (_tmp, store, id, dir, created) = crashed_session().await;
    // "b"'s frame zeroed, "c" and "d" intact behind it.
    let file = OpenOptions::new()
        .write(true)
        .open(dir.join(RECORDS))
        .unwrap();
    file.write_all_at(&[0; 4], created + 2).unwrap();
    let (stored, _w) = store.open(&id).await.unwrap().unwrap();
    assert_eq!(stored.records, all_records());
}

#[tokio::test]
async fn a_torn_journal_frame_drops_exactly_its_append() {
    let (_tmp, store, id, dir, _) = crashed_session().await;
    let commits = dir.join(COMMITS);
    let len = fs::metadata(&commits).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&commits)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let read = store.read(&id).await.unwrap().unwrap();
    assert_eq!(read.records, vec![user("a"), user("b"), user("c")]);
    let (stored, _w) = store.open(&id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![user("a"), user("b"), user("c")]);
    assert!(
        stored
            .repaired
            .iter()
            .any(|r| r.contains("never committed")),
        "{:?}",
        stored.repaired
    );
    assert_eq!(points(&dir).len(), 1);
}

#[tokio::test]
async fn release_leaves_one_plain_point_and_the_data_files_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    w.append(&[user("b")], &[started(&info)]).await.unwrap();
    w.append(&[user("c")], &[]).await.unwrap();
    let dir = store.session_dir(&info.session_id).unwrap();
    assert_eq!(points(&dir).len(), 3);
    w.release().await.unwrap();
    let after = points(&dir);
    assert_eq!(after.len(), 1);
    assert!(after[0].journal.is_none());
    assert_eq!(
        after[0].records,
        fs::metadata(dir.join(RECORDS)).unwrap().len()
    );
    assert_eq!(
        after[0].archive,
        fs::metadata(dir.join(ARCHIVE)).unwrap().len()
    );
    // The data files alone hold the session, as tools that read them expect.
    let (_, recovery) = crate::store::Log::<Record>::open(&dir.join(RECORDS)).unwrap();
    assert_eq!(recovery.records, vec![user("a"), user("b"), user("c")]);
}

#[tokio::test]
async fn a_session_of_plain_points_opens_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, w) = store.create(new(), &[user("a")]).await.unwrap();
    w.release().await.unwrap();
    let dir = store.session_dir(&info.session_id).unwrap();
    // What an older version wrote for two appends: frames, then a plain point each.
    let mut records = fs::read(dir.join(RECORDS)).unwrap();
    let mut commits = fs::read(dir.join(COMMITS)).unwrap();
    for text in ["b", "c"] {
        records.extend(encode_records(&dir, &[user(text)]).unwrap());
        let point = CommitPoint::plain(records.len() as u64, 0);
        commits.extend(encode_records(&dir, &[point]).unwrap());
    }
    fs::write(dir.join(RECORDS), &records).unwrap();
    fs::write(dir.join(COMMITS), &commits).unwrap();
    let (stored, w) = store.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![user("a"), user("b"), user("c")]);
    assert!(stored.repaired.is_empty(), "{:?}", stored.repaired);
    assert_eq!(
        fs::read(dir.join(COMMITS)).unwrap(),
        commits,
        "left as it was"
    );
    drop(w);
    // Without any commit.log, as before commit points: every valid frame.
    fs::remove_file(dir.join(COMMITS)).unwrap();
    let (stored, _w) = store.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![user("a"), user("b"), user("c")]);
}

#[tokio::test]
async fn a_compaction_between_journal_frames_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    w.append(&[user("b")], &[started(&info)]).await.unwrap();
    w.replace_records(&[user("summary")], &[]).await.unwrap();
    let dir = store.session_dir(&info.session_id).unwrap();
    let compacted = fs::metadata(dir.join(RECORDS)).unwrap().len();
    let archived = fs::metadata(dir.join(ARCHIVE)).unwrap().len();
    w.append(&[user("c")], &[started(&info)]).await.unwrap();
    drop(w);
    let all = points(&dir);
    assert_eq!(all.len(), 2);
    assert!(all[0].replace.is_some() && all[1].journal.is_some());
    lose(&dir.join(RECORDS), compacted, Loss::Cut);
    lose(&dir.join(ARCHIVE), archived, Loss::Zeros);
    let (stored, _w) = store.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![user("summary"), user("c")]);
    assert_eq!(stored.summary.entries, 2);
}

#[tokio::test]
async fn a_journal_past_its_bound_is_checkpointed() {
    let tmp = tempfile::tempdir().unwrap();
    let options = FileStoreOptions {
        inline: true,
        ..FileStoreOptions::default()
    };
    let store = FileStore::open(tmp.path(), options).unwrap();
    let (info, mut w) = store.create(new(), &[]).await.unwrap();
    let dir = store.session_dir(&info.session_id).unwrap();
    let big = "x".repeat(64 * 1024);
    let mut expected = Vec::new();
    for _ in 0..20 {
        w.append(&[user(&big)], &[]).await.unwrap();
        expected.push(user(&big));
        let len = fs::metadata(dir.join(COMMITS)).unwrap().len();
        assert!(len <= JOURNAL_BOUND + 70 * 1024, "{len}");
    }
    let all = points(&dir);
    assert!(
        all.len() < 20,
        "a checkpoint folded the journal: {}",
        all.len()
    );
    assert!(all[0].journal.is_none());
    drop(w);
    let (stored, _w) = store.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(stored.records, expected);
}

#[tokio::test]
async fn without_the_journal_an_append_syncs_its_three_files_and_both_formats_mix() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = FileStoreOptions {
        journal: false,
        ..FileStoreOptions::default()
    };
    let store = FileStore::open(tmp.path(), plain).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    let before = store.syncs();
    w.append(&[user("b")], &[started(&info)]).await.unwrap();
    assert_eq!(store.syncs() - before, 3);
    drop(w);
    let dir = store.session_dir(&info.session_id).unwrap();
    assert!(points(&dir).iter().all(|p| p.journal.is_none()));
    // The same session, journaled by a store with the journal, then a crash.
    let journaled = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (_, mut w) = journaled.open(&info.session_id).await.unwrap().unwrap();
    let before_c = fs::metadata(dir.join(RECORDS)).unwrap().len();
    w.append(&[user("c")], &[]).await.unwrap();
    drop(w);
    lose(&dir.join(RECORDS), before_c, Loss::Zeros);
    let (stored, _w) = journaled.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![user("a"), user("b"), user("c")]);
}
