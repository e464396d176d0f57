//! Issue 49 item 5: opening a stored session does not hold its archive. A successor taking a
//! server's sessions over opened each one, and each open read the whole archive (the file's
//! bytes and every entry decoded) only to count turns and usage: the successor's resident memory
//! peaked with it. Now the store folds the archive frame by frame ([`ArchiveSummary`]); this test
//! measures the heap an open of a session with a 6 MiB archive takes at its peak, with a
//! counting allocator, beside what a `read` (which returns the archive) takes. The same for the
//! session view's last answered approvals (`answered_approvals`), which the file store folds
//! keeping only those.
//!
//! One test in this binary: the allocator's counters are process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hookline::host::store::{
    ArchiveSummary, FileStore, FileStoreOptions, NewSession, SessionStore,
};
use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::record::{ApprovalRecord, ArchiveEntry, Decider, Decision};
use hookline::messages::session::ApprovalMode;
use hookline::messages::user::StopReason;
use peak_alloc::PeakAlloc;

#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

/// Turns in the session, and the tool output each archives (what makes an archive large).
const TURNS: usize = 1_500;
const OUTPUT_BYTES: usize = 4 * 1024;

/// The answered approvals the session view shows.
const ANSWERED: usize = 50;

/// Turn `turn`'s approval, answered by an operator.
fn answer(turn: usize) -> ApprovalRecord {
    ApprovalRecord {
        call_id: format!("c{turn}"),
        tool: "write_file".into(),
        classification: Classification {
            risk: Risk::Write,
            authority: Authority::Workspace,
            requires_prompt: true,
            summary: format!("write_file {turn}.txt"),
        },
        decision: Decision::Allow,
        decided_by: Decider::Operator,
        answered_by: Some(format!("acme/operator-{turn}")),
    }
}

/// The heap's peak, over what it held before, while `f` runs.
async fn peak_of<T>(f: impl AsyncFnOnce() -> T) -> (T, usize) {
    let before = HEAP.current_usage();
    HEAP.reset_peak_usage();
    let out = f().await;
    (out, HEAP.peak_usage().saturating_sub(before))
}

#[test]
fn an_open_holds_nothing_near_its_archive_s_size() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        // Inline: every read runs on this thread, no blocking pool to count besides.
        let options = FileStoreOptions {
            inline: true,
            ..FileStoreOptions::default()
        };
        let store = FileStore::open(dir.path(), options).unwrap();
        let new = NewSession {
            workspace_root: "/w".into(),
            approval_mode: ApprovalMode::AskAll,
            model: None,
            mode: None,
            owner: None,
        };
        let (facts, mut w) = store.create(new, &[]).await.unwrap();
        let output = "o".repeat(OUTPUT_BYTES);
        let mut written = ArchiveSummary::default();
        // Ten turns an append, to write it quickly; no records (the session's history lives
        // in its archive, as after a compaction).
        for turns in (0..TURNS).collect::<Vec<_>>().chunks(10) {
            let entries: Vec<ArchiveEntry> = turns
                .iter()
                .flat_map(|turn| {
                    [
                        ArchiveEntry::UserMessage {
                            text: format!("turn {turn}"),
                            original: None,
                            images: Vec::new(),
                        },
                        ArchiveEntry::Approval(answer(*turn)),
                        ArchiveEntry::ToolOutput {
                            call_id: format!("c{turn}"),
                            text: output.clone(),
                            images: Vec::new(),
                            success: true,
                        },
                        ArchiveEntry::TurnFinished {
                            stop_reason: StopReason::Completed,
                        },
                    ]
                })
                .collect();
            w.append(&[], &entries).await.unwrap();
            entries.into_iter().for_each(|e| written.add(e));
        }
        w.release().await.unwrap();
        let archive_bytes = std::fs::metadata(
            dir.path()
                .join("sessions")
                .join(facts.session_id.as_str())
                .join("archive.log"),
        )
        .unwrap()
        .len() as usize;
        assert!(archive_bytes > TURNS * OUTPUT_BYTES);
        let id = facts.session_id;

        // The measure sees a read, which returns the whole archive.
        let (read, read_peak) = peak_of(async || store.read(&id).await.unwrap().unwrap()).await;
        assert_eq!(read.archive.len(), TURNS * 4);
        drop(read);
        let (answered, answered_peak) = peak_of(async || {
            store
                .answered_approvals(&id, ANSWERED)
                .await
                .unwrap()
                .unwrap()
        })
        .await;
        let expected: Vec<ApprovalRecord> = (TURNS - ANSWERED..TURNS).map(answer).collect();
        assert_eq!(answered, expected);
        let (opened, open_peak) = peak_of(async || store.open(&id).await.unwrap().unwrap()).await;
        println!(
            "archive.log {archive_bytes} bytes: a read's heap peaked {read_peak} bytes over \
             what it held before, the last {ANSWERED} answers' {answered_peak}, an open's \
             {open_peak}"
        );
        // The same bound as an open's (below): the answers kept are a few KiB.
        assert!(
            answered_peak < archive_bytes / 10,
            "the answers' read peaked at {answered_peak} bytes for a {archive_bytes}-byte archive"
        );
        assert!(read_peak > archive_bytes, "a read holds the archive");
        assert_eq!(opened.0.summary, written);
        assert_eq!(opened.0.summary.user_turns, TURNS as u64);
        // What an open holds at most: a frame, the read buffer, the frames' offsets, the facts,
        // the records; a tenth of the archive is far above that and far below the archive.
        assert!(
            open_peak < archive_bytes / 10,
            "an open's heap peaked at {open_peak} bytes for a {archive_bytes}-byte archive"
        );
    });
}
