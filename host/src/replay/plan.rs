//! What a stored session's archive says to replay: its turns (what the operator typed, in which
//! mode), what happened between them (session starts and ends, awaited gateway events, side
//! questions, compactions: the [`Step`]s replayed before the turn that followed them, or after
//! the last turn), the model's answers in order, what each tool answered, and how the operator
//! answered each approval it was asked for.
//!
//! A turn is its archive entries from the user message to `turn-finished`, plus what is
//! compared of the entries stored since the turn before ([`compared_between`]). A turn without
//! `turn-finished` (a crash) is not replayed.

use std::collections::{HashMap, VecDeque};

use hookline_messages::event::{EventKey, Wait, WireEvent};
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
    /// The response the host received, and the model the archive says answered it.
    Response(ModelResponse, Option<String>),
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
            Self::Response(response, _) => response.purpose,
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

/// One thing that happened between two turns, replayed in archive order (issue 34).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    /// A session became active: `on_session_started` (SPEC P3.10).
    SessionStarted(SessionInfo),
    /// A session stopped being active: `on_session_ended` (SPEC P3.11).
    SessionEnded(SessionInfo),
    /// An awaited gateway event, delivered again to its handlers (SPEC G5).
    Event(WireEvent),
    /// A side question, asked again (SPEC P2.3).
    Side(String),
    /// A compaction (`/compact` or the automatic one).
    Compaction,
}

