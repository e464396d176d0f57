//! What a stored session's archive says to replay: its turns (what the operator typed, in which
//! mode, the compactions run before it), the model's answers of each turn in order, what each
//! tool answered, and how the operator answered each approval it was asked for.
//!
//! A turn is its archive entries from the user message to `turn-finished`, plus the compaction
//! entries (request, response or failure, summary) stored since the turn before. A turn without
//! `turn-finished` (a crash) is not replayed; side questions are stored nowhere and are not
//! replayed (SPEC P2.3).

use std::collections::{HashMap, VecDeque};

use hookline_messages::hook::HookKind;
use hookline_messages::model::{MediaType, ModelResponse, Purpose};
use hookline_messages::note::Note;
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::{ArchiveEntry, Decider, Decision, Record};
use hookline_messages::session::{ApprovalMode, SessionInfo};
use hookline_messages::tool::ApprovalState;

use crate::store::StoredSession;
use crate::tools::ToolOutput;
use crate::turn::UserInput;

/// One recorded model answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Answer {
    /// The response the host received.
    Response(ModelResponse),
    /// The call failed with this text.
    Failure {
        /// Why the call was made.
        purpose: Purpose,
        /// The provider's error, as archived.
        error: String,
    },
}

impl Answer {
    pub(crate) fn purpose(&self) -> Purpose {
        match self {
            Self::Response(response) => response.purpose,
            Self::Failure { purpose, .. } => *purpose,
        }
    }
}

/// One tool run as recorded: the call as it ran and what the tool answered.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ToolRun {
    pub(crate) name: String,
    pub(crate) arguments: serde_json::Value,
    pub(crate) output: ToolOutput,
}

/// One recorded turn.
#[derive(Clone, Debug)]
pub(crate) struct TurnPlan {
    /// What the operator typed, its images and its mode.
    pub(crate) input: UserInput,
    /// The approval mode set since the turn before (`/approvals`), if it changed.
    pub(crate) approval_mode: Option<ApprovalMode>,
    /// The bootstrap text set since the turn before (at a session start or resume), if any.
    pub(crate) bootstrap: Option<Option<String>>,
    /// Compaction calls made before the turn (`/compact` or the automatic one).
    pub(crate) compactions: usize,
    /// The entries replay compares: the compaction entries, then the turn's.
    pub(crate) recorded: Vec<ArchiveEntry>,
    /// The model's answers, in order (compactions first).
    pub(crate) answers: VecDeque<Answer>,
    /// Whether the model took images (from the turn's first stored request; false when the
    /// recording predates stored requests).
    pub(crate) takes_images: bool,
    /// The tools that ran, in order.
    pub(crate) runs: Vec<ToolRun>,
}

/// A stored session, read for replay.
#[derive(Clone, Debug)]
pub(crate) struct SessionPlan {
    /// The session as it started (its approval mode then).
    pub(crate) started: SessionInfo,
    /// The records it was created with (`/fork`).
    pub(crate) seed: Vec<Record>,
    pub(crate) turns: Vec<TurnPlan>,
    /// The operator's answers by call id: the decision and the note that came with it.
    pub(crate) operator: HashMap<String, (Decision, Option<Note>)>,
}

impl SessionPlan {
    /// Reads `stored`'s archive.
    pub(crate) fn of(stored: &StoredSession) -> Self {
        let started = stored
            .archive
            .iter()
            .find_map(|entry| match entry {
                ArchiveEntry::SessionStarted(info) => Some(info.clone()),
                _ => None,
            })
            .unwrap_or_else(|| stored.facts.info());
        let seed = stored
            .archive
            .iter()
            .find_map(|entry| match entry {
                ArchiveEntry::Seeded { records } => Some(records.clone()),
                _ => None,
            })
            .unwrap_or_default();
        Self {
            started,
            seed,
            turns: turns(&stored.archive),
            operator: operator_answers(&stored.archive),
        }
    }

    /// The turns replay runs.
    pub(crate) fn turn_count(&self) -> usize {
        self.turns.len()
    }
}

/// The turns a replay of `archive` runs (each finished one), without reading them.
pub(crate) fn turn_count(archive: &[ArchiveEntry]) -> usize {
    archive
        .iter()
        .filter(|e| matches!(e, ArchiveEntry::TurnFinished { .. }))
        .count()
}

