//! The JSON the API answers with, as types: the handlers build these, and the OpenAPI document
//! ([`crate::openapi`]) takes their schemas from them (schemars, as the plugin protocol's are).
//!
//! Values the host reports in full (events, stored records, plugins) keep their own serde
//! shape; their schemas come from the same types (schemars derives beside their serde ones in
//! `hookline-messages` and `hookline-host`), so the document lists every kind and field.

use schemars::JsonSchema;
use serde::Serialize;

use hookline_host::gateway::{PendingApproval, SessionStatus};
use hookline_host::state::HostEvent;
use hookline_messages::model::UsageTotals;
use hookline_messages::record::{Decision, Record};
use hookline_messages::session::SessionId;
use hookline_messages::user::StopReason;

/// What `/healthz` and `/readyz` say when they answer 200.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HealthState {
    /// The process answers (`/healthz`).
    Ok,
    /// The server takes work (`/readyz`).
    Ready,
}

/// `GET /healthz` and `GET /readyz`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Health {
    /// `ok` from `/healthz`, `ready` from `/readyz`.
    pub(crate) status: HealthState,
}

/// `GET /v1/sessions`: every open session.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionsList {
    /// Their statuses.
    pub(crate) sessions: Vec<SessionStatus>,
}

/// `GET /v1/sessions/{id}`: a session's status, a page of its records and what waits for an
/// operator.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionView {
    /// Its status.
    pub(crate) session: SessionStatus,
    /// A page of its active session's stored records.
    pub(crate) records: RecordsView,
    /// The call ids of the approvals it waits for.
    pub(crate) pending_approvals: Vec<String>,
    /// The approvals it waits for, in full.
    pub(crate) approvals: Vec<PendingApproval>,
    /// The last approvals an operator answered in its active session, oldest first, as its
    /// archive holds them: each names who answered (`answeredBy`, `tenant/principal`) when the
    /// server has principals (issue 48).
    pub(crate) answered: Vec<hookline_messages::record::ApprovalRecord>,
}

/// A page of stored records.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RecordsView {
    /// How many records the active session stores in all.
    pub(crate) total: usize,
    /// The index of the page's first record.
    pub(crate) offset: usize,
    /// The records from `offset` on (none while `busy`).
    pub(crate) items: Vec<Record>,
    /// A turn runs (or waits for an approval): the page is empty rather than waiting for it;
    /// the `session` event of `/v1/events` tells when the session is idle again.
    pub(crate) busy: bool,
}

/// `GET /v1/sessions/{id}/archive`: a page of the active session's archive, as stored (issue 46
/// item 3: the console shows a session's earlier turns from it).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ArchiveView {
    /// The active session the archive is of.
    pub(crate) session_id: Option<SessionId>,
    /// How many entries its archive holds in all (what is stored: a running turn's latest
    /// steps may not be yet).
    pub(crate) total: usize,
    /// The index of the page's first entry.
    pub(crate) offset: usize,
    /// User messages before `offset`: the first user message of the page starts turn
    /// `turnsBefore + 1`, numbered as the session's `turns` count them.
    pub(crate) turns_before: u64,
    /// The entries from `offset` on, each as stored: an object tagged by `kind`
    /// (`session-started`, `user-message`, `system-text`, `model-request`, `model-response`,
    /// `model-failure`, `tool-call`, `approval-asked`, `approval`, `tool-output`, `tool-result`,
    /// `compaction`, `turn-finished`, `note`, `gateway-event`, `side-question`, `seeded`,
    /// `approvals-set`, `bootstrap`, `session-ended`; docs/storage.md). Hook changes are not
    /// stored, but for a rewritten tool call's `rewrittenFrom`, a replaced user text's
    /// `original` and a model request's `changes`.
    pub(crate) items: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// `DELETE /v1/sessions/{id}`: what closing the session reported.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct EventsAnswer {
    /// The events, in order (the end hooks' among them).
    pub(crate) events: Vec<HostEvent>,
}

/// `POST /v1/sessions/{id}/turns`: a finished turn (its event stream ends with a `TurnDone`
/// instead, the events having gone before).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnAnswer<'a> {
    /// Why it stopped.
    pub(crate) stop_reason: StopReason,
    /// The session it ran in.
    pub(crate) session_id: Option<&'a SessionId>,
    /// Everything it reported, in order.
    pub(crate) events: &'a [HostEvent],
    /// Token usage of its model calls; absent, not zero, when the provider reported none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<UsageTotals>,
}

/// The data of the `done` event that ends a turn's event stream (`Accept: text/event-stream`),
/// and what a WebSocket's `{"type":"done","request":"turn"}` holds besides those two keys: the
/// turn's answer without its events, which went before.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnDone<'a> {
    /// Why it stopped.
    pub(crate) stop_reason: StopReason,
    /// The session it ran in.
    pub(crate) session_id: Option<&'a SessionId>,
    /// Token usage of its model calls; absent, not zero, when the provider reported none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<UsageTotals>,
    /// Every event of the turn, in order, as the JSON answer carries them: only when the
    /// stream or socket missed events while the turn ran (it was sent `lagged`), so a reader
    /// too slow for the bounded feed still has the turn's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) events: Option<&'a [HostEvent]>,
}

impl<'a> TurnDone<'a> {
    /// The `done` of a finished turn whose events went before it.
    pub(crate) fn of(report: &'a hookline_host::gateway::TurnReport) -> Self {
        Self {
            stop_reason: report.stop_reason,
            session_id: report.session_id.as_ref(),
            usage: report.usage,
            events: None,
        }
    }

    /// The `done` of a finished turn some of whose events the reader missed: with all of them.
    pub(crate) fn with_events(report: &'a hookline_host::gateway::TurnReport) -> Self {
        Self {
            events: Some(&report.events),
            ..Self::of(report)
        }
    }
}

/// `POST /v1/sessions/{id}/approvals/{call_id}`: the answer taken.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApprovalAnswer {
    /// The call answered.
    pub(crate) call_id: String,
    /// The decision it got.
    pub(crate) decision: Decision,
}

/// `POST /v1/sessions/{id}/commands`: what the command reported and the session after it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CommandAnswer {
    /// The events, in order.
    pub(crate) events: Vec<HostEvent>,
    /// Token usage of the model calls it made (`/compact`); absent when it made none or the
    /// provider reported none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<UsageTotals>,
    /// The session's status once the command settled.
    pub(crate) session: SessionStatus,
}
