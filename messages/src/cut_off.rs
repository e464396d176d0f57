//! A turn cut off by a crash or a lost lease (issue 22 item 2), as a pure function of what the
//! session stored.
//!
//! Each step of a turn is durable before the next one can have an effect (`docs/turn.md`): the
//! user message before the first model call, every tool call (and its approval) before the tool
//! runs or the operator is asked, every result before the next model call. So a session whose
//! archive ends in a user message without a `turn-finished` entry holds a turn that was cut off,
//! and its stored records say how far it got. [`open_turn`] finds it; [`OpenTurn::closing`] is
//! what closes it: a made-up result for every tool call left without one (every provider needs
//! each call followed by its result) and a [`Record::CutOff`] marker the next request sends as a
//! user message, so the model and the plugins read what happened. The sentences live in
//! [`crate::note`].

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::approval::Classification;
use crate::note::Note;
use crate::prompt::PromptMode;
use crate::record::{ArchiveEntry, Decision, Record};
use crate::tool::ToolCall;

/// Where a turn was cut off, as far as the stored steps tell.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "at", rename_all = "kebab-case")]
pub enum CutOff {
    /// The model had been called (or its answer was in the hooks); no answer was stored.
    ModelCall,
    /// A tool call was stored but had not run: its hooks or the operator's approval were
    /// pending, or it had been refused.
    #[serde(rename_all = "camelCase")]
    BeforeTool {
        /// The call's id.
        call_id: String,
        /// The tool the model asked for.
        name: String,
    },
    /// An approved tool call had started; whether it finished is unknown, its result was not
    /// stored.
    #[serde(rename_all = "camelCase")]
    ToolStarted {
        /// The call's id.
        call_id: String,
        /// The tool the model asked for.
        name: String,
    },
    /// The model's answer was stored; the turn did not finish.
    AfterAnswer,
}

/// What a made-up result says about the call it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CutOffCall {
    /// The call had started; its result was not stored.
    Started,
    /// The call never ran.
    NotRun,
}

/// A turn the stored session holds open: cut off before it finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenTurn {
    /// The user text as stored (after `on_user_message`).
    pub user_text: String,
    /// The turn's mode, as far as the records tell (work unless a plan text was composed).
    pub mode: PromptMode,
    /// Where it was cut off.
    pub at: CutOff,
    /// Every tool call of the turn left without a result, in order, and what its made-up
    /// result says.
    pub open_calls: Vec<(String, String, CutOffCall)>,
    /// The approval the turn was waiting for, when it was cut off there (issue 40 item 3): the
    /// one cut-off turn a gateway does not close, but continues by asking again.
    pub waiting: Option<WaitingApproval>,
}

/// A turn cut off while the operator was asked about its first open call: what was asked, and
/// the turn's later calls of the same model answer, which never ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitingApproval {
    /// The call as it waits (after `on_tool_call`).
    pub call: ToolCall,
    /// The classification the operator was shown.
    pub classification: Classification,
    /// When it was first asked, in milliseconds since the Unix epoch.
    pub asked_ms: u64,
    /// The turn's other calls left without a result, as stored, in order.
    pub later_calls: Vec<Record>,
    /// The model calls the turn had made (its answered work or plan calls): the continued turn
    /// carries on with the budget they left, not a fresh one (issue 46 item 8).
    pub model_calls: usize,
}

impl OpenTurn {
    /// The records that close the turn: a failed result for each open call, then the marker.
    pub fn closing(&self) -> Vec<Record> {
        let results = self
            .open_calls
            .iter()
            .map(|(call_id, name, call)| Record::ToolResult {
                call_id: call_id.clone(),
                name: name.clone(),
                text: call.to_string(),
                images: Vec::new(),
                success: false,
            });
        results
            .chain([Record::CutOff {
                at: self.at.clone(),
            }])
            .collect()
    }

    /// The note that says what happened.
    pub fn note(&self) -> Note {
        Note::TurnCutOff {
            at: self.at.clone(),
        }
    }
}