/// Splits the archive into turns. A turn runs from its user message to its `turn-finished`
/// and the notes of `on_turn_finished` after it (the hook runs once `turn-finished` is stored).
fn turns(archive: &[ArchiveEntry]) -> Vec<TurnPlan> {
    let mut turns = Vec::new();
    let mut between: Vec<ArchiveEntry> = Vec::new();
    let mut current: Option<Vec<ArchiveEntry>> = None;
    let mut finished: Option<(Vec<ArchiveEntry>, Vec<ArchiveEntry>)> = None;
    for entry in archive {
        if let Some((_, entries)) = finished.as_mut().filter(|_| is_turn_finished_note(entry)) {
            entries.push(entry.clone());
            continue;
        }
        if let Some((before, entries)) = finished.take() {
            turns.push(turn(before, entries));
        }
        if let Some(entries) = current.as_mut() {
            entries.push(entry.clone());
            if matches!(entry, ArchiveEntry::TurnFinished { .. }) {
                let entries = current.take().unwrap_or_default();
                finished = Some((std::mem::take(&mut between), entries));
            }
        } else if matches!(entry, ArchiveEntry::UserMessage { .. }) {
            current = Some(vec![entry.clone()]);
        } else {
            between.push(entry.clone());
        }
    }
    if let Some((before, entries)) = finished {
        turns.push(turn(before, entries));
    }
    turns
}

/// Whether `entry` is a note of an `on_turn_finished` call.
fn is_turn_finished_note(entry: &ArchiveEntry) -> bool {
    matches!(entry, ArchiveEntry::Note { note: Note::Skipped(skip), .. }
        if skip.hook == HookKind::OnTurnFinished)
}

/// Whether `entry` belongs to a compaction (`hookline replay` compares these between turns).
pub(crate) fn is_compaction(entry: &ArchiveEntry) -> bool {
    match entry {
        ArchiveEntry::ModelRequest { purpose, .. }
        | ArchiveEntry::ModelResponse { purpose, .. }
        | ArchiveEntry::ModelFailure { purpose, .. } => *purpose == Purpose::Compaction,
        ArchiveEntry::Compaction { .. } => true,
        _ => false,
    }
}

/// Whether `entry` is a note of an `on_user_message` call.
fn is_user_message_note(entry: &ArchiveEntry) -> bool {
    matches!(entry, ArchiveEntry::Note { note: Note::Skipped(skip), .. }
        if skip.hook == HookKind::OnUserMessage)
}

/// Whether `entry` belongs to a side question (its answer or failure; never compared).
fn is_side(entry: &ArchiveEntry) -> bool {
    matches!(
        entry,
        ArchiveEntry::ModelRequest {
            purpose: Purpose::Side,
            ..
        } | ArchiveEntry::ModelResponse {
            purpose: Purpose::Side,
            ..
        } | ArchiveEntry::ModelFailure {
            purpose: Purpose::Side,
            ..
        }
    )
}

fn turn(mut between: Vec<ArchiveEntry>, entries: Vec<ArchiveEntry>) -> TurnPlan {
    // `on_user_message` runs before the message is stored: its notes come just before it.
    let first_note = between.len()
        - between
            .iter()
            .rev()
            .take_while(|e| is_user_message_note(e))
            .count();
    let user_message_notes = between.split_off(first_note);
    let approval_mode = between.iter().rev().find_map(|e| match e {
        ArchiveEntry::ApprovalsSet { mode } => Some(*mode),
        _ => None,
    });
    let bootstrap = between.iter().rev().find_map(|e| match e {
        ArchiveEntry::Bootstrap { text } => Some(text.clone()),
        _ => None,
    });
    let compaction: Vec<ArchiveEntry> = between.into_iter().filter(is_compaction).collect();
    let count = |f: fn(&ArchiveEntry) -> bool| compaction.iter().filter(|e| f(e)).count();
    let requests = count(|e| matches!(e, ArchiveEntry::ModelRequest { .. }));
    let answered = count(|e| {
        matches!(
            e,
            ArchiveEntry::Compaction { .. } | ArchiveEntry::ModelFailure { .. }
        )
    });
    let recorded: Vec<ArchiveEntry> = compaction
        .into_iter()
        .chain(user_message_notes)
        .chain(entries.into_iter().filter(|e| !is_side(e)))
        .collect();
    TurnPlan {
        input: input(&recorded),
        approval_mode,
        bootstrap,
        compactions: requests.max(answered),
        answers: recorded.iter().filter_map(answer).collect(),
        takes_images: recorded.iter().any(|e| {
            matches!(e, ArchiveEntry::ModelRequest { purpose, accepts_images: true, .. }
                if purpose.is_turn_call())
        }),
        runs: runs(&recorded),
        recorded,
    }
}

