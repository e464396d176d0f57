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
use std::collections::BTreeMap;

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

#[tokio::test]
async fn a_batch_of_many_sessions_costs_one_sync_and_survives_losing_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join(SESSIONS);
    let journals_dir = tmp.path().join(JOURNALS);
    fs::create_dir_all(&sessions).unwrap();
    let journal = Mutex::new(StoreJournal::new(journals_dir, STORE_JOURNAL_BOUND).unwrap());
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
    assert!(journals(tmp.path()).is_empty(), "deleted by the drop");

    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (_, mut w) = store.open(&info.session_id).await.unwrap().unwrap();
    w.append(&[user("c")], &[]).await.unwrap();
    let path = store.journal_path().unwrap();
    // Dropped without a release: its append is in commit.log's journal frame alone, so the
    // store journal stays, dead, for the next opener.
    drop(w);
    drop(store);
    assert!(!locked(&path), "let go of by the drop");
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

/// Every directory (`None`) and file (its bytes) under `root`.
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut all = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                all.insert(path.clone(), None);
                stack.push(path);
            } else {
                all.insert(path.clone(), Some(fs::read(&path).unwrap()));
            }
        }
    }
    all
}

/// A root with session `s1` (records "a", "b", an archive entry), written by a store that was
/// dropped cleanly, and without `journal/` (as a copy of `sessions/` alone would be).
async fn written_root() -> (tempfile::TempDir, SessionId) {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    w.append(&[user("b")], &[ArchiveEntry::SessionStarted(info.info())])
        .await
        .unwrap();
    w.release().await.unwrap();
    drop(store);
    assert!(journals(tmp.path()).is_empty(), "deleted by the drop");
    fs::remove_dir(tmp.path().join(JOURNALS)).unwrap();
    (tmp, info.session_id)
}

/// Holds whether the journal at `path` is locked (by a live store).
fn locked(path: &Path) -> bool {
    let file = File::open(path).unwrap();
    flock(&file, FlockOperation::NonBlockingLockExclusive).is_err()
}

#[tokio::test]
async fn a_store_that_only_reads_writes_nothing_and_its_first_append_makes_the_journal() {
    let (tmp, id) = written_root().await;
    let before = tree(tmp.path());
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    assert_eq!(store.sessions().await.unwrap(), vec![id.clone()]);
    let read = store.read(&id).await.unwrap().unwrap();
    assert_eq!(read.records, vec![user("a"), user("b")]);
    let page = store.archive_page(&id, 0, 10).await.unwrap().unwrap();
    assert_eq!(page.entries.len(), 1);
    assert!(store.answered_approvals(&id, 5).await.unwrap().is_some());
    assert!(!store.lease_held(&id).await.unwrap());
    assert_eq!(store.journal_path(), None);
    assert_eq!(
        tree(tmp.path()),
        before,
        "no journal, no journal/ directory"
    );

    // A creation syncs its own files and needs no journal either; the first append makes it.
    let (_, mut w) = store.create(new(), &[user("x")]).await.unwrap();
    assert!(!tmp.path().join(JOURNALS).exists());
    w.append(&[user("y")], &[]).await.unwrap();
    let path = store.journal_path().expect("made by the first append");
    assert_eq!(journals(tmp.path()), vec![path.clone()]);
    assert!(locked(&path), "held by its store from the first append on");
    assert!(fs::metadata(&path).unwrap().len() > 0);
    w.release().await.unwrap();
    // The committer holds the journal only during a batch: the store's last handle drops it.
    drop(store);
    assert!(journals(tmp.path()).is_empty(), "deleted by the drop");
}

