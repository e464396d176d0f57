//! Who calls (issue 48, docs/serve.md "Auth"): every request but `/healthz` and the console's
//! public page and assets is made by a [`Principal`] (a tenant and a role), found once by the
//! root layer [`authenticate`] and put in the request's extensions. Handlers take it through
//! the thin extractors [`Caller`] and [`AdminCaller`], so the role a route
//! needs is in its signature; a request that reached a handler without one is refused (fail
//! closed). Sessions are checked in [`crate::routes::sessions::session_for`].
//!
//! Credentials, each `Authorization: Bearer <credential>`: the `--token-file` token (an admin of
//! the tenant `default`), an API key ([`keys`]), or a JWT ([`jwt`]). With none of them
//! configured and no key in the table, the server stays as before: loopback only, and every
//! caller is the local admin.
//!
//! A WebSocket may instead offer the `bearer.<credential>` subprotocol, or send
//! `{"type":"auth","token":"..."}` first (browsers cannot set headers): its upgrade passes with
//! [`WsAuth::Pending`] and the socket authenticates before anything else.

pub(crate) mod answered;
pub(crate) mod jwt;
pub(crate) mod keys;
pub(crate) mod keys_api;
pub(crate) mod limits;
pub(crate) mod tenants;
pub(crate) mod whoami;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use hookline_host::store::{Role, SessionOwner};

use super::{ApiError, AppState};

/// The tenant of the `--token-file` admin, of callers when auth is off, and of the sessions
/// admins open.
pub const DEFAULT_TENANT: &str = "default";

/// The longest credential read; a longer one is refused without being looked at.
const MAX_CREDENTIAL: usize = 16 * 1024;

/// Who makes a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// Its tenant.
    pub tenant: Arc<str>,
    /// Its id: an API key's id, `jwt:<subject>`, `token` or `local`.
    pub id: Arc<str>,
    /// What it may do.
    pub role: Role,
    /// What it showed, so a long stream can end when that stops being good ([`Authenticator::lapsed`]).
    pub(crate) credential: Credential,
}

/// The kind of credential a [`Principal`] showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Credential {
    /// None (auth is off) or the `--token-file` token: good while the server runs.
    Standing,
    /// An API key (its id is the principal's): good until it is revoked or expires.
    Key,
    /// A JWT: good until its `exp` (ms since the epoch, with the checks' leeway).
    Jwt {
        /// When it stops being good.
        until_ms: u64,
    },
}

/// How often a long stream looks again at its credential: with the key table read every
/// second, a revoked key ends its streams within 1.5 s (the promise is 2 s).
const LAPSE_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Now, in ms since the epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Principal {
    /// The caller of a server without auth: an admin on loopback.
    pub(crate) fn local() -> Self {
        Self {
            tenant: DEFAULT_TENANT.into(),
            id: "local".into(),
            role: Role::Admin,
            credential: Credential::Standing,
        }
    }

    /// The holder of the `--token-file` token.
    pub(crate) fn token() -> Self {
        Self {
            tenant: DEFAULT_TENANT.into(),
            id: "token".into(),
            role: Role::Admin,
            credential: Credential::Standing,
        }
    }

    /// The owner a session it opens gets (an admin's sessions belong to `default`).
    pub(crate) fn owner(&self) -> SessionOwner {
        let tenant = if self.role == Role::Admin {
            DEFAULT_TENANT
        } else {
            &self.tenant
        };
        SessionOwner {
            tenant: tenant.to_owned(),
            principal: self.id.to_string(),
        }
    }

    /// `tenant/id`, as the archive records who answered an approval.
    pub(crate) fn label(&self) -> String {
        format!("{}/{}", self.tenant, self.id)
    }

    /// Whether it may see a session owned by `owner` (a session nobody owns belongs to the
    /// tenant `default`). The one rule every session route and list uses.
    pub(crate) fn may_see(&self, owner: Option<&SessionOwner>) -> bool {
        let tenant = owner.map_or(DEFAULT_TENANT, |o| o.tenant.as_str());
        match self.role {
            Role::Admin => true,
            Role::Operator => tenant == &*self.tenant,
            Role::Client => {
                owner.is_some_and(|o| o.tenant == *self.tenant && o.principal == *self.id)
            }
        }
    }

    /// Whether it sees every session (an admin): no owner need be looked up.
    pub(crate) fn may_see_all(&self) -> bool {
        self.role == Role::Admin
    }

    /// Whether it sees gateway-wide events (no session): admins only.
    pub(crate) fn sees_gateway(&self) -> bool {
        self.role == Role::Admin
    }
}

/// How a WebSocket upgrade was authorized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WsAuth {
    /// By a header or the subprotocol, or no credentials are needed.
    Done,
    /// The socket's first message must carry the credential.
    Pending,
}