/// What the operator typed: the original text when a hook replaced it, the turn's mode from
/// its system text.
fn input(entries: &[ArchiveEntry]) -> UserInput {
    let mode = entries
        .iter()
        .find_map(|e| match e {
            ArchiveEntry::SystemText { mode, .. } => Some(*mode),
            _ => None,
        })
        .unwrap_or(PromptMode::Work);
    entries
        .iter()
        .find_map(|e| match e {
            ArchiveEntry::UserMessage {
                text,
                original,
                images,
            } => Some(UserInput {
                text: original.clone().unwrap_or_else(|| text.clone()),
                images: images
                    .iter()
                    .map(|i| i.media_type)
                    .collect::<Vec<MediaType>>(),
                mode,
            }),
            _ => None,
        })
        .unwrap_or_else(|| UserInput::work(""))
}

fn answer(entry: &ArchiveEntry) -> Option<Answer> {
    match entry {
        ArchiveEntry::ModelResponse {
            purpose,
            finish_reason,
            items,
            usage,
        } => Some(Answer::Response(ModelResponse {
            purpose: *purpose,
            finish_reason: *finish_reason,
            items: items.clone(),
            usage: *usage,
        })),
        ArchiveEntry::ModelFailure { purpose, error } => Some(Answer::Failure {
            purpose: *purpose,
            error: error.clone(),
        }),
        _ => None,
    }
}

/// The tools that ran in a turn: each granted result, answered with the tool's own output when
/// `on_tool_result` changed it (`tool-output`), with the call as it ran.
fn runs(entries: &[ArchiveEntry]) -> Vec<ToolRun> {
    let mut calls = HashMap::new();
    let mut outputs = HashMap::new();
    let mut runs = Vec::new();
    for entry in entries {
        match entry {
            ArchiveEntry::ToolCall { call, .. } => {
                calls.insert(call.call_id.clone(), call.clone());
            }
            ArchiveEntry::ToolOutput {
                call_id,
                text,
                images,
                success,
            } => {
                let output = ToolOutput {
                    text: text.clone(),
                    images: images.clone(),
                    success: *success,
                };
                outputs.insert(call_id.clone(), output);
            }
            ArchiveEntry::ToolResult(result) if result.approval == ApprovalState::Granted => {
                let output = outputs.remove(&result.call_id).unwrap_or(ToolOutput {
                    text: result.text.clone(),
                    images: result.images.clone(),
                    success: result.success,
                });
                let (name, arguments) = calls
                    .get(&result.call_id)
                    .map(|c| (c.name.clone(), c.arguments.clone()))
                    .unwrap_or_else(|| (result.name.clone(), serde_json::Value::Null));
                runs.push(ToolRun {
                    name,
                    arguments,
                    output,
                });
            }
            _ => {}
        }
    }
    runs
}

/// How the operator answered, by call id, with the note its answer carried (no operator, or
/// nobody answered in time).
fn operator_answers(archive: &[ArchiveEntry]) -> HashMap<String, (Decision, Option<Note>)> {
    let mut notes: HashMap<String, Note> = HashMap::new();
    let mut answers = HashMap::new();
    for entry in archive {
        match entry {
            ArchiveEntry::Note { note, .. } => {
                if let Note::NoOperator { call_id, .. } | Note::ApprovalTimedOut { call_id, .. } =
                    note
                {
                    notes.insert(call_id.clone(), note.clone());
                }
            }
            ArchiveEntry::Approval(record) if record.decided_by == Decider::Operator => {
                let note = notes.remove(&record.call_id);
                answers.insert(record.call_id.clone(), (record.decision, note));
            }
            _ => {}
        }
    }
    answers
}
