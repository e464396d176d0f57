//! The store journal (issue 47, fifth session): one sync per batch whatever its sessions, every
//! acknowledged append restored from it when the unsynced `commit.log`s and data files are lost,
//! stale entries (an older `commit.log` generation) never applied, a live store's journal never
//! touched, a dead one deleted once recovered, the bound's truncation, the clean drop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::commit::commit_batch;
use super::recovery::create_session;
use super::store_journal::{recover_dead, StoreJournal, JOURNALS};
use super::tests::{new, user};
use super::*;
use crate::store::frame::{read_frame, FrameRead};
use crate::store::log::scan;
use std::time::{Duration, Instant};

/// A copy of the store at `root` as a crash at this moment leaves it on disk: no lock held (a
/// copy has none), and every byte behind each `commit.log`'s first point (the last it synced)
/// lost, in `commit.log` and in the data files (zeroed: the worst a power loss leaves, short
/// of the journal's own synced bytes).
fn crash_copy(root: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(root, copy.path());
    for entry in fs::read_dir(copy.path().join(SESSIONS)).unwrap() {
        let dir = entry.unwrap().path();
        let commits = dir.join(COMMITS);
        let bytes = fs::read(&commits).unwrap();
        let mut reader = bytes.as_slice();
        let FrameRead::Payload(payload) = read_frame(&mut reader, bytes.len() as u64).unwrap()
        else {
            panic!("{} starts with no point", commits.display());
        };
        let base: CommitPoint = serde_json::from_slice(&payload).unwrap();
        assert!(base.journal.is_none());
        zero_after(&commits, (bytes.len() - reader.len()) as u64);
        zero_after(&dir.join(RECORDS), base.records);
        zero_after(&dir.join(ARCHIVE), base.archive);
    }
    copy
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn zero_after(path: &Path, from: u64) {
    let len = fs::metadata(path).unwrap().len();
    if len > from {
        let file = OpenOptions::new().write(true).open(path).unwrap();
        file.write_all_at(&vec![0; (len - from) as usize], from)
            .unwrap();
    }
}

/// The journals in `root` (live or dead), by name; none without `journal/`.
fn journals(root: &Path) -> Vec<PathBuf> {
    let Ok(listing) = fs::read_dir(root.join(JOURNALS)) else {
        return Vec::new();
    };
    let mut all: Vec<PathBuf> = listing
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    all.sort();
    all
}

fn points(dir: &Path) -> Vec<CommitPoint> {
    scan::<CommitPoint>(&dir.join(COMMITS))
        .unwrap()
        .unwrap()
        .records
}

/// Waits (bounded) until `done` holds: a store's last handle may be dropped on its committer
/// thread, just after the test let go of it.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[tokio::test]
async fn a_batch_of_many_sessions_costs_one_sync_and_survives_losing_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join(SESSIONS);
    let journals_dir = tmp.path().join(JOURNALS);
    fs::create_dir_all(&sessions).unwrap();
    let journal = Mutex::new(StoreJournal::new(journals_dir, STORE_JOURNAL_BOUND));
    let counter = AtomicU64::new(0);
    let mut all = Vec::new();
    for _ in 0..8 {
        let (_, files) = create_session(&sessions, new(), &[], &counter).unwrap();
        all.push(Arc::new(Mutex::new(files)));
    }
    let mut pool = SyncPool::new(4);
    for round in 0..3 {
        let mut answers = Vec::new();
        let batch = all
            .iter()
            .map(|files| {
                let (reply, answer) = oneshot::channel();
                answers.push(answer);
                let text = format!("{round}");
                Job {
                    files: Arc::clone(files),
                    records: encode_records(Path::new("r"), &[user(&text)]).unwrap(),
                    archive: Vec::new(),
                    journal: true,
                    reply,
                }
            })
            .collect();
        let committed = commit_batch(batch, &mut pool, &journal);
        assert_eq!(
            committed.syncs, 1,
            "one fdatasync for a batch of 8 sessions"
        );
        send_answers(committed.answers);
        for answer in answers {
            answer.await.unwrap().unwrap();
        }
    }
    // A crash: the sessions' locks go, the journal's too (its store is gone), and the unsynced
    // commit.logs and data files are lost.
    let dirs: Vec<PathBuf> = all.iter().map(|f| lock(f).dir.clone()).collect();
    drop(all);
    drop(journal);
    let copy = crash_copy(tmp.path());
    recover_dead(
        &copy.path().join(JOURNALS),
        &copy.path().join(SESSIONS),
        None,
    )
    .unwrap();
    assert!(
        journals(copy.path()).is_empty(),
        "the dead journal is deleted"
    );
    for dir in dirs {
        let dir = copy.path().join(SESSIONS).join(dir.file_name().unwrap());
        let read = recovery::read_session(&dir).unwrap().unwrap();
        assert_eq!(read.records, vec![user("0"), user("1"), user("2")]);
        assert_eq!(points(&dir).len(), 1, "recovered and checkpointed");
    }
}

