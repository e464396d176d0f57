//! What `hookline run` prints: the [`Report`] (`--json`) and its human rendering.

use std::fmt::Write as _;
use std::path::Path;

use hookline_messages::model::ModelRequest;
use hookline_messages::record::{ApprovalRecord, ArchiveEntry, Record};
use hookline_messages::session::SessionId;
use serde::Serialize;

use hookline_host::session::{HostError, HostEvent};
use hookline_host::store::Log;
use hookline_host::Host;

/// Everything a run did, machine-readable.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    scenario: String,
    workspace: String,
    /// Every event, in order.
    events: Vec<HostEvent>,
    /// Every outbound model request, exactly as sent.
    requests: Vec<ModelRequest>,
    /// Each stored session's records and archive, as on disk after the run.
    sessions: Vec<StoredSession>,
    /// Every note's English text, in order.
    notes: Vec<String>,
    /// Every tool that ran.
    tool_executions: Vec<HostEvent>,
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
    requests: Vec<ModelRequest>,
    events: Vec<HostEvent>,
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
            HostEvent::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let tool_executions = events
        .iter()
        .filter(|e| matches!(e, HostEvent::ToolRun { .. }))
        .cloned()
        .collect();
    let approvals = events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Approval(a) => Some(a.clone()),
            _ => None,
        })
        .collect();
    Ok(Report {
        scenario: scenario.to_owned(),
        workspace: workspace.display().to_string(),
        events,
        requests,
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

pub(crate) fn line(event: &HostEvent) -> String {
    match event {
        HostEvent::SessionStarted(s) => format!(
            "== session {} started in {}",
            s.session_id, s.workspace_root
        ),
        HostEvent::SessionEnded(s) => {
            format!("== session {} ended in {}", s.session_id, s.workspace_root)
        }
        HostEvent::User {
            text,
            original: Some(original),
            ..
        } => format!("user> {text}\n      (typed: {original})"),
        HostEvent::User { text, .. } => format!("user> {text}"),
        HostEvent::HookChanged {
            hook, changed_by, ..
        } => {
            format!("   hook {hook}: changed by {}", changed_by.join(", "))
        }
        HostEvent::SystemText { mode, text } => {
            format!("   system text ({}): {text:?}", mode.as_str())
        }
        HostEvent::ModelCall { purpose, items } => {
            format!("   model call ({purpose:?}, {items} items)")
        }
        HostEvent::Assistant { text } => format!("model> {text}"),
        HostEvent::ModelFailed { purpose, error } => {
            format!("   model call ({purpose:?}) failed: {error}")
        }
        HostEvent::ToolCall {
            call,
            rewritten_from: Some(from),
        } => {
            format!(
                "   tool call {} {} {} (rewritten from {} {})",
                call.call_id, call.name, call.arguments, from.name, from.arguments
            )
        }
        HostEvent::ToolCall { call, .. } => format!(
            "   tool call {} {} {}",
            call.call_id, call.name, call.arguments
        ),
        HostEvent::Approval(a) => format!(
            "   approval {}: {:?} by {:?} (risk {:?}, authority {:?}, prompt {})",
            a.call_id,
            a.decision,
            a.decided_by,
            a.classification.risk,
            a.classification.authority,
            a.classification.requires_prompt
        ),
        HostEvent::ToolRun { tool, success, .. } => {
            format!("   ran {tool}: {}", if *success { "ok" } else { "failed" })
        }
        HostEvent::ToolResult(r) => format!("   result {}: {:?}", r.call_id, r.text),
        HostEvent::Side { question, answer } => format!("side> {question}\nmodel (side)> {answer}"),
        HostEvent::Compacted { folded, summary } => {
            format!("   compacted {folded} records into: {summary:?}")
        }
        HostEvent::TurnFinished { stop_reason } => format!("   turn finished: {stop_reason:?}"),
        HostEvent::Note { text, .. } => format!("note: {text}"),
        HostEvent::Info { text } => format!("-- {text}"),
        HostEvent::GatewayEvent {
            key,
            wait,
            calls: Some(calls),
        } => {
            let s = if *calls == 1 { "" } else { "s" };
            format!("   gateway event {key} ({wait}, {calls} handler call{s})")
        }
        HostEvent::GatewayEvent { key, wait, .. } => format!("   gateway event {key} ({wait})"),
        HostEvent::ApprovalRequested {
            call_id,
            tool,
            timeout_ms,
            ..
        } => format!("   approval asked for {call_id} ({tool}), {timeout_ms} ms to answer"),
        HostEvent::ModelText { delta } => format!("model (streaming)> {delta}"),
        HostEvent::Bootstrap { files } if files.is_empty() => "   bootstrap files: none".into(),
        HostEvent::Bootstrap { files } => format!("   bootstrap files: {}", files.join(", ")),
    }
}
