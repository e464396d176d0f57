//! The file store's own tests: commit points, torn tails, compactions, descriptors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use hookline_messages::session::ApprovalMode;

pub(super) fn user(text: &str) -> Record {
    Record::User {
        text: text.into(),
        images: Vec::new(),
    }
}

pub(super) fn new() -> NewSession {
    NewSession {
        workspace_root: "/w".into(),
        approval_mode: ApprovalMode::AskAll,
        model: None,
        mode: None,
        owner: None,
    }
}

async fn one_session(store: &FileStore) -> (SessionId, PathBuf) {
    let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
    w.append(&[user("b")], &[ArchiveEntry::SessionStarted(info.info())])
        .await
        .unwrap();
    w.release().await.unwrap();
    let dir = store.session_dir(&info.session_id).unwrap();
    (info.session_id, dir)
}

fn append_raw(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

#[tokio::test]
async fn an_append_without_its_commit_point_is_cut_off_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (id, dir) = one_session(&store).await;
    // A crash after the record frames but before the archive frames and the commit point.
    append_raw(
        &dir.join(RECORDS),
        &encode_records(&dir, &[user("c"), user("d")]).unwrap(),
    );
    let read = store.read(&id).await.unwrap().unwrap();
    assert_eq!(
        read.records,
        vec![user("a"), user("b")],
        "read shows no half"
    );
    let (stored, _w) = store.open(&id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![user("a"), user("b")]);
    assert_eq!(stored.summary.entries, 1);
    assert_eq!(stored.repaired.len(), 1, "{:?}", stored.repaired);
    assert!(stored.repaired[0].contains("never committed"));
}

#[tokio::test]
async fn a_torn_tail_is_reported_and_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (id, dir) = one_session(&store).await;
    let frame = encode_records(&dir, &[user("torn")]).unwrap();
    append_raw(&dir.join(ARCHIVE), &frame[..frame.len() - 3]);
    let (stored, _w) = store.open(&id).await.unwrap().unwrap();
    assert_eq!(stored.summary.entries, 1);
    assert!(stored
        .repaired
        .iter()
        .any(|r| r.contains("torn or corrupt")));
    let len = fs::metadata(dir.join(ARCHIVE)).unwrap().len();
    drop(_w);
    let (again, _w) = store.open(&id).await.unwrap().unwrap();
    assert!(again.repaired.is_empty());
    assert_eq!(fs::metadata(dir.join(ARCHIVE)).unwrap().len(), len);
}

#[tokio::test]
async fn a_committed_compaction_interrupted_before_its_rename_is_completed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (id, dir) = one_session(&store).await;
    // The state between `replace`'s commit (commit.log replaced) and its rename.
    let new_records = encode_records(&dir, &[user("summary")]).unwrap();
    write_new_file(&rewrite_path(&dir.join(RECORDS)), &new_records).unwrap();
    let archive_len = fs::metadata(dir.join(ARCHIVE)).unwrap().len();
    let point = CommitPoint {
        records: new_records.len() as u64,
        archive: archive_len,
        replace: Some(Rewrite {
            len: new_records.len() as u64,
            crc: crc32c::crc32c(&new_records),
        }),
        keys: None,
        journal: None,
        generation: Some(1),
    };
    replace_file(&dir.join(COMMITS), &encode_records(&dir, &[point]).unwrap()).unwrap();
    assert_eq!(
        store.read(&id).await.unwrap().unwrap().records,
        vec![user("summary")]
    );
    let (stored, _w) = store.open(&id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![user("summary")]);
    assert!(!rewrite_path(&dir.join(RECORDS)).exists());
}

#[tokio::test]
async fn an_uncommitted_compaction_is_discarded() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (id, dir) = one_session(&store).await;
    let rewrite = rewrite_path(&dir.join(RECORDS));
    write_new_file(&rewrite, &encode_records(&dir, &[user("x")]).unwrap()).unwrap();
    let (stored, _w) = store.open(&id).await.unwrap().unwrap();
    assert_eq!(stored.records, vec![user("a"), user("b")]);
    assert!(!rewrite.exists());
}