#[tokio::test]
async fn a_store_issues_one_sync_per_batch_however_many_sessions_it_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let mut writers = Vec::new();
    for _ in 0..16 {
        writers.push(store.create(new(), &[]).await.unwrap().1);
    }
    for round in 0..5 {
        let appends = writers
            .iter_mut()
            .map(|w| async move { w.append(&[user(&format!("{round}"))], &[]).await });
        for appended in futures::future::join_all(appends).await {
            appended.unwrap();
        }
    }
    let stats = store.stats();
    assert_eq!(stats.appends, 80);
    assert_eq!(store.syncs(), stats.commits, "one sync per batch");
    for w in writers {
        w.release().await.unwrap();
    }
}

#[tokio::test]
async fn entries_of_an_older_generation_are_never_applied() {
    // P1 appends "b" and "c" and crashes.
    let first = tempfile::tempdir().unwrap();
    let store = FileStore::open(first.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    let id = info.session_id;
    w.append(&[user("b")], &[]).await.unwrap();
    w.append(&[user("c")], &[]).await.unwrap();
    let second = crash_copy(first.path());
    let p1_journal = journals(second.path()).pop().unwrap();
    let p1_bytes = fs::read(&p1_journal).unwrap();
    // P2 opens (recovering P1's journal), appends "d" and crashes.
    let p2 = FileStore::open(second.path(), FileStoreOptions::default()).unwrap();
    assert!(
        journals(second.path()).is_empty(),
        "P1's recovered, P2's not made yet"
    );
    let (opened, mut w2) = p2.open(&id).await.unwrap().unwrap();
    assert_eq!(opened.records, vec![user("a"), user("b"), user("c")]);
    w2.append(&[user("d")], &[]).await.unwrap();
    assert_eq!(journals(second.path()), vec![p2.journal_path().unwrap()]);
    let third = crash_copy(second.path());
    // P1's journal again (as if P2 crashed before deleting it): its entries are of the
    // generation P2's recovery left. Named to be recovered after P2's, so that applied, its
    // "b" would land where "d" is.
    fs::write(third.path().join(JOURNALS).join("zz-p1.log"), &p1_bytes).unwrap();
    assert_eq!(journals(third.path()).len(), 2);
    let p3 = FileStore::open(third.path(), FileStoreOptions::default()).unwrap();
    let (opened, _w3) = p3.open(&id).await.unwrap().unwrap();
    assert_eq!(
        opened.records,
        vec![user("a"), user("b"), user("c"), user("d")]
    );
    assert!(
        journals(third.path()).is_empty(),
        "both recovered, P3 made none"
    );
    assert_eq!(p3.journal_path(), None);
    drop((w, w2));
}

#[tokio::test]
async fn a_live_stores_journal_is_never_touched() {
    let tmp = tempfile::tempdir().unwrap();
    let a = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = a.create(new(), &[user("a")]).await.unwrap();
    w.append(&[user("b")], &[]).await.unwrap();
    let path = a.journal_path().unwrap();
    let before = fs::read(&path).unwrap();
    assert!(!before.is_empty());
    let b = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let read = b.read(&info.session_id).await.unwrap().unwrap();
    assert_eq!(read.records, vec![user("a"), user("b")]);
    assert!(matches!(
        b.open(&info.session_id).await,
        Err(StoreError::Leased { .. })
    ));
    assert_eq!(b.sessions().await.unwrap(), vec![info.session_id.clone()]);
    assert_eq!(fs::read(&path).unwrap(), before, "A's journal as A left it");
    assert_eq!(
        journals(tmp.path()),
        vec![path.clone()],
        "B, which only read, made none"
    );
    w.append(&[user("c")], &[]).await.unwrap();
    assert!(fs::read(&path).unwrap().len() > before.len());
    w.release().await.unwrap();
}

#[tokio::test]
async fn the_journal_is_truncated_past_its_bound_and_its_sessions_checkpointed() {
    let tmp = tempfile::tempdir().unwrap();
    let options = FileStoreOptions {
        inline: true,
        store_journal_bound: 8 * 1024,
        ..FileStoreOptions::default()
    };
    let store = FileStore::open(tmp.path(), options).unwrap();
    let (x, mut wx) = store.create(new(), &[]).await.unwrap();
    let (y, mut wy) = store.create(new(), &[]).await.unwrap();
    let text = "t".repeat(1000);
    let mut truncations = 0;
    let mut last = 0;
    let mut expected = Vec::new();
    for _ in 0..30 {
        wx.append(&[user(&text)], &[]).await.unwrap();
        wy.append(&[user(&text)], &[]).await.unwrap();
        expected.push(user(&text));
        let path = store.journal_path().unwrap();
        let len = fs::metadata(&path).unwrap().len();
        assert!(len <= 8 * 1024 + 1200, "bounded: {len}");
        if len < last {
            truncations += 1;
            // Both sessions checkpointed: their entries are stale, or their last append
            // (made after the truncation) is the only one.
            for id in [&x.session_id, &y.session_id] {
                let dir = store.session_dir(id).unwrap();
                assert!(points(&dir).len() <= 2, "{:?}", points(&dir).len());
            }
        }
        last = len;
    }
    assert!(truncations >= 2, "{truncations} truncations");
    let copy = crash_copy(tmp.path());
    drop((wx, wy));
    let again = FileStore::open(copy.path(), FileStoreOptions::default()).unwrap();
    for id in [&x.session_id, &y.session_id] {
        let (opened, _w) = again.open(id).await.unwrap().unwrap();
        assert_eq!(opened.records, expected);
    }
}

#[tokio::test]
async fn a_clean_drop_deletes_the_journal_and_a_dropped_writer_leaves_it_to_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    w.append(&[user("b")], &[]).await.unwrap();
    w.release().await.unwrap();
    drop(store);
    eventually("the journal deleted", || journals(tmp.path()).is_empty());

    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (_, mut w) = store.open(&info.session_id).await.unwrap().unwrap();
    w.append(&[user("c")], &[]).await.unwrap();
    let path = store.journal_path().unwrap();
    // Dropped without a release: its append is in commit.log's journal frame alone, so the
    // store journal stays, dead, for the next opener.
    drop(w);
    drop(store);
    eventually("the journal unlocked", || {
        File::open(&path).is_ok_and(|f| flock(&f, FlockOperation::NonBlockingLockExclusive).is_ok())
    });
    assert_eq!(journals(tmp.path()), vec![path]);
    let copy = crash_copy(tmp.path());
    let store = FileStore::open(copy.path(), FileStoreOptions::default()).unwrap();
    let (opened, _w) = store.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(opened.records, vec![user("a"), user("b"), user("c")]);
    assert!(journals(copy.path()).is_empty(), "recovered, and none made");
}

