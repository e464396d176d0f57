//! `/v1/keys`: an admin manages the API keys over HTTP (issue 48, docs/serve.md "Auth"), as
//! `hookline keys create|list|revoke` does from a shell: the same table
//! ([`hookline_host::store::ApiKeyTable`]), the same key ([`ApiKeyRecord::create`]), the same
//! expiry texts ([`Expiry`]) and the same listing ([`ApiKeyView`]), so the two cannot disagree.
//! After a change this node reads the table at once; the others read it within 2 s.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use hookline_host::store::{ApiKeyRecord, ApiKeyTable, ApiKeyView, Expiry, Role};

use super::keys::KeyCache;
use super::{now_ms, AdminCaller, Principal};
use crate::openapi::errors::{Internal, NeedsAdmin, NotJson, TooLarge, Unauthorized};
use crate::routes::sessions::Body;
use crate::{ApiError, AppState, ErrorBody};

/// `POST /v1/keys` body: what `hookline keys create` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct NewKeyBody {
    /// The tenant its principal belongs to: 1 to 64 letters, digits, `-`, `_` or `.`.
    tenant: String,
    /// `client`, `operator` or `admin`.
    role: String,
    /// A name for people (`web-app`).
    #[serde(default)]
    name: Option<String>,
    /// When it stops working: a duration from now (`30d`, `12h`) or a time
    /// (`2027-01-01T00:00:00Z`); never when absent.
    #[serde(default)]
    expires: Option<String>,
}

/// `POST /v1/keys` answer: the key, shown this once, and how `GET /v1/keys` lists it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewKeyAnswer {
    /// The key (`hlk_<id>_<secret>`): the server keeps only its SHA-256, so it is never shown
    /// again.
    key: String,
    /// The key as listed.
    #[serde(flatten)]
    listed: ApiKeyView,
}

/// `GET /v1/keys` answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KeysList {
    /// Every key, revoked and expired ones too, oldest first; never a key or its hash.
    keys: Vec<ApiKeyView>,
}

/// The server's key cache, or 503 for a server started without a key table (only embedders
/// do that: `hookline serve` always has one).
fn cache(state: &AppState) -> Result<&KeyCache, ApiError> {
    state.auth.keys().ok_or_else(|| {
        ApiError::Status(
            StatusCode::SERVICE_UNAVAILABLE,
            "this server was started without an API key table".into(),
        )
    })
}

fn store_failed(error: hookline_host::store::StoreError) -> ApiError {
    ApiError::Internal(format!("the API key table: {error}"))
}

/// Who asked, for the audit line: the admin extractor only checks the role, so read it again.
fn label(who: Option<&Principal>) -> String {
    who.map_or_else(|| "unknown".to_owned(), Principal::label)
}

/// `GET /v1/keys`: every key as `hookline keys list --json` shows it.
#[utoipa::path(
    get, path = "/v1/keys", tag = "server",
    responses(
        (status = 200, description = "Every API key: id, name, tenant, role, when made, when it expires or was revoked, and its state; never a key or its hash.", body = KeysList),
        Unauthorized,
        NeedsAdmin,
        Internal,
    )
)]
pub(crate) async fn list(
    _: AdminCaller,
    State(state): State<AppState>,
) -> Result<Json<KeysList>, ApiError> {
    let keys = cache(&state)?.table().list().await.map_err(store_failed)?;
    let now = now_ms();
    Ok(Json(KeysList {
        keys: keys.iter().map(|k| ApiKeyView::of(k, now)).collect(),
    }))
}

/// `POST /v1/keys`: makes a key as `hookline keys create` does; 201 with the key shown once.
#[utoipa::path(
    post, path = "/v1/keys", tag = "server",
    request_body(content = NewKeyBody, description = "The key's tenant and role, and optionally a name and when it expires.", content_type = "application/json"),
    responses(
        (status = 201, description = "The new key, shown this once, with its id and fields as `GET /v1/keys` lists them.", body = NewKeyAnswer),
        (status = 400, description = "The body is not the JSON this route takes (`bad-json`, naming the field), or names no role, a tenant that cannot be one, or an expiry that is neither a duration nor a time (`invalid-request`).", body = ErrorBody),
        Unauthorized,
        NeedsAdmin,
        TooLarge,
        NotJson,
        Internal,
    )
)]
pub(crate) async fn create(
    _: AdminCaller,
    who: Option<axum::Extension<Principal>>,
    State(state): State<AppState>,
    Body(body): Body<NewKeyBody>,
) -> Result<(StatusCode, Json<NewKeyAnswer>), ApiError> {
    let cache = cache(&state)?;
    let role: Role = body.role.parse().map_err(ApiError::Invalid)?;
    let now = now_ms();
    let expires_ms = match body.expires.as_deref() {
        Some(text) => Some(
            text.parse::<Expiry>()
                .map_err(ApiError::Invalid)?
                .at_ms(now),
        ),
        None => None,
    };
    let (key, record) = ApiKeyRecord::create(&body.tenant, role, body.name, expires_ms, now)
        .map_err(|e| match e {
            hookline_host::store::KeyError::BadTenant(_) => ApiError::Invalid(e.to_string()),
            hookline_host::store::KeyError::Random(_) => ApiError::Internal(e.to_string()),
        })?;
    cache.table().insert(&record).await.map_err(store_failed)?;
    cache.reload().await;
    tracing::info!(
        key = %record.id, tenant = %record.tenant, role = %record.role,
        by = %label(who.as_deref()), "API key created"
    );
    Ok((
        StatusCode::CREATED,
        Json(NewKeyAnswer {
            key,
            listed: ApiKeyView::of(&record, now),
        }),
    ))
}

/// `DELETE /v1/keys/{id}`: revokes a key as `hookline keys revoke` does.
#[utoipa::path(
    delete, path = "/v1/keys/{id}", tag = "server",
    params(("id" = String, Path, description = "The key's id (`k...`, as `GET /v1/keys` lists it).")),
    responses(
        (status = 200, description = "The key is revoked (revoking twice keeps the first time): this node refuses it at once, every node within 2 s. The key as listed now.", body = ref("#/components/schemas/ApiKeyView")),
        Unauthorized,
        NeedsAdmin,
        (status = 404, description = "No key has this id (`unknown-key`).", body = ErrorBody),
        Internal,
    )
)]
pub(crate) async fn revoke(
    _: AdminCaller,
    who: Option<axum::Extension<Principal>>,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ApiKeyView>, ApiError> {
    let cache = cache(&state)?;
    let table: &dyn ApiKeyTable = &**cache.table();
    let now = now_ms();
    if !table.revoke(&id, now).await.map_err(store_failed)? {
        return Err(ApiError::UnknownKey(id));
    }
    cache.reload().await;
    tracing::info!(key = %id, by = %label(who.as_deref()), "API key revoked");
    let keys = table.list().await.map_err(store_failed)?;
    let record = keys
        .iter()
        .find(|k| k.id == id)
        .ok_or_else(|| ApiError::UnknownKey(id.clone()))?;
    Ok(Json(ApiKeyView::of(record, now_ms())))
}