/// Descriptors this process holds on files under `dir`, by file name.
fn open_files_under(dir: &Path) -> Vec<String> {
    let dir = dir.canonicalize().unwrap();
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .filter_map(|target| Some(target.file_name()?.to_str()?.to_owned()))
        .collect()
}

#[tokio::test]
async fn an_idle_open_session_holds_only_its_lock_open() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let (reopened, _) = one_session(&store).await;
    let mut writers = Vec::new();
    for n in 0..10 {
        let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
        w.append(
            &[user(&n.to_string())],
            &[ArchiveEntry::SessionStarted(info.info())],
        )
        .await
        .unwrap();
        writers.push(w);
    }
    let (_, mut w) = store.open(&reopened).await.unwrap().unwrap();
    w.append(&[user("c")], &[]).await.unwrap();
    w.replace_records(&[user("summary")], &[]).await.unwrap();
    writers.push(w);
    let open = open_files_under(&tmp.path().join(SESSIONS));
    assert_eq!(open.len(), 11, "{open:?}");
    assert!(open.iter().all(|name| name == LOCK), "{open:?}");
    // And one for the store: its journal (issue 47).
    let journal = store.journal_path().expect("made by the appends");
    let journal_name = journal.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        open_files_under(journal.parent().unwrap()),
        vec![journal_name]
    );
    drop(writers);
    assert!(open_files_under(&tmp.path().join(SESSIONS)).is_empty());
    // The data files were written all the same.
    let read = store.read(&reopened).await.unwrap().unwrap();
    assert_eq!(read.records, vec![user("summary")]);
    assert_eq!(read.archive.len(), 1);
}

#[tokio::test]
async fn a_session_without_facts_does_not_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    // A create that crashed before writing its facts.
    fs::create_dir(tmp.path().join(SESSIONS).join("s-half")).unwrap();
    let id = SessionId::from("s-half");
    assert!(store.open(&id).await.unwrap().is_none());
    assert!(store.read(&id).await.unwrap().is_none());
    assert!(store.sessions().await.unwrap().is_empty());
    assert!(matches!(
        store.open(&SessionId::from("../x")).await,
        Err(StoreError::InvalidSessionId { .. })
    ));
}

/// Issue 47: the committer keeps its sync threads from one batch to the next. A helper waits for
/// the next job holding the queue; the committer must never wait for that queue itself (it did,
/// and a second batch of several files hung).
#[test]
fn a_kept_sync_pool_syncs_batch_after_batch() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<File> = (0..3)
        .map(|i| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.path().join(format!("f{i}")))
                .unwrap()
        })
        .collect();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut pool = super::commit::SyncPool::new(4);
        for _ in 0..50 {
            let list: Vec<(usize, &File, &Path, &'static str)> = files
                .iter()
                .enumerate()
                .map(|(i, file)| (i, file, Path::new("/"), RECORDS))
                .collect();
            let failures = super::commit::sync_all(&list, &mut pool);
            if !failures.is_empty() {
                let _ = done.send(false);
                return;
            }
        }
        let _ = done.send(true);
    });
    let synced = finished.recv_timeout(std::time::Duration::from_secs(30));
    assert_eq!(synced, Ok(true), "50 batches of 3 files each synced");
}

/// Two stores (two processes) sharing one directory: one that created many sessions since the
/// other opened does not leave the other out of ids (its counter catches up on the first clash).
#[tokio::test]
async fn a_store_whose_counter_lags_another_still_creates_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let early = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    let busy = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
    for _ in 0..(ID_TRIES * 2) {
        let (_, w) = busy.create(new(), &[user("a")]).await.unwrap();
        w.release().await.unwrap();
    }
    let (info, w) = early.create(new(), &[user("b")]).await.unwrap();
    w.release().await.unwrap();
    assert_eq!(info.session_id.as_str(), format!("s{}", ID_TRIES * 2 + 1));
    let (next, _w) = early.create(new(), &[user("c")]).await.unwrap();
    assert_eq!(next.session_id.as_str(), format!("s{}", ID_TRIES * 2 + 2));
}
