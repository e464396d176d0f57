//! `GET /v1/approvals`: every approval the server's sessions wait for, in full (issue 24 item
//! 4), so an operator's page opened after an approval was asked can still show and answer it.
//! One session's are in `GET /v1/sessions/{id}` too (`approvals`).

use crate::openapi::errors::Unauthorized;
use axum::extract::State;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::{Caller, Principal};
use crate::AppState;
use hookline_host::gateway::PendingApproval;

/// One waiting approval and the session it belongs to.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ServerApproval {
    /// The session's key: answer at `POST /v1/sessions/{session}/approvals/{callId}`.
    session: String,
    /// The approval.
    #[serde(flatten)]
    approval: PendingApproval,
}

/// `GET /v1/approvals` answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ApprovalsList {
    /// Soonest deadline first.
    approvals: Vec<ServerApproval>,
}

/// The waiting approvals of every open session `who` may see, soonest deadline first.
pub(crate) fn pending(state: &AppState, who: &Principal) -> Vec<ServerApproval> {
    let mut all: Vec<ServerApproval> = state
        .gateway
        .sessions()
        .into_iter()
        .filter(|status| who.may_see(status.owner.as_ref()))
        .filter_map(|status| state.gateway.session(&status.key))
        .flat_map(|handle| {
            let session = handle.key().to_string();
            handle
                .approvals()
                .into_iter()
                .map(move |approval| ServerApproval {
                    session: session.clone(),
                    approval,
                })
        })
        .collect();
    all.sort_by(|a, b| {
        (a.approval.deadline_ms, &a.session, &a.approval.call_id).cmp(&(
            b.approval.deadline_ms,
            &b.session,
            &b.approval.call_id,
        ))
    });
    all
}

/// `GET /v1/approvals`.
#[utoipa::path(
    get, path = "/v1/approvals", tag = "approvals",
    responses(
        (status = 200, description = "Every approval the sessions the caller may see wait for, soonest deadline first.", body = ApprovalsList),
        Unauthorized,
    )
)]
pub(crate) async fn list(
    Caller(who): Caller,
    State(state): State<AppState>,
) -> Json<ApprovalsList> {
    Json(ApprovalsList {
        approvals: pending(&state, &who),
    })
}
