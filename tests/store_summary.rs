//! Issue 49 item 5: opening a session folds its archive into an [`ArchiveSummary`] as the store
//! reads it, instead of holding the whole archive. The fold must give what counting the whole
//! archive gives, on any archive: the entry count, the user turns, the usage (in total and per
//! model) and the turn a crash or a replacement left open (what `open_turn` finds). And a session
//! written through the file store in any pieces, its journal checkpointed or not, opens to the
//! summary of the archive `read` returns; and any page of it (`archive_page`, the archive route,
//! which keeps only the page as it reads) is that page of the archive, and its last answered
//! approvals (`answered_approvals`, the session view's `answered`) are those of the archive. The
//! same for PostgreSQL, whose page and answers are SQL that fetches only them (a real database:
//! `support/pg.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

use hookline::host::store::{
    AnsweredApprovals, ArchivePage, ArchiveSummary, FileStore, FileStoreOptions, NewSession,
    SessionStore, SessionWriter, StoredSession,
};
use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::cut_off::open_turn;
use hookline::messages::model::{FinishReason, Purpose, Usage, UsageByModel, UsageTotals};
use hookline::messages::record::{ApprovalRecord, ArchiveEntry, Decider, Decision, Record};
use hookline::messages::session::ApprovalMode;
use hookline::messages::tool::{ToolCall, ToolProvider};
use hookline::messages::user::StopReason;
use hookline::postgres::{PgStore, PgStoreOptions};
use proptest::prelude::*;

fn classification() -> Classification {
    classified("write")
}

fn classified(summary: &str) -> Classification {
    Classification {
        risk: Risk::Write,
        authority: Authority::Workspace,
        requires_prompt: true,
        summary: summary.into(),
    }
}

/// Texts as a client or a tool may write them: a NUL (which PostgreSQL's `json` cannot take
/// apart), quotes, and the very field an answer is found by.
fn awkward_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-c]{1,3}",
        1 => Just("nul \u{0} inside".to_owned()),
        1 => Just(r#""decidedBy":"operator""#.to_owned()),
        1 => Just(r#"{"kind":"approval","decidedBy":"operator"}"#.to_owned()),
    ]
}

/// Who decided an approval, and the principal named when an operator did.
fn decider() -> impl Strategy<Value = (Decider, Option<String>)> {
    prop_oneof![
        3 => proptest::option::of("[a-c]/[p-r]").prop_map(|by| (Decider::Operator, by)),
        1 => Just((Decider::Policy, None)),
        1 => Just((Decider::Guard, None)),
    ]
}

fn call(id: u8) -> ToolCall {
    ToolCall {
        provider: ToolProvider::BuiltIn,
        call_id: format!("c{id}"),
        name: "write_file".into(),
        arguments: serde_json::json!({ "path": "a" }),
    }
}

/// One archive entry of the kinds the summary reads (and some it does not).
fn entry() -> impl Strategy<Value = ArchiveEntry> {
    let usage = (
        proptest::option::of(0u64..1000),
        proptest::option::of(0u64..1000),
    );
    let purpose = prop_oneof![
        Just(Purpose::Work),
        Just(Purpose::Plan),
        Just(Purpose::Side),
        Just(Purpose::Compaction)
    ];
    prop_oneof![
        3 => awkward_text().prop_map(|text| ArchiveEntry::UserMessage {
            text,
            original: None,
            images: Vec::new(),
        }),
        2 => Just(ArchiveEntry::TurnFinished {
            stop_reason: StopReason::Completed,
        }),
        4 => (purpose, usage, proptest::option::of(0u8..3)).prop_map(
            |(purpose, (input_tokens, output_tokens), model)| ArchiveEntry::ModelResponse {
                purpose,
                finish_reason: FinishReason::ToolCalls,
                items: Vec::new(),
                usage: Usage {
                    input_tokens,
                    output_tokens,
                },
                model: model.map(|m| format!("model-{m}")),
            }
        ),
        2 => (0u8..4, 0u64..100).prop_map(|(id, asked_ms)| ArchiveEntry::ApprovalAsked {
            call: call(id),
            classification: classification(),
            asked_ms,
        }),
        3 => (0u8..4, any::<bool>(), decider(), awkward_text()).prop_map(
            |(id, allow, (decided_by, answered_by), summary)| {
                ArchiveEntry::Approval(ApprovalRecord {
                    call_id: format!("c{id}"),
                    tool: "write_file".into(),
                    classification: classified(&summary),
                    decision: if allow { Decision::Allow } else { Decision::Deny },
                    decided_by,
                    answered_by,
                })
            }
        ),
        1 => awkward_text().prop_map(|text| ArchiveEntry::ToolOutput {
            call_id: "c0".into(),
            text,
            images: Vec::new(),
            success: true,
        }),
        1 => Just(ArchiveEntry::Compaction {
            folded: 2,
            summary: "s".into(),
        }),
    ]
}