/// The turn `archive` and `records` hold open, if any: the last user message in the archive with
/// no `turn-finished` after it.
pub fn open_turn(records: &[Record], archive: &[ArchiveEntry]) -> Option<OpenTurn> {
    let start = archive.iter().rposition(|e| {
        matches!(
            e,
            ArchiveEntry::UserMessage { .. } | ArchiveEntry::TurnFinished { .. }
        )
    })?;
    let ArchiveEntry::UserMessage { text, .. } = &archive[start] else {
        return None;
    };
    let steps = &archive[start + 1..];
    // The user record and its archive entry are stored together, so the turn's records start
    // after the last user record.
    let first = records
        .iter()
        .rposition(|r| matches!(r, Record::User { .. }))
        .map_or(0, |p| p + 1);
    let turn = &records[first..];
    let answered: HashSet<&str> = turn
        .iter()
        .filter_map(|r| match r {
            Record::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let unanswered: Vec<(&str, &str)> = turn
        .iter()
        .filter_map(|r| match r {
            Record::ToolCall { call_id, name, .. } if !answered.contains(call_id.as_str()) => {
                Some((call_id.as_str(), name.as_str()))
            }
            _ => None,
        })
        .collect();
    Some(OpenTurn {
        user_text: text.clone(),
        mode: mode_of(records, steps),
        at: cut_off_at(turn, steps, &unanswered),
        open_calls: open_calls(steps, &unanswered),
        waiting: waiting(turn, steps, &unanswered),
    })
}

/// The approval the first open call waits for: asked, and neither decided nor answered since.
fn waiting(
    turn: &[Record],
    steps: &[ArchiveEntry],
    unanswered: &[(&str, &str)],
) -> Option<WaitingApproval> {
    let &(first, _) = unanswered.first()?;
    let decided = steps
        .iter()
        .any(|e| matches!(e, ArchiveEntry::Approval(a) if a.call_id == first));
    if decided {
        return None;
    }
    let (call, classification, asked_ms) = steps.iter().rev().find_map(|e| match e {
        ArchiveEntry::ApprovalAsked {
            call,
            classification,
            asked_ms,
        } if call.call_id == first => Some((call, classification, *asked_ms)),
        _ => None,
    })?;
    let later: HashSet<&str> = unanswered.iter().skip(1).map(|&(id, _)| id).collect();
    let later_calls = turn
        .iter()
        .filter(
            |r| matches!(r, Record::ToolCall { call_id, .. } if later.contains(call_id.as_str())),
        )
        .cloned()
        .collect();
    let model_calls = steps
        .iter()
        .filter(
            |e| matches!(e, ArchiveEntry::ModelResponse { purpose, .. } if purpose.is_turn_call()),
        )
        .count();
    Some(WaitingApproval {
        call: call.clone(),
        classification: classification.clone(),
        asked_ms,
        later_calls,
        model_calls,
    })
}

fn cut_off_at(turn: &[Record], steps: &[ArchiveEntry], unanswered: &[(&str, &str)]) -> CutOff {
    match unanswered.first() {
        Some(&(call_id, name)) => {
            let (call_id, name) = (call_id.to_owned(), name.to_owned());
            if allowed(steps, &call_id) {
                CutOff::ToolStarted { call_id, name }
            } else {
                CutOff::BeforeTool { call_id, name }
            }
        }
        None => match turn.last() {
            Some(Record::Assistant { .. } | Record::Reasoning { .. }) => CutOff::AfterAnswer,
            _ => CutOff::ModelCall,
        },
    }
}

fn open_calls(
    steps: &[ArchiveEntry],
    unanswered: &[(&str, &str)],
) -> Vec<(String, String, CutOffCall)> {
    unanswered
        .iter()
        .enumerate()
        .map(|(n, &(call_id, name))| {
            // Calls run in order: only the first one left open can have started.
            let call = if n == 0 && allowed(steps, call_id) {
                CutOffCall::Started
            } else {
                CutOffCall::NotRun
            };
            (call_id.to_owned(), name.to_owned(), call)
        })
        .collect()
}

/// Whether the turn's archived steps allowed `call_id` to run (the approval is stored before the
/// tool runs).
fn allowed(steps: &[ArchiveEntry], call_id: &str) -> bool {
    steps.iter().any(|e| {
        matches!(e, ArchiveEntry::Approval(a) if a.call_id == call_id && a.decision == Decision::Allow)
    })
}

/// The mode of the turn's composed system text, else of the active one, else work.
fn mode_of(records: &[Record], steps: &[ArchiveEntry]) -> PromptMode {
    let archived = steps.iter().rev().find_map(|e| match e {
        ArchiveEntry::SystemText { mode, .. } => Some(*mode),
        _ => None,
    });
    let active = || {
        records.iter().rev().find_map(|r| match r {
            Record::System { mode, .. } => Some(*mode),
            _ => None,
        })
    };
    archived.or_else(active).unwrap_or(PromptMode::Work)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{Authority, Classification, Risk};
    use crate::record::{ApprovalRecord, Decider};

    fn user(text: &str) -> Record {
        Record::User {
            text: text.into(),
            images: Vec::new(),
        }
    }

    fn call(id: &str) -> Record {
        Record::ToolCall {
            call_id: id.into(),
            name: "write_file".into(),
            arguments: serde_json::json!({}),
        }
    }

    fn result(id: &str) -> Record {
        Record::ToolResult {
            call_id: id.into(),
            name: "write_file".into(),
            text: "ok".into(),
            images: Vec::new(),
            success: true,
        }
    }

    fn typed(text: &str) -> ArchiveEntry {
        ArchiveEntry::UserMessage {
            text: text.into(),
            original: None,
            images: Vec::new(),
        }
    }

    fn approval(id: &str, decision: Decision) -> ArchiveEntry {
        ArchiveEntry::Approval(ApprovalRecord {
            call_id: id.into(),
            tool: "write_file".into(),
            classification: Classification {
                risk: Risk::Write,
                authority: Authority::Workspace,
                requires_prompt: true,
                summary: String::new(),
            },
            decision,
            decided_by: Decider::Operator,
            answered_by: None,
        })
    }

    fn opened(records: &[Record], archive: &[ArchiveEntry]) -> OpenTurn {
        match open_turn(records, archive) {
            Some(open) => open,
            None => panic!("no open turn in {records:?} / {archive:?}"),
        }
    }

    fn finished() -> ArchiveEntry {
        ArchiveEntry::TurnFinished {
            stop_reason: crate::user::StopReason::Completed,
        }
    }

    #[test]
    fn a_finished_turn_or_no_turn_is_not_open() {
        assert_eq!(open_turn(&[], &[]), None);
        let records = [user("hi"), Record::Assistant { text: "yo".into() }];
        assert_eq!(open_turn(&records, &[typed("hi"), finished()]), None);
    }

    #[test]
    fn a_turn_cut_off_while_the_model_answered_is_closed_by_the_marker_alone() {
        let records = [user("a"), Record::Assistant { text: "x".into() }, user("b")];
        let archive = [typed("a"), finished(), typed("b")];
        let open = opened(&records, &archive);
        assert_eq!(open.user_text, "b");
        assert_eq!(open.at, CutOff::ModelCall);
        assert_eq!(
            open.closing(),
            vec![Record::CutOff {
                at: CutOff::ModelCall
            }]
        );
        assert_eq!(
            open.note().text(),
            "The turn was cut off while the model was answering; its answer was not stored."
        );
    }

    #[test]
    fn a_call_waiting_for_approval_did_not_run_and_gets_a_failed_result() {
        let records = [user("a"), call("c1")];
        let open = opened(&records, &[typed("a")]);
        let at = CutOff::BeforeTool {
            call_id: "c1".into(),
            name: "write_file".into(),
        };
        assert_eq!(open.at, at);
        assert_eq!(
            open.closing(),
            vec![
                Record::ToolResult {
                    call_id: "c1".into(),
                    name: "write_file".into(),
                    text: "The turn was cut off before this call ran; it did not run.".into(),
                    images: Vec::new(),
                    success: false,
                },
                Record::CutOff { at },
            ]
        );
        assert_eq!(
            open.note().text(),
            "The turn was cut off before tool call 'c1' (write_file) ran; it did not run."
        );
    }

    #[test]
    fn an_allowed_call_without_result_had_started_and_later_calls_never_ran() {
        let records = [user("a"), call("c1"), result("c1"), call("c2"), call("c3")];
        let archive = [
            typed("a"),
            approval("c1", Decision::Allow),
            approval("c2", Decision::Allow),
        ];
        let open = opened(&records, &archive);
        assert_eq!(
            open.note().text(),
            "The turn was cut off after tool call 'c2' (write_file) had started; its result was \
             not stored."
        );
        let calls: Vec<CutOffCall> = open.open_calls.iter().map(|c| c.2).collect();
        assert_eq!(calls, [CutOffCall::Started, CutOffCall::NotRun]);
        let closing = open.closing();
        assert_eq!(closing.len(), 3, "two results and the marker");
    }

    #[test]
    fn a_refused_call_without_result_did_not_run() {
        let records = [user("a"), call("c1")];
        let archive = [typed("a"), approval("c1", Decision::Deny)];
        let open = opened(&records, &archive);
        assert!(matches!(open.at, CutOff::BeforeTool { .. }));
        assert_eq!(open.open_calls[0].2, CutOffCall::NotRun);
    }

    #[test]
    fn an_answer_stored_before_the_turn_finished_is_after_answer() {
        let records = [
            user("a"),
            call("c1"),
            result("c1"),
            Record::Assistant {
                text: "done".into(),
            },
        ];
        let open = opened(&records, &[typed("a")]);
        assert_eq!(open.at, CutOff::AfterAnswer);
        assert!(open.open_calls.is_empty());
    }

    #[test]
    fn the_mode_is_the_turn_s_composed_text_s() {
        let records = [
            Record::System {
                mode: PromptMode::Plan,
                text: "p".into(),
            },
            user("a"),
        ];
        assert_eq!(opened(&records, &[typed("a")]).mode, PromptMode::Plan);
        assert_eq!(opened(&[user("a")], &[typed("a")]).mode, PromptMode::Work);
    }

    fn asked(id: &str, asked_ms: u64) -> ArchiveEntry {
        ArchiveEntry::ApprovalAsked {
            call: ToolCall {
                provider: crate::tool::ToolProvider::BuiltIn,
                call_id: id.into(),
                name: "write_file".into(),
                arguments: serde_json::json!({}),
            },
            classification: Classification {
                risk: Risk::Write,
                authority: Authority::Workspace,
                requires_prompt: true,
                summary: "write".into(),
            },
            asked_ms,
        }
    }

    #[test]
    fn a_turn_cut_off_while_the_operator_was_asked_waits_for_that_approval() {
        let records = [user("a"), call("c1"), call("c2")];
        let open = opened(&records, &[typed("a"), asked("c1", 7)]);
        let Some(waiting) = open.waiting else {
            panic!("the approval of c1 does not wait")
        };
        assert_eq!(waiting.call.call_id, "c1");
        assert_eq!(waiting.asked_ms, 7);
        assert_eq!(waiting.later_calls, vec![call("c2")]);
        assert_eq!(
            open.at,
            CutOff::BeforeTool {
                call_id: "c1".into(),
                name: "write_file".into()
            }
        );
        // Decided (allowed: the tool may have started), or never asked: nothing waits.
        let decided = [typed("a"), asked("c1", 7), approval("c1", Decision::Allow)];
        assert_eq!(opened(&records, &decided).waiting, None);
        assert_eq!(opened(&records, &[typed("a")]).waiting, None);
        // Asked about an earlier call that was answered: that approval does not wait.
        let records = [user("a"), call("c0"), result("c0"), call("c1")];
        assert_eq!(
            opened(&records, &[typed("a"), asked("c0", 1)]).waiting,
            None
        );
    }

    fn answered(purpose: crate::model::Purpose) -> ArchiveEntry {
        ArchiveEntry::ModelResponse {
            purpose,
            finish_reason: crate::model::FinishReason::ToolCalls,
            items: Vec::new(),
            usage: crate::model::Usage::default(),
            model: None,
        }
    }

    #[test]
    fn a_waiting_turn_counts_the_model_calls_it_made() {
        use crate::model::Purpose;
        // Issue 46 item 8: the turn's own work calls count; an earlier turn's, a compaction's
        // and a side question's do not.
        let records = [
            user("z"),
            Record::Assistant { text: "y".into() },
            user("a"),
            call("c0"),
            result("c0"),
            call("c1"),
        ];
        let archive = [
            typed("z"),
            answered(Purpose::Work),
            finished(),
            answered(Purpose::Side),
            typed("a"),
            answered(Purpose::Compaction),
            answered(Purpose::Work),
            answered(Purpose::Work),
            asked("c1", 3),
        ];
        let Some(waiting) = opened(&records, &archive).waiting else {
            panic!("the approval of c1 does not wait")
        };
        assert_eq!(waiting.model_calls, 2);
    }
}