/// Whether `offered` is the server's token, in time independent of where they differ.
pub(crate) fn token_matches(expected: &[u8], offered: &[u8]) -> bool {
    // `ct_eq` on slices of different lengths is false without looking at the bytes; the length
    // of the token is not a secret worth hiding.
    expected.ct_eq(offered).into()
}

/// The credential of a WebSocket subprotocol header (`bearer.<credential>`), if offered.
pub(crate) fn subprotocol_token(request: &Request) -> Option<String> {
    request
        .headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .find_map(|p| p.strip_prefix("bearer.").map(str::to_owned))
}

/// Whether the request is for `/v1/sessions/{id}/ws` exactly.
fn is_socket_route(request: &Request) -> bool {
    let segments: Vec<&str> = request.uri().path().split('/').collect();
    matches!(segments.as_slice(), ["", "v1", "sessions", id, "ws"] if !id.is_empty())
}

/// The routes anybody may call: `/healthz` and the console's page and assets.
fn is_public(request: &Request) -> bool {
    let path = request.uri().path();
    path == "/healthz" || path == "/" || path.starts_with("/assets/")
}

/// How the server tells who calls.
pub(crate) struct Authenticator {
    token: Option<Arc<[u8]>>,
    keys: Option<keys::KeyCache>,
    jwt: Option<jwt::JwtVerifier>,
    /// Whether credentials are needed: a token, a JWKS, or any key in the table (once a key
    /// exists it stays on, even when every key was revoked).
    enforced: AtomicBool,
}

impl Authenticator {
    pub(crate) fn new(
        token: Option<Arc<[u8]>>,
        keys: Option<keys::KeyCache>,
        jwt: Option<jwt::JwtVerifier>,
    ) -> Self {
        let enforced =
            token.is_some() || jwt.is_some() || keys.as_ref().is_some_and(keys::KeyCache::any);
        Self {
            token,
            keys,
            jwt,
            enforced: AtomicBool::new(enforced),
        }
    }

    /// The server's copy of the API key table, if it has a table.
    pub(crate) fn keys(&self) -> Option<&keys::KeyCache> {
        self.keys.as_ref()
    }

    /// Whether requests need credentials.
    pub(crate) fn enforced(&self) -> bool {
        if self.enforced.load(Ordering::Acquire) {
            return true;
        }
        let any = self.keys.as_ref().is_some_and(keys::KeyCache::any);
        if any {
            self.enforced.store(true, Ordering::Release);
        }
        any
    }

    /// The principal a credential names, or why it names none (one sentence, 401).
    pub(crate) async fn principal(&self, credential: &str) -> Result<Principal, ApiError> {
        if credential.len() > MAX_CREDENTIAL {
            return Err(ApiError::BadCredentials(format!(
                "the credential is longer than {MAX_CREDENTIAL} bytes"
            )));
        }
        if let Some(token) = &self.token {
            if token_matches(token, credential.as_bytes()) {
                return Ok(Principal::token());
            }
        }
        if let Some(keys) = &self.keys {
            if let Some(found) = keys.principal(credential) {
                return found;
            }
        }
        match &self.jwt {
            Some(jwt) if credential.matches('.').count() == 2 => jwt.principal(credential).await,
            _ => Err(ApiError::Unauthorized),
        }
    }
}

impl Authenticator {
    /// Why `who`'s credential is no longer good, if it is not: a JWT past its `exp`, a key
    /// revoked, expired or gone from the table (as the last read of it says).
    pub(crate) fn lapse(&self, who: &Principal) -> Option<String> {
        match who.credential {
            Credential::Standing => None,
            Credential::Jwt { until_ms } => {
                (now_ms() >= until_ms).then(|| "the JWT has expired".to_owned())
            }
            Credential::Key => self
                .keys
                .as_ref()
                .and_then(|keys| keys.lapse(&who.id))
                .map(str::to_owned),
        }
    }

    /// Resolves, with the reason, once `who`'s credential stops being good (never for the
    /// token or when auth is off): an event stream or a WebSocket ends then, so it does not
    /// outlive its credential (issue 48). Looks every [`LAPSE_CHECK_EVERY`].
    pub(crate) fn lapsed(
        self: &Arc<Self>,
        who: &Principal,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = String> + Send>> {
        if who.credential == Credential::Standing {
            return Box::pin(std::future::pending());
        }
        let (auth, who) = (Arc::clone(self), who.clone());
        Box::pin(async move {
            let mut every = tokio::time::interval(LAPSE_CHECK_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                if let Some(why) = auth.lapse(&who) {
                    return why;
                }
            }
        })
    }
}

/// The root layer: puts the caller's [`Principal`] in the request's extensions, or answers 401.
/// Public routes pass without one.
pub(crate) async fn authenticate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    if is_public(&request) {
        return next.run(request).await;
    }
    let auth = &state.auth;
    if !auth.enforced() {
        let local = Principal::local();
        if let Err(refusal) = limit_body(&state, &local, &mut request) {
            return refusal.into_response();
        }
        request.extensions_mut().insert(WsAuth::Done);
        request.extensions_mut().insert(local);
        return next.run(request).await;
    }
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")));
    // Only the socket route may finish its auth after the upgrade.
    let upgrade = request.headers().contains_key(header::UPGRADE) && is_socket_route(&request);
    let credential = match (bearer, upgrade) {
        (Some(Some(credential)), _) => Some(credential.trim().to_owned()),
        (Some(None), _) => {
            return ApiError::BadCredentials(
                "the Authorization header must be 'Bearer <credential>'".into(),
            )
            .into_response()
        }
        (None, true) => subprotocol_token(&request),
        (None, false) => return ApiError::Unauthorized.into_response(),
    };
    match credential {
        Some(credential) => match auth.principal(&credential).await {
            Ok(principal) => {
                if let Err(refusal) = limit_body(&state, &principal, &mut request) {
                    return refusal.into_response();
                }
                request.extensions_mut().insert(WsAuth::Done);
                request.extensions_mut().insert(principal);
            }
            Err(refusal) => return refusal.into_response(),
        },
        None => {
            request.extensions_mut().insert(WsAuth::Pending);
        }
    }
    next.run(request).await
}