/// Records of the kinds `open_turn` reads.
fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        "[a-c]{1,3}".prop_map(|text| Record::User {
            text,
            images: Vec::new(),
        }),
        (0u8..4).prop_map(|id| Record::ToolCall {
            call_id: format!("c{id}"),
            name: "write_file".into(),
            arguments: serde_json::json!({}),
        }),
        (0u8..4).prop_map(|id| Record::ToolResult {
            call_id: format!("c{id}"),
            name: "write_file".into(),
            text: "ok".into(),
            images: Vec::new(),
            success: true,
        }),
        Just(Record::Assistant { text: "x".into() }),
    ]
}

/// The summary counted from the whole archive, as opening a session did before it was folded.
fn counted(archive: &[ArchiveEntry]) -> (u64, u64, UsageTotals, UsageByModel) {
    let mut usage = UsageTotals::default();
    let mut by_model = UsageByModel::default();
    for entry in archive {
        if let ArchiveEntry::ModelResponse {
            usage: u, model, ..
        } = entry
        {
            usage.add(u);
            if let Some(model) = model {
                by_model.add(model, u);
            }
        }
    }
    let turns = archive
        .iter()
        .filter(|e| matches!(e, ArchiveEntry::UserMessage { .. }))
        .count() as u64;
    (archive.len() as u64, turns, usage, by_model)
}

/// The last `keep` approvals an operator answered, as the session view computed them from the
/// whole archive before the stores answered it.
fn answers(archive: &[ArchiveEntry], keep: usize) -> Vec<ApprovalRecord> {
    let all: Vec<ApprovalRecord> = archive
        .iter()
        .filter_map(|entry| match entry {
            ArchiveEntry::Approval(record) if record.decided_by == Decider::Operator => {
                Some(record.clone())
            }
            _ => None,
        })
        .collect();
    all[all.len().saturating_sub(keep)..].to_vec()
}

fn assert_summarizes(summary: &ArchiveSummary, records: &[Record], archive: &[ArchiveEntry]) {
    let (entries, turns, usage, by_model) = counted(archive);
    assert_eq!(summary.entries, entries);
    assert_eq!(summary.user_turns, turns);
    assert_eq!(summary.usage, usage);
    assert_eq!(summary.usage_by_model, by_model);
    assert_eq!(
        open_turn(records, &summary.last_turn),
        open_turn(records, archive)
    );
    // The last turn is all that is kept: never more than the entries after the last user message.
    let after_last = archive
        .iter()
        .rposition(|e| matches!(e, ArchiveEntry::UserMessage { .. }))
        .map_or(0, |p| archive.len() - p);
    assert!(summary.last_turn.len() <= after_last);
}

proptest! {
    #[test]
    fn the_fold_is_what_counting_the_whole_archive_gives(
        archive in proptest::collection::vec(entry(), 0..60),
        records in proptest::collection::vec(record(), 0..12),
        keep in 0usize..8,
    ) {
        prop_assert_eq!(
            AnsweredApprovals::of(archive.iter().cloned(), keep),
            answers(&archive, keep)
        );
        let summary: ArchiveSummary = archive.iter().cloned().collect();
        assert_summarizes(&summary, &records, &archive);
        let stored = StoredSession {
            facts: hookline::host::store::SessionFacts::new(
                "s1".into(),
                new_session(),
            ),
            records: records.clone(),
            archive: archive.clone(),
            repaired: Vec::new(),
        };
        prop_assert_eq!(stored.summary(), summary.clone());
        prop_assert_eq!(stored.user_turns(), summary.user_turns);
        prop_assert_eq!(stored.usage(), summary.usage);
        prop_assert_eq!(stored.usage_by_model(), summary.usage_by_model);
    }
}