#[tokio::test]
async fn an_entry_of_another_generation_is_not_applied_even_where_it_would_fit() {
    // P1 appends "b" to a session of "a" and crashes: its journal's entry continues a
    // commit.log of generation 0 ending where the creation's point ends.
    let first = tempfile::tempdir().unwrap();
    let store = FileStore::open(first.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    w.append(&[user("b")], &[]).await.unwrap();
    let crashed = crash_copy(first.path());
    drop(w);
    // Since then the session went on elsewhere: its commit.log was replaced by one point of a
    // later generation that names the same lengths ("b" never reached the data files), so the
    // stale entry would continue it exactly.
    let dir = crashed.path().join(SESSIONS).join(info.session_id.as_str());
    let records = points(&dir)[0].records;
    let created = encode_records(&dir, &[CommitPoint::base(records, 0, 0)]).unwrap();
    let later = encode_records(&dir, &[CommitPoint::base(records, 0, 1)]).unwrap();
    assert_eq!(created.len(), later.len());
    fs::write(dir.join(COMMITS), &later).unwrap();
    fs::write(
        dir.join(RECORDS),
        &fs::read(dir.join(RECORDS)).unwrap()[..records as usize],
    )
    .unwrap();
    let again = FileStore::open(crashed.path(), FileStoreOptions::default()).unwrap();
    let (opened, _w) = again.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(
        opened.records,
        vec![user("a")],
        "the stale entry is not applied"
    );
    // The same journal against generation 0 puts "b" back: the entry was whole.
    let crashed = crash_copy(first.path());
    let again = FileStore::open(crashed.path(), FileStoreOptions::default()).unwrap();
    let (opened, _w) = again.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(opened.records, vec![user("a"), user("b")]);
}