/// Caps the body at the caller's tenant's `body_limit` when it is below the server's: a
/// declared length over it is refused at once, and a body without one is cut at it (413).
fn limit_body(state: &AppState, who: &Principal, request: &mut Request) -> Result<(), ApiError> {
    let tenant = who.owner().tenant;
    let Some(limit) = state.limiter.body_limit(&tenant, state.body_limit) else {
        return Ok(());
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(limits::body_refused(&tenant, limit));
    }
    let body = std::mem::take(request.body_mut());
    *request.body_mut() = axum::body::Body::new(http_body_util::Limited::new(body, limit));
    Ok(())
}

/// The principal the root layer found; a request without one is refused (401): fail closed.
fn principal_of(parts: &Parts) -> Result<Principal, ApiError> {
    parts
        .extensions
        .get::<Principal>()
        .cloned()
        .ok_or(ApiError::Unauthorized)
}

/// Refuses a principal below `needed` (403 naming the role).
fn at_least(principal: Principal, needed: Role) -> Result<Principal, ApiError> {
    if principal.role >= needed {
        Ok(principal)
    } else {
        Err(ApiError::Forbidden {
            needed,
            role: principal.role,
        })
    }
}

/// Any principal (a client or more): the extractor of every route a client may call.
pub(crate) struct Caller(pub(crate) Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        at_least(principal_of(parts)?, Role::Client).map(Self)
    }
}

/// An admin: the extractor of the server-wide routes (`/metrics`, `/v1/plugins`).
pub(crate) struct AdminCaller;

impl<S: Send + Sync> FromRequestParts<S> for AdminCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        at_least(principal_of(parts)?, Role::Admin).map(|_| Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(tenant: &str, id: &str, role: Role) -> Principal {
        Principal {
            tenant: tenant.into(),
            id: id.into(),
            role,
            credential: Credential::Standing,
        }
    }

    fn owner(tenant: &str, principal: &str) -> SessionOwner {
        SessionOwner {
            tenant: tenant.into(),
            principal: principal.into(),
        }
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(token_matches(b"secret", b"secret"));
        assert!(!token_matches(b"secret", b"secreT"));
        assert!(!token_matches(b"secret", b"secret2"));
        assert!(!token_matches(b"secret", b""));
    }

    #[test]
    fn clients_see_their_own_operators_their_tenant_admins_everything() {
        let mine = owner("acme", "k1");
        let colleague = owner("acme", "k2");
        let other = owner("globex", "k1");
        let client = principal("acme", "k1", Role::Client);
        assert!(client.may_see(Some(&mine)));
        assert!(!client.may_see(Some(&colleague)));
        assert!(!client.may_see(Some(&other)));
        assert!(!client.may_see(None));
        let operator = principal("acme", "k9", Role::Operator);
        assert!(operator.may_see(Some(&mine)) && operator.may_see(Some(&colleague)));
        assert!(!operator.may_see(Some(&other)) && !operator.may_see(None));
        let default_operator = principal(DEFAULT_TENANT, "k8", Role::Operator);
        assert!(default_operator.may_see(None));
        let admin = principal("globex", "k7", Role::Admin);
        assert!(admin.may_see(Some(&mine)) && admin.may_see(None));
        assert_eq!(admin.owner().tenant, DEFAULT_TENANT);
        assert_eq!(client.owner(), mine);
    }

    #[test]
    fn a_lower_role_is_refused_naming_the_role_needed() {
        let refused = at_least(principal("t", "k", Role::Client), Role::Operator);
        let Err(error) = refused else {
            panic!("a client passed as an operator");
        };
        assert_eq!(error.status().as_u16(), 403);
        assert_eq!(
            error.body()["error"]["message"],
            "This route needs the operator role; the caller is a client."
        );
    }
}