/// Appends `archive` to `w` in pieces, cut where `cuts` say (each clamped to the archive).
async fn append_in_pieces(
    w: &mut Box<dyn SessionWriter>,
    archive: &[ArchiveEntry],
    cuts: Vec<usize>,
) {
    let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(archive.len())).collect();
    cuts.push(archive.len());
    cuts.sort_unstable();
    let mut from = 0;
    for cut in cuts {
        w.append(&[], &archive[from..cut]).await.unwrap();
        from = cut;
    }
}

fn new_session() -> NewSession {
    NewSession {
        workspace_root: "/w".into(),
        approval_mode: ApprovalMode::AskAll,
        model: None,
        mode: None,
        owner: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Written in any pieces (each append one journal frame), released (checkpointed) or dropped
    /// as a crash leaves it (its journal behind the last plain point, replayed on open): the
    /// open's summary is the fold of what `read` returns, and of what was written; a page read
    /// before and after the open is that page of what was written.
    #[test]
    fn a_stored_session_opens_to_the_summary_of_its_archive(
        archive in proptest::collection::vec(entry(), 0..40),
        cuts in proptest::collection::vec(0usize..40, 0..6),
        release in any::<bool>(),
        offset in 0usize..45,
        limit in 0usize..12,
        keep in 0usize..8,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let options = FileStoreOptions { inline: true, ..FileStoreOptions::default() };
            let store = FileStore::open(dir.path(), options).unwrap();
            let (facts, mut w) = store.create(new_session(), &[]).await.unwrap();
            append_in_pieces(&mut w, &archive, cuts).await;
            if release {
                w.release().await.unwrap();
            } else {
                drop(w);
            }
            let id = facts.session_id;
            let page = ArchivePage::of(&archive, offset, limit);
            let answered = Some(answers(&archive, keep));
            assert_eq!(store.archive_page(&id, offset, limit).await.unwrap(), Some(page.clone()));
            assert_eq!(store.answered_approvals(&id, keep).await.unwrap(), answered);
            let (opened, _w) = store.open(&id).await.unwrap().unwrap();
            assert_eq!(store.archive_page(&id, offset, limit).await.unwrap(), Some(page));
            assert_eq!(store.answered_approvals(&id, keep).await.unwrap(), answered);
            let read = store.read(&id).await.unwrap().unwrap();
            assert_eq!(read.archive, archive);
            assert_eq!(opened.summary, read.summary());
            assert_summarizes(&opened.summary, &opened.records, &archive);
        });
    }
}

/// PostgreSQL's page and answers are SQL over the archive's rows (counts, the page's rows, the
/// candidate answers newest first): on any archive, written in any pieces, they are that page of
/// it and its last answers, as its whole `read` gives them; an unknown session is `None`.
#[test]
fn postgres_pages_and_answers_are_those_of_the_archive() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let options = PgStoreOptions {
        node: "summary".into(),
        migrate: true,
        ..PgStoreOptions::default()
    };
    let store = runtime
        .block_on(PgStore::connect(&pg::database_url(), options))
        .unwrap();
    let unknown = hookline::messages::session::SessionId::from("s-never-stored");
    runtime.block_on(async {
        assert_eq!(store.archive_page(&unknown, 0, 10).await.unwrap(), None);
        assert_eq!(store.answered_approvals(&unknown, 10).await.unwrap(), None);
    });
    let cases = (
        proptest::collection::vec(entry(), 0..40),
        proptest::collection::vec(0usize..40, 0..4),
        0usize..45,
        0usize..12,
        0usize..8,
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(32));
    runner
        .run(&cases, |(archive, cuts, offset, limit, keep)| {
            runtime.block_on(async {
                let (facts, mut w) = store.create(new_session(), &[]).await.unwrap();
                append_in_pieces(&mut w, &archive, cuts).await;
                let id = facts.session_id;
                let read = store.read(&id).await.unwrap().unwrap();
                assert_eq!(read.archive, archive);
                assert_eq!(
                    store.archive_page(&id, offset, limit).await.unwrap(),
                    Some(ArchivePage::of(&archive, offset, limit))
                );
                assert_eq!(
                    store.answered_approvals(&id, keep).await.unwrap(),
                    Some(answers(&archive, keep))
                );
                w.release().await.unwrap();
            });
            Ok(())
        })
        .unwrap();
}
