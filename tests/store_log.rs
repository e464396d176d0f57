//! `Log` and `Store` behaviour: round trips, torn and corrupt tails written by hand, atomic
//! rewrite, session directories (issue 4 item 7, issue 8 items 2 and 3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use hookline::host::store::{Log, Store, StoreError, TornReason, MAX_RECORD_BYTES};
use hookline::messages::session::SessionId;
use proptest::prelude::*;

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

fn log_with(path: &Path, records: &[&str]) -> u64 {
    let (mut log, _) = Log::<String>::open(path).unwrap();
    let owned: Vec<String> = records.iter().map(|s| s.to_string()).collect();
    log.append_all(&owned).unwrap();
    fs::metadata(path).unwrap().len()
}

#[test]
fn appended_records_are_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let (mut log, recovery) = Log::<String>::open(&path).unwrap();
    assert_eq!((recovery.records.len(), recovery.torn), (0, None));
    log.append(&"one".to_string()).unwrap();
    log.append_all(&["two".to_string(), "three".to_string()])
        .unwrap();
    log.append_all(&[]).unwrap();
    drop(log);
    let (_, recovery) = Log::<String>::open(&path).unwrap();
    assert_eq!(recovery.records, ["one", "two", "three"]);
    assert_eq!(recovery.torn, None);
}

#[test]
fn garbage_after_the_last_record_is_reported_and_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let good_end = log_with(&path, &["kept", "also kept"]);
    append_raw(&path, b"\x07\x00\x00\x00garbage!garbage");

    let (mut log, recovery) = Log::<String>::open(&path).unwrap();
    assert_eq!(recovery.records, ["kept", "also kept"]);
    let torn = recovery.torn.unwrap();
    assert_eq!((torn.offset, torn.dropped_bytes), (good_end, 19));
    assert_eq!(torn.reason, TornReason::ChecksumMismatch);
    assert_eq!(
        torn.to_string(),
        format!(
            "The log {} ended in a torn or corrupt record at byte {good_end} (a frame's checksum \
             does not match its bytes); its last 19 bytes were cut off and every record before \
             them was kept.",
            path.display()
        )
    );
    assert_eq!(
        fs::metadata(&path).unwrap().len(),
        good_end,
        "repaired on disk"
    );

    // Appends after the repair land right behind the good records.
    log.append(&"after".to_string()).unwrap();
    drop(log);
    let (_, recovery) = Log::<String>::open(&path).unwrap();
    assert_eq!(recovery.records, ["kept", "also kept", "after"]);
    assert_eq!(recovery.torn, None);
}

#[test]
fn every_truncation_of_the_last_record_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.log");
    let first_end = log_with(&full, &["first"]);
    let full_len = log_with(&full, &["second record"]);
    let bytes = fs::read(&full).unwrap();
    for cut in first_end + 1..full_len {
        let path = dir.path().join(format!("cut-{cut}.log"));
        fs::write(&path, &bytes[..cut as usize]).unwrap();
        let (_, recovery) = Log::<String>::open(&path).unwrap();
        assert_eq!(recovery.records, ["first"], "cut at {cut}");
        let torn = recovery.torn.unwrap();
        assert_eq!(
            (torn.offset, torn.dropped_bytes),
            (first_end, cut - first_end)
        );
    }
}

#[test]
fn a_flipped_byte_in_the_last_record_is_not_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let first_end = log_with(&path, &["first"]);
    let len = log_with(&path, &["second"]);
    let mut bytes = fs::read(&path).unwrap();
    bytes[len as usize - 2] ^= 0x20; // "second" -> "secoNd"
    fs::write(&path, &bytes).unwrap();
    let (_, recovery) = Log::<String>::open(&path).unwrap();
    assert_eq!(recovery.records, ["first"]);
    assert_eq!(recovery.torn.unwrap().offset, first_end);
}

#[test]
fn a_huge_length_field_is_corruption_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let good_end = log_with(&path, &["ok"]);
    append_raw(&path, &[0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5]);
    let (_, recovery) = Log::<String>::open(&path).unwrap();
    assert_eq!(recovery.records, ["ok"]);
    let torn = recovery.torn.unwrap();
    assert_eq!(torn.reason, TornReason::LengthOverCap(0x7fff_ffff));
    assert_eq!(torn.offset, good_end);
}

#[test]
fn a_valid_frame_of_the_wrong_type_is_an_error_and_the_file_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let len = log_with(&path, &["text, not a number"]);
    match Log::<u64>::open(&path) {
        Err(StoreError::Decode {
            offset: 0, path: p, ..
        }) => assert_eq!(p, path),
        other => panic!("expected a decode error, got {other:?}"),
    }
    assert_eq!(fs::metadata(&path).unwrap().len(), len);
}

#[test]
fn a_record_over_the_cap_is_refused_and_the_log_stays_valid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let (mut log, _) = Log::<String>::open(&path).unwrap();
    log.append(&"small".to_string()).unwrap();
    let huge = "x".repeat(MAX_RECORD_BYTES);
    assert!(matches!(
        log.append(&huge),
        Err(StoreError::RecordTooLarge { .. })
    ));
    log.append(&"next".to_string()).unwrap();
    drop(log);
    assert_eq!(
        Log::<String>::open(&path).unwrap().1.records,
        ["small", "next"]
    );
}