/// One recorded turn, or what happened after the last one (no input then).
#[derive(Clone, Debug)]
pub(crate) struct TurnPlan {
    /// What the operator typed, its images and its mode (`None` after the last turn).
    pub(crate) input: Option<UserInput>,
    /// The approval mode set since the turn before (`/approvals`), if it changed.
    pub(crate) approval_mode: Option<ApprovalMode>,
    /// The bootstrap text set since the turn before (at a session start or resume), if any.
    pub(crate) bootstrap: Option<Option<String>>,
    /// What happened since the turn before, in order.
    pub(crate) steps: Vec<Step>,
    /// The entries replay compares: those of the steps, then the turn's.
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
    /// What happened after the last turn (the session's end, commands), if anything.
    pub(crate) tail: Option<TurnPlan>,
    /// Whether the archive records its gateway events (older ones have only their notes, which
    /// are then not compared).
    pub(crate) events: bool,
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
        let events = stored
            .archive
            .iter()
            .any(|e| matches!(e, ArchiveEntry::GatewayEvent { .. }));
        let (turns, tail) = turns(&stored.archive, events);
        Self {
            started,
            seed,
            turns,
            tail,
            events,
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

/// Splits the archive into turns, and what happened after the last one. A turn runs from its
/// user message to its `turn-finished` and the notes of `on_turn_finished` after it (the hook
/// runs once `turn-finished` is stored, issue 34 item 1).
fn turns(archive: &[ArchiveEntry], events: bool) -> (Vec<TurnPlan>, Option<TurnPlan>) {
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
            turns.push(turn(before, Some(entries), events));
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
        turns.push(turn(before, Some(entries), events));
    }
    let tail = turn(between, None, events);
    let tail = (!tail.steps.is_empty() || !tail.recorded.is_empty()).then_some(tail);
    (turns, tail)
}

/// Whether `entry` is a note of an `on_turn_finished` call.
fn is_turn_finished_note(entry: &ArchiveEntry) -> bool {
    matches!(entry, ArchiveEntry::Note { note: Note::Skipped(skip), .. }
        if skip.hook == hookline_messages::hook::HookKind::OnTurnFinished)
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

/// Whether `entry` belongs to a side question.
fn is_side(entry: &ArchiveEntry) -> bool {
    match entry {
        ArchiveEntry::ModelRequest { purpose, .. }
        | ArchiveEntry::ModelResponse { purpose, .. }
        | ArchiveEntry::ModelFailure { purpose, .. } => *purpose == Purpose::Side,
        _ => false,
    }
}

/// Whether a note stored between turns is one a replay makes again, in the same place: a hook's
/// skip (session start and end, compaction, side questions, `on_user_message`), and a skipped
/// handler of an awaited event when the archive records its events (`events`). Notes of queued
/// and detached events land wherever the bus hands them over (SPEC G3.1); load notes, drops
/// and shutdown waits are the gateway's, not the session's.
fn is_replayed_note(note: &Note, events: bool) -> bool {
    match note {
        Note::Skipped(_) => true,
        Note::EventHandlerSkipped { event, .. } => {
            events && (event.wait() == Wait::Awaited || *event == EventKey::GatewayStartup)
        }
        _ => false,
    }
}

/// What a replay compares of the entries stored between two turns: each step's entries (a
/// side call's only after its question was archived: older archives kept only its failure)
/// and the notes a replay makes again. `side` tracks an open side question.
fn compared_between(entry: &ArchiveEntry, events: bool, side: &mut bool) -> bool {
    match entry {
        ArchiveEntry::SessionStarted(_)
        | ArchiveEntry::SessionEnded(_)
        | ArchiveEntry::GatewayEvent { .. } => true,
        ArchiveEntry::SideQuestion { .. } => {
            *side = true;
            true
        }
        e if is_side(e) => {
            let open = *side;
            *side &= matches!(e, ArchiveEntry::ModelRequest { .. });
            open
        }
        e if is_compaction(e) => true,
        ArchiveEntry::Note { note, .. } => is_replayed_note(note, events),
        _ => false,
    }
}

/// What a replay compares of `entries`, archived between two turns (see [`compared_between`]).
pub(crate) fn compared(entries: Vec<ArchiveEntry>, events: bool) -> Vec<ArchiveEntry> {
    let mut side = false;
    entries
        .into_iter()
        .filter(|e| compared_between(e, events, &mut side))
        .collect()
}

/// The compared entries of what happened between two turns, their steps, and the settings they
/// changed.
struct Between {
    compared: Vec<ArchiveEntry>,
    steps: Vec<Step>,
    approval_mode: Option<ApprovalMode>,
    bootstrap: Option<Option<String>>,
}

fn between(entries: Vec<ArchiveEntry>, events: bool) -> Between {
    let mut out = Between {
        compared: Vec::new(),
        steps: Vec::new(),
        approval_mode: None,
        bootstrap: None,
    };
    // A compaction opened by its request; older archives have only its answer or summary.
    let (mut compacting, mut side) = (false, false);
    for entry in entries {
        let step = match &entry {
            ArchiveEntry::ApprovalsSet { mode } => {
                out.approval_mode = Some(*mode);
                None
            }
            ArchiveEntry::Bootstrap { text } => {
                out.bootstrap = Some(text.clone());
                None
            }
            ArchiveEntry::SessionStarted(info) => Some(Step::SessionStarted(info.clone())),
            ArchiveEntry::SessionEnded(info) => Some(Step::SessionEnded(info.clone())),
            ArchiveEntry::GatewayEvent { event, .. } => Some(Step::Event(event.clone())),
            ArchiveEntry::SideQuestion { question } => Some(Step::Side(question.clone())),
            ArchiveEntry::ModelRequest {
                purpose: Purpose::Compaction,
                ..
            } => {
                compacting = true;
                Some(Step::Compaction)
            }
            ArchiveEntry::Compaction { .. }
            | ArchiveEntry::ModelFailure {
                purpose: Purpose::Compaction,
                ..
            } => (!std::mem::take(&mut compacting)).then_some(Step::Compaction),
            _ => None,
        };
        out.steps.extend(step);
        if compared_between(&entry, events, &mut side) {
            out.compared.push(entry);
        }
    }
    out
}

fn turn(before: Vec<ArchiveEntry>, entries: Option<Vec<ArchiveEntry>>, events: bool) -> TurnPlan {
    let Between {
        compared,
        steps,
        approval_mode,
        bootstrap,
    } = between(before, events);
    let has_turn = entries.is_some();
    let recorded: Vec<ArchiveEntry> = compared
        .into_iter()
        .chain(entries.into_iter().flatten().filter(|e| !is_side(e)))
        .collect();
    TurnPlan {
        input: has_turn.then(|| input(&recorded)),
        approval_mode,
        bootstrap,
        steps,
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
            model,
        } => Some(Answer::Response(
            ModelResponse {
                purpose: *purpose,
                finish_reason: *finish_reason,
                items: items.clone(),
                usage: *usage,
            },
            model.clone(),
        )),
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

#[cfg(test)]
mod tests {
    use super::*;
    use hookline_messages::model::{FinishReason, Usage};
    use hookline_messages::note::SkipReason;
    use hookline_messages::session::SessionId;
    use hookline_messages::user::StopReason;

    fn info() -> SessionInfo {
        SessionInfo {
            workspace_root: "/ws".into(),
            session_id: SessionId::new("s1"),
            approval_mode: ApprovalMode::default(),
        }
    }

    /// An archive as a build before issue 34 wrote it: a handler's note without its event, a
    /// side call's failure without its question.
    fn older_archive() -> Vec<ArchiveEntry> {
        vec![
            ArchiveEntry::SessionStarted(info()),
            ArchiveEntry::note(Note::EventHandlerSkipped {
                plugin: "audit".into(),
                event: EventKey::CommandNew,
                reason: SkipReason::Failed("no".into()),
            }),
            ArchiveEntry::ModelFailure {
                purpose: Purpose::Side,
                error: "down".into(),
            },
            ArchiveEntry::UserMessage {
                text: "hi".into(),
                original: None,
                images: Vec::new(),
            },
            ArchiveEntry::ModelResponse {
                purpose: Purpose::Work,
                finish_reason: FinishReason::Stop,
                items: Vec::new(),
                usage: Usage::default(),
                model: None,
            },
            ArchiveEntry::TurnFinished {
                stop_reason: StopReason::Completed,
            },
            ArchiveEntry::SessionEnded(info()),
        ]
    }

    #[test]
    fn an_older_archive_replays_its_session_hooks_and_compares_no_event_note_or_side_call() {
        let (turns, tail) = turns(&older_archive(), false);
        assert_eq!(turns.len(), 1);
        assert_eq!(turns[0].steps, [Step::SessionStarted(info())]);
        // Only the turn's answer: the side failure is neither answered nor compared, nor is the
        // note of an event the archive does not hold.
        assert_eq!(turns[0].answers.len(), 1);
        let compared = &turns[0].recorded;
        assert_eq!(compared.len(), 4, "{compared:#?}");
        assert_eq!(compared[0], ArchiveEntry::SessionStarted(info()));
        assert!(matches!(compared[1], ArchiveEntry::UserMessage { .. }));
        assert_eq!(
            tail.map(|t| t.steps),
            Some(vec![Step::SessionEnded(info())])
        );
        // An archive that records its events compares their handlers' notes.
        let (turns, _) = super::turns(&older_archive(), true);
        assert!(matches!(turns[0].recorded[1], ArchiveEntry::Note { .. }));
    }
}
