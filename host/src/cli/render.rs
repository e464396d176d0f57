//! What `hookline run` prints: the [`Report`] (`--json`) and its human rendering.

use std::fmt::Write as _;
use std::path::Path;

use hookline_messages::model::ModelRequest;
use hookline_messages::record::{ApprovalRecord, ArchiveEntry, Record};
use hookline_messages::session::SessionId;
use serde::Serialize;

use crate::provider::ScriptedProvider;
use crate::session::{Event, Host, HostError};
use crate::store::Log;

/// Everything a run did, machine-readable.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    scenario: String,
    workspace: String,
    /// Every event, in order.
    events: Vec<Event>,
    /// Every outbound model request, exactly as sent.
    requests: Vec<ModelRequest>,
    /// Each stored session's records and archive, as on disk after the run.
    sessions: Vec<StoredSession>,
    /// Every note's English text, in order.
    notes: Vec<String>,
    /// Every tool that ran.
    tool_executions: Vec<Event>,
    /// Every approval decision.
    approvals: Vec<ApprovalRecord>,
}

#[derive(Debug, Serialize)]
struct StoredSession {
    id: SessionId,
    records: Vec<Record>,
    archive: Vec<ArchiveEntry>,
}

/// Builds the report, reading each session back from the store.
pub(crate) fn report(
    scenario: &str,
    workspace: &Path,
    host: &Host,
    provider: &ScriptedProvider,
    events: Vec<Event>,
) -> Result<Report, HostError> {
    let mut sessions = Vec::new();
    for id in host.store().sessions()? {
        let dir = host.store().session_dir(&id)?;
        let (_, records) = Log::<Record>::open(&dir.join("records.log"))?;
        let (_, archive) = Log::<ArchiveEntry>::open(&dir.join("archive.log"))?;
        sessions.push(StoredSession {
            id,
            records: records.records,
            archive: archive.records,
        });
    }
    let notes = events
        .iter()
        .filter_map(|e| match e {
            Event::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let tool_executions = events
        .iter()
        .filter(|e| matches!(e, Event::ToolRun { .. }))
        .cloned()
        .collect();
    let approvals = events
        .iter()
        .filter_map(|e| match e {
            Event::Approval(a) => Some(a.clone()),
            _ => None,
        })
        .collect();
    Ok(Report {
        scenario: scenario.to_owned(),
        workspace: workspace.display().to_string(),
        events,
        requests: provider.sent(),
        sessions,
        notes,
        tool_executions,
        approvals,
    })
}

/// The human rendering: one line per event, in order.
pub(crate) fn human(report: &Report) -> String {
    let mut out = format!("Scenario {} in {}\n", report.scenario, report.workspace);
    for event in &report.events {
        let _ = writeln!(out, "{}", line(event));
    }
    let _ = write!(
        out,
        "\n{} model requests sent, {} tools ran, {} approval decisions, {} notes.",
        report.requests.len(),
        report.tool_executions.len(),
        report.approvals.len(),
        report.notes.len()
    );
    out
}

fn line(event: &Event) -> String {
    match event {
        Event::SessionStarted(s) => format!(
            "== session {} started in {}",
            s.session_id, s.workspace_root
        ),
        Event::SessionEnded(s) => {
            format!("== session {} ended in {}", s.session_id, s.workspace_root)
        }
        Event::User {
            text,
            original: Some(original),
            ..
        } => format!("user> {text}\n      (typed: {original})"),
        Event::User { text, .. } => format!("user> {text}"),
        Event::HookChanged { hook, changed_by } => {
            format!("   hook {hook}: changed by {}", changed_by.join(", "))
        }
        Event::SystemText { mode, text } => format!("   system text ({}): {text:?}", mode.as_str()),
        Event::ModelCall { purpose, items } => {
            format!("   model call ({purpose:?}, {items} items)")
        }
        Event::Assistant { text } => format!("model> {text}"),
        Event::ModelFailed { purpose, error } => {
            format!("   model call ({purpose:?}) failed: {error}")
        }
        Event::ToolCall {
            call,
            rewritten_from: Some(from),
        } => {
            format!(
                "   tool call {} {} {} (rewritten from {} {})",
                call.call_id, call.name, call.arguments, from.name, from.arguments
            )
        }
        Event::ToolCall { call, .. } => format!(
            "   tool call {} {} {}",
            call.call_id, call.name, call.arguments
        ),
        Event::Approval(a) => format!(
            "   approval {}: {:?} by {:?} (risk {:?}, authority {:?}, prompt {})",
            a.call_id,
            a.decision,
            a.decided_by,
            a.classification.risk,
            a.classification.authority,
            a.classification.requires_prompt
        ),
        Event::ToolRun { tool, success, .. } => {
            format!("   ran {tool}: {}", if *success { "ok" } else { "failed" })
        }
        Event::ToolResult(r) => format!("   result {}: {:?}", r.call_id, r.text),
        Event::Side { question, answer } => format!("side> {question}\nmodel (side)> {answer}"),
        Event::Compacted { folded, summary } => {
            format!("   compacted {folded} records into: {summary:?}")
        }
        Event::TurnFinished { stop_reason } => format!("   turn finished: {stop_reason:?}"),
        Event::Note { text, .. } => format!("note: {text}"),
        Event::Info { text } => format!("-- {text}"),
        Event::GatewayEvent {
            key,
            wait,
            calls: Some(calls),
        } => {
            let s = if *calls == 1 { "" } else { "s" };
            format!("   gateway event {key} ({wait}, {calls} handler call{s})")
        }
        Event::GatewayEvent { key, wait, .. } => format!("   gateway event {key} ({wait})"),
        Event::Bootstrap { files } if files.is_empty() => "   bootstrap files: none".into(),
        Event::Bootstrap { files } => format!("   bootstrap files: {}", files.join(", ")),
    }
}