#[test]
fn rewrite_replaces_the_log_and_appends_continue_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let (mut log, _) = Log::<String>::open(&path).unwrap();
    log.append_all(&["a".into(), "b".into(), "c".into()])
        .unwrap();
    log.rewrite(&["summary".into()]).unwrap();
    log.append(&"d".to_string()).unwrap();
    drop(log);
    let (_, recovery) = Log::<String>::open(&path).unwrap();
    assert_eq!(recovery.records, ["summary", "d"]);
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["a.log"], "no temporary file is left behind");
}

#[test]
fn an_interrupted_rewrite_leaves_the_old_log_and_is_cleaned_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    log_with(&path, &["old"]);
    // What a crash between writing the temporary file and renaming it leaves.
    fs::write(dir.path().join("a.log.rewrite"), b"half a new log").unwrap();
    let (_, recovery) = Log::<String>::open(&path).unwrap();
    assert_eq!(recovery.records, ["old"]);
    assert!(!dir.path().join("a.log.rewrite").exists());
}

#[test]
fn store_creates_session_dirs_and_lists_them_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join(".hookline")).unwrap();
    let b = store.session_dir(&SessionId::from("b-2")).unwrap();
    let a = store.session_dir(&SessionId::from("a.1")).unwrap();
    assert_eq!(a, dir.path().join(".hookline/sessions/a.1"));
    assert!(a.is_dir() && b.is_dir());
    assert_eq!(
        store.session_dir(&SessionId::from("a.1")).unwrap(),
        a,
        "idempotent"
    );
    fs::write(dir.path().join(".hookline/sessions/stray-file"), b"").unwrap();
    assert_eq!(
        store.sessions().unwrap(),
        [SessionId::from("a.1"), SessionId::from("b-2")]
    );
}

#[test]
fn store_refuses_session_ids_that_escape_or_are_not_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    for id in ["..", "../../etc", "a/b", "/abs", "", ".hidden", "a\0b"] {
        match store.session_dir(&SessionId::from(id)) {
            Err(e @ StoreError::InvalidSessionId { .. }) => {
                assert!(e.to_string().contains("cannot name a directory"), "{e}");
            }
            other => panic!("{id:?} was not refused: {other:?}"),
        }
    }
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing created outside the store"
    );
}

#[cfg(unix)]
#[test]
fn store_refuses_a_session_dir_that_is_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("store/sessions/evil")).unwrap();
    let err = store.session_dir(&SessionId::from("evil")).unwrap_err();
    assert!(matches!(err, StoreError::NotADirectory { .. }), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Hostile input (issue 8 item 2): any bytes as a log file open without a panic;
    /// what comes back is a prefix of valid frames, and the file is cut to exactly that prefix.
    #[test]
    fn arbitrary_bytes_never_panic_and_repair_to_a_valid_prefix(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz.log");
        fs::write(&path, &bytes).unwrap();
        if let Ok((_, recovery)) = Log::<serde_json::Value>::open(&path) {
            let len = fs::metadata(&path).unwrap().len();
            match recovery.torn {
                Some(torn) => prop_assert_eq!((torn.offset, torn.offset + torn.dropped_bytes), (len, bytes.len() as u64)),
                None => prop_assert_eq!(len, bytes.len() as u64),
            }
            let (_, again) = Log::<serde_json::Value>::open(&path).unwrap();
            prop_assert_eq!(again.torn, None);
            prop_assert_eq!(again.records, recovery.records);
        }
    }

}

proptest! {
    // Each case syncs several appends to disk: fewer cases keep the suite quick.
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Valid frames followed by arbitrary bytes: the valid records always survive.
    #[test]
    fn valid_records_survive_any_trailing_bytes(tail in proptest::collection::vec(any::<u8>(), 1..512)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        log_with(&path, &["one", "two"]);
        append_raw(&path, &tail);
        let (_, recovery) = Log::<String>::open(&path).unwrap();
        prop_assert!(recovery.records.len() >= 2);
        prop_assert_eq!(&recovery.records[..2], &["one".to_string(), "two".to_string()][..]);
    }

    /// Arbitrary JSON records round-trip through a log (exactly: floats too).
    #[test]
    fn arbitrary_json_records_round_trip(records in proptest::collection::vec(json_value(), 0..8)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let (mut log, _) = Log::<serde_json::Value>::open(&path).unwrap();
        for r in &records {
            log.append(r).unwrap();
        }
        drop(log);
        let (_, recovery) = Log::<serde_json::Value>::open(&path).unwrap();
        prop_assert_eq!(recovery.torn, None);
        prop_assert_eq!(recovery.records, records);
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A failed append is an error naming the file, and a log that could not undo the partial write
/// refuses further appends instead of writing behind garbage. `/dev/full` fails every write and
/// cannot be truncated.
#[cfg(target_os = "linux")]
#[test]
fn a_log_that_cannot_undo_a_failed_append_refuses_further_writes() {
    let path = Path::new("/dev/full");
    let (mut log, _) = Log::<String>::open(path).unwrap();
    match log.append(&"x".to_string()) {
        Err(e @ StoreError::Io { .. }) => assert!(e.to_string().contains("/dev/full"), "{e}"),
        other => panic!("expected an I/O error, got {other:?}"),
    }
    assert!(matches!(
        log.append(&"y".to_string()),
        Err(StoreError::Poisoned { .. })
    ));
}
