//! `GET /v1/whoami`: who the caller is, so a client (the console) shows it and offers only what
//! the principal may use instead of meeting 403s (issue 48).

use axum::extract::State;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;

use super::tenants::ApprovalAnswerers;
use super::Caller;
use crate::openapi::errors::Unauthorized;
use crate::AppState;
use hookline_host::store::Role;

/// `GET /v1/whoami` answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WhoAmI {
    /// The principal's tenant (an admin's sessions still belong to `default`).
    tenant: String,
    /// Its id, as session owners and approval answers name it: an API key's id, `jwt:<sub>`,
    /// `token` (the `--token-file` token) or `local` (no credentials configured).
    principal: String,
    /// `client`, `operator` or `admin`.
    role: String,
    /// Whether it may answer the approvals of the sessions it sees: operators and admins, and
    /// a client when its tenant's `approvals` is `owner-or-operator`.
    answers_approvals: bool,
    /// Whether it may read `/metrics`, `/v1/plugins` and the gateway's own events (admins).
    admin: bool,
    /// Whether the server asks for credentials at all (false: loopback only, every caller is
    /// the local admin).
    authenticated: bool,
}

/// The route.
#[utoipa::path(
    get, path = "/v1/whoami", tag = "server",
    responses(
        (status = 200, description = "The caller: its tenant, principal and role, and what it may use.", body = WhoAmI),
        Unauthorized,
    )
)]
pub(crate) async fn show(Caller(who): Caller, State(state): State<AppState>) -> Json<WhoAmI> {
    let answers_approvals = who.role >= Role::Operator
        || state.tenants.policy(&who.tenant).approvals == ApprovalAnswerers::OwnerOrOperator;
    Json(WhoAmI {
        tenant: who.tenant.to_string(),
        principal: who.id.to_string(),
        role: who.role.name().to_owned(),
        answers_approvals,
        admin: who.role == Role::Admin,
        authenticated: state.auth.enforced(),
    })
}