/// Each writer's first append, all at once: on threads of their own (each with its runtime),
/// so that an inline store commits them on several threads together.
fn first_appends_on_threads(writers: Vec<Box<dyn SessionWriter>>) -> Vec<Box<dyn SessionWriter>> {
    let start = Arc::new(std::sync::Barrier::new(writers.len()));
    let threads: Vec<_> = writers
        .into_iter()
        .map(|mut w| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                start.wait();
                runtime.block_on(w.append(&[user("first")], &[])).unwrap();
                w
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[tokio::test]
async fn first_appends_at_once_make_one_journal() {
    for inline in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let options = FileStoreOptions {
            inline,
            ..FileStoreOptions::default()
        };
        let store = FileStore::open(tmp.path(), options).unwrap();
        let mut writers = Vec::new();
        for _ in 0..8 {
            writers.push(store.create(new(), &[]).await.unwrap().1);
        }
        assert!(!tmp.path().join(JOURNALS).exists());
        let writers = if inline {
            first_appends_on_threads(writers)
        } else {
            // Queued for the committer together.
            let first = [user("first")];
            let appends = writers.iter_mut().map(|w| w.append(&first, &[]));
            for appended in futures::future::join_all(appends).await {
                appended.unwrap();
            }
            writers
        };
        let path = store.journal_path().unwrap();
        let made: Vec<PathBuf> = fs::read_dir(tmp.path().join(JOURNALS))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(
            made,
            vec![path],
            "one journal, no `.new` left (inline: {inline})"
        );
        assert_eq!(store.stats().appends, 8);
        for w in writers {
            w.release().await.unwrap();
        }
    }
}

#[tokio::test]
async fn a_journal_that_cannot_be_made_leaves_appends_to_their_own_sync_and_the_next_one_makes_it()
{
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    // A file where the directory goes: the journal cannot be made.
    fs::write(tmp.path().join(JOURNALS), b"in the way").unwrap();
    let before = store.syncs();
    w.append(&[user("b")], &[]).await.unwrap();
    assert_eq!(store.syncs() - before, 1, "its own commit.log");
    assert_eq!(store.journal_path(), None);
    // Two sessions' appends at once: each syncs its own `commit.log`, which then holds them.
    let (other_info, mut other) = store.create(new(), &[]).await.unwrap();
    let before = store.syncs();
    let c = [user("c")];
    let (one, two) = tokio::join!(w.append(&c, &[]), other.append(&c, &[]));
    one.unwrap();
    two.unwrap();
    assert_eq!(store.syncs() - before, 2, "one commit.log each");
    let copy = tempfile::tempdir().unwrap();
    copy_dir(tmp.path(), copy.path());
    fs::remove_file(copy.path().join(JOURNALS)).unwrap();
    let again = FileStore::open(copy.path(), FileStoreOptions::default()).unwrap();
    let (opened, _w) = again.open(&info.session_id).await.unwrap().unwrap();
    assert_eq!(opened.records, vec![user("a"), user("b"), user("c")]);
    let (opened, _o) = again.open(&other_info.session_id).await.unwrap().unwrap();
    assert_eq!(opened.records, vec![user("c")]);

    // Out of the way: the next append makes the journal, and syncs only it.
    fs::remove_file(tmp.path().join(JOURNALS)).unwrap();
    let before = store.syncs();
    w.append(&[user("d")], &[]).await.unwrap();
    assert_eq!(store.syncs() - before, 1, "the store journal");
    let path = store.journal_path().expect("made by the append after");
    assert!(locked(&path));
    let read = store.read(&info.session_id).await.unwrap().unwrap();
    assert_eq!(
        read.records,
        vec![user("a"), user("b"), user("c"), user("d")]
    );
}

#[tokio::test]
async fn appends_through_a_journal_made_by_the_first_one_survive_a_crash() {
    let (tmp, id) = written_root().await;
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (_, mut w) = store.open(&id).await.unwrap().unwrap();
    assert_eq!(store.journal_path(), None, "opening a writer makes none");
    w.append(&[user("c")], &[]).await.unwrap();
    w.append(&[user("d")], &[]).await.unwrap();
    // A crash: only the store journal holds "c" and "d".
    let copy = crash_copy(tmp.path());
    drop(w);
    let dead = journals(copy.path());
    assert_eq!(dead.len(), 1);
    // A store that only reads recovers the dead journal on open, and makes none of its own.
    let reader = FileStore::open(copy.path(), FileStoreOptions::default()).unwrap();
    assert!(journals(copy.path()).is_empty(), "recovered and deleted");
    let read = reader.read(&id).await.unwrap().unwrap();
    assert_eq!(
        read.records,
        vec![user("a"), user("b"), user("c"), user("d")]
    );
    assert_eq!(reader.journal_path(), None);
}

#[tokio::test]
async fn a_root_that_cannot_be_written_opens_and_reads() {
    use std::os::unix::fs::PermissionsExt as _;
    let (tmp, id) = written_root().await;
    let set = |dirs: u32, files: u32| {
        for (path, content) in tree(tmp.path()) {
            let mode = if content.is_some() { files } else { dirs };
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        }
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(dirs)).unwrap();
    };
    set(0o555, 0o444);
    // Root (or CAP_DAC_OVERRIDE) writes whatever the permissions say.
    if File::create(tmp.path().join("probe")).is_ok() {
        set(0o755, 0o644);
        eprintln!("skipped: permissions are not enforced for this user (running as root?)");
        return;
    }
    let before = tree(tmp.path());
    let opened = FileStore::open(tmp.path(), FileStoreOptions::default());
    let read = match &opened {
        Ok(store) => Some((
            store.sessions().await,
            store.read(&id).await.map(|r| r.map(|s| s.records)),
        )),
        Err(_) => None,
    };
    let after = tree(tmp.path());
    set(0o755, 0o644);
    let store = opened.unwrap();
    let (sessions, records) = read.unwrap();
    assert_eq!(sessions.unwrap(), vec![id]);
    assert_eq!(records.unwrap().unwrap(), vec![user("a"), user("b")]);
    assert_eq!(after, before);
    drop(store);
}

/// The store's own journal while it is being made (`.new`, not yet locked) is left alone by the
/// store's own looks for dead journals (a read on another thread meanwhile), which know it by
/// its name; another store's `.new` left unlocked is a dead one, deleted.
#[tokio::test]
async fn a_store_never_takes_its_own_journal_being_made_for_a_dead_one() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (info, w) = store.create(new(), &[user("a")]).await.unwrap();
    fs::create_dir(tmp.path().join(JOURNALS)).unwrap();
    let own = store.inner.own_journal.with_extension("new");
    let other = tmp.path().join(JOURNALS).join("1-dead.new");
    fs::write(&own, b"").unwrap();
    fs::write(&other, b"").unwrap();
    store.read(&info.session_id).await.unwrap().unwrap();
    assert!(own.exists(), "its own, being made");
    assert!(!other.exists(), "another's, dead");
    w.release().await.unwrap();
}
