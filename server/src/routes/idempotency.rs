//! The `Idempotency-Key` header on `POST /v1/sessions/{id}/turns` and `.../commands` (issue 22
//! item 3; the IETF httpapi draft "The Idempotency-Key HTTP Header Field", Stripe's API as the
//! model; docs/serve.md, "Idempotent requests").
//!
//! A keyed request claims its key in the store, with the session (so the claim holds on any node
//! that resumes it), before it runs. Then:
//! - the same key and the same request (a SHA-256 digest of its route and body) again: the
//!   stored answer, not a second run (`Idempotent-Replayed: true`);
//! - while the first still runs in this process: 409 `request-in-progress` with `Retry-After`;
//! - the same key with another request: 422 `idempotency-key-reused`;
//! - a first request whose process died (or whose node lost the session) before it answered:
//!   409 `request-interrupted`, stored as its answer; it is never run again.
//!
//! A keyed request runs on a task of its own, which stores the answer before the client gets it
//! and also when the client has gone (a timeout, a closed stream). A refusal before anything ran
//! (4xx, 429, 503 `draining` or `full`) is not stored: the key is forgotten, so a retry runs.

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::future::BoxFuture;
use futures::FutureExt as _;
use hookline_host::gateway::SessionHandle;
use hookline_host::state::HostError;
use hookline_host::store::{
    fresh_session_id, Claimed, IdempotencyKey, KeyClaim, KeyEntry, KeyOutcome, KeyState,
    SessionStore,
};
use hookline_messages::session::SessionId;
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::Required;
use utoipa::IntoParams;

use crate::{ApiError, AppState};

/// The request header.
pub(crate) const HEADER: &str = "idempotency-key";
/// The answer header that marks a stored answer (Stripe's name).
pub(crate) const REPLAYED: &str = "idempotent-replayed";

/// The server's idempotency settings and the keyed requests running in this process.
pub(crate) struct Keys {
    ttl: Duration,
    max_keys: usize,
    /// This process, in every owner it hands out: a claim by another process is not running
    /// here.
    process: String,
    next: AtomicU64,
    /// Owners of the keyed requests running in this process now: from before their claim
    /// until their answer is stored (or their key forgotten). A hand-over waits for it to
    /// empty before it gives the sessions' leases back ([`Keys::settled`]).
    running: watch::Sender<HashSet<String>>,
}

impl Keys {
    /// Keys that expire `ttl` after their claim, at most `max_keys` per session.
    pub(crate) fn new(ttl: Duration, max_keys: usize) -> Self {
        Self {
            ttl,
            max_keys: max_keys.max(1),
            process: format!("{}-{}", std::process::id(), fresh_session_id()),
            next: AtomicU64::new(0),
            running: watch::Sender::new(HashSet::new()),
        }
    }

    /// A new owner, counted as running until [`Keys::finish`].
    fn start(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let owner = format!("{}/{n}", self.process);
        self.running.send_modify(|running| {
            running.insert(owner.clone());
        });
        owner
    }

    fn finish(&self, owner: &str) {
        self.running
            .send_if_modified(|running| running.remove(owner));
    }

    fn is_running(&self, owner: &str) -> bool {
        self.running.borrow().contains(owner)
    }

    /// Waits until no keyed request of this process is between its claim and its stored answer
    /// (at most `wait`; whether it came to that). A hand-over (issue 49) waits for it before it
    /// gives the sessions' leases back: an answer stored after that could not be written (the
    /// successor holds the session) and would leave the key claimed by a process that is gone,
    /// which the successor must answer `request-interrupted`.
    pub(crate) async fn settled(&self, wait: Duration) -> bool {
        let mut running = self.running.subscribe();
        tokio::time::timeout(wait, running.wait_for(HashSet::is_empty))
            .await
            .is_ok_and(|settled| settled.is_ok())
    }
}

/// The `Idempotency-Key` header, parsed: none, or a valid key (400 `bad-idempotency-key` for a
/// malformed one or two of them).
pub(crate) struct IdempotencyHeader(pub(crate) Option<IdempotencyKey>);

/// How the operations that take the header document it: one description for all of them.
impl IntoParams for IdempotencyHeader {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        // As an optional header's `Option<String>` reads in the document: a string or null.
        let text =
            ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null]));
        vec![ParameterBuilder::new()
            .name("Idempotency-Key")
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "Makes the request idempotent (IETF httpapi draft; 1 to 255 printable ASCII \
                 characters, plain or quoted): the same key and body on this session get the \
                 first request's stored answer, with `Idempotent-Replayed: true`, without running \
                 it again.",
            ))
            .schema(Some(text))
            .build()]
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let mut values = parts.headers.get_all(HEADER).iter();
        let Some(value) = values.next() else {
            return Ok(Self(None));
        };
        if values.next().is_some() {
            return Err(ApiError::BadIdempotencyKey(
                "it is given more than once".into(),
            ));
        }
        let text = value.to_str().map_err(|_| {
            ApiError::BadIdempotencyKey("it holds a character that is not printable ASCII".into())
        })?;
        IdempotencyKey::parse(text.trim())
            .map(|key| Self(Some(key)))
            .map_err(|bad| ApiError::BadIdempotencyKey(bad.to_string()))
    }
}

/// The digest a key's later uses are compared by: SHA-256 of what the request asks (its route
/// and body, as a JSON array with a fixed order), in hex.
pub(crate) fn digest(request: &serde_json::Value) -> String {
    Sha256::digest(request.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a request does after its claim.
pub(crate) enum Claim {
    /// Run it; with a ticket when it is keyed (its answer is stored).
    Run(Option<Ticket>),
    /// Answer it with the first request's stored answer.
    Replay(KeyOutcome),
}

/// A keyed request's claim, to settle when it has run.
pub(crate) struct Ticket {
    keys: Arc<Keys>,
    store: Arc<dyn SessionStore>,
    session: SessionId,
    key: IdempotencyKey,
    owner: String,
}

/// Dropped (settled, or its task unwound), the request no longer counts as running here: a
/// claim finding its entry still running then answers it as interrupted, never waits forever.
impl Drop for Ticket {
    fn drop(&mut self) {
        self.keys.finish(&self.owner);
    }
}

impl Ticket {
    /// Stores the answer (or forgets the key); the request stops counting as running when the
    /// ticket drops, after this.
    async fn settle(self, outcome: Option<KeyOutcome>) {
        let settled = self
            .store
            .settle_key(&self.session, &self.key, &self.owner, outcome.as_ref())
            .await;
        if let Err(error) = settled {
            // The entry stays claimed by an owner no longer running: its retry is answered
            // as interrupted, never run twice.
            tracing::warn!(session = %self.session, key = %self.key, "could not store a keyed request's answer: {error}");
        }
    }
}

/// Claims `key` (when given) for a request to `handle`'s session that digests to `digest`.
///
/// # Errors
/// 409 `request-in-progress`, 422 `idempotency-key-reused`, or the store's failure.
pub(crate) async fn claim(
    state: &AppState,
    handle: &SessionHandle,
    key: Option<IdempotencyKey>,
    digest: String,
) -> Result<Claim, ApiError> {
    let Some(key) = key else {
        return Ok(Claim::Run(None));
    };
    let keys = Arc::clone(&state.keys);
    // The session the request names: its key stays across `/new` and `/reset`, so a repeated
    // `/new` finds the key its first run stored.
    let session = handle.key().clone();
    let owner = keys.start();
    // Counted as running first, then the hand-over looked at: a hand-over that began before
    // this request was counted refuses it here (307, nothing ran, nothing claimed); one that
    // begins after waits for its answer to be stored before the session leaves (issue 49).
    if state.gateway.is_handing_over() {
        keys.finish(&owner);
        return Err(ApiError::Moved);
    }
    let claim = KeyClaim {
        key,
        digest,
        owner,
        now_ms: now_ms(),
        ttl_ms: u64::try_from(keys.ttl.as_millis()).unwrap_or(u64::MAX),
        max_keys: keys.max_keys,
    };
    let store = Arc::clone(state.gateway.session_store());
    let ticket = Ticket {
        keys,
        store,
        session,
        key: claim.key.clone(),
        owner: claim.owner.clone(),
    };
    match ticket.store.claim_key(&ticket.session, &claim).await {
        Ok(Claimed::New) => Ok(Claim::Run(Some(ticket))),
        // The ticket drops at the end: this request claimed nothing.
        Ok(Claimed::Existing(entry)) => existing(&ticket, &claim, entry).await,
        Err(error) => Err(HostError::Store(error).into()),
    }
}

/// The answer to a claim that found the key taken.
async fn existing(ticket: &Ticket, claim: &KeyClaim, entry: KeyEntry) -> Result<Claim, ApiError> {
    let key = claim.key.to_string();
    if entry.digest != claim.digest {
        return Err(ApiError::KeyReused(key));
    }
    match entry.state {
        KeyState::Done { outcome } => Ok(Claim::Replay(outcome)),
        KeyState::Running { owner } if ticket.keys.is_running(&owner) => {
            Err(ApiError::KeyInProgress(key))
        }
        KeyState::Running { owner } => {
            // Its process is gone (a crash, a node that lost the session) or could not store
            // its answer: what it did is in the session; it is not run again.
            let error = ApiError::Interrupted {
                key: key.clone(),
                session: ticket.session.to_string(),
            };
            let outcome = KeyOutcome {
                status: error.status().as_u16(),
                body: error.body(),
            };
            let store = &ticket.store;
            let settled = store
                .settle_key(&ticket.session, &claim.key, &owner, Some(&outcome))
                .await
                .map_err(|e| ApiError::from(HostError::Store(e)))?;
            if settled {
                Ok(Claim::Replay(outcome))
            } else {
                Err(ApiError::KeyInProgress(key))
            }
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A successful answer as stored.
pub(crate) trait Answer: Send + 'static {
    /// The JSON body the client gets.
    fn json(&self) -> serde_json::Value;
}

impl Answer for serde_json::Value {
    fn json(&self) -> serde_json::Value {
        self.clone()
    }
}

/// What is stored for `result`: the answer, or the error of a request that ran; `None` for a
/// refusal before anything ran.
fn outcome_of<T: Answer>(result: &Result<T, ApiError>) -> Option<KeyOutcome> {
    match result {
        Ok(answer) => Some(KeyOutcome {
            status: StatusCode::OK.as_u16(),
            body: answer.json(),
        }),
        // A turn that moved to the successor (issue 49) goes on there: a retry must not run it
        // again, so its answer is kept like a 5xx's.
        Err(error)
            if (error.status().is_server_error() && !refused(error))
                || matches!(error, ApiError::TurnMoved) =>
        {
            Some(KeyOutcome {
                status: error.status().as_u16(),
                body: error.body(),
            })
        }
        Err(_) => None,
    }
}

/// 5xx answers that refuse a request before it runs.
fn refused(error: &ApiError) -> bool {
    matches!(error, ApiError::Draining | ApiError::Full(_))
}

/// Runs `request`; when keyed, on a task of its own that stores its answer before handing it
/// back (and stores it also if the caller stops waiting). A request refused at once is answered
/// at once (its key forgotten meanwhile), so a refused stream still gets its status.
pub(crate) fn once<T: Answer>(
    ticket: Option<Ticket>,
    request: impl Future<Output = Result<T, ApiError>> + Send + 'static,
) -> BoxFuture<'static, Result<T, ApiError>> {
    let mut request = request.boxed();
    let Some(ticket) = ticket else {
        return request;
    };
    if let Some(result) = (&mut request).now_or_never() {
        return match outcome_of(&result) {
            None => {
                tokio::spawn(ticket.settle(None));
                futures::future::ready(result).boxed()
            }
            outcome => async move {
                ticket.settle(outcome).await;
                result
            }
            .boxed(),
        };
    }
    let task = tokio::spawn(async move {
        let result = request.await;
        ticket.settle(outcome_of(&result)).await;
        result
    });
    async move {
        task.await.unwrap_or_else(|error| {
            Err(ApiError::Internal(format!(
                "the request's task failed: {error}"
            )))
        })
    }
    .boxed()
}

/// A stored answer as JSON, marked as replayed.
pub(crate) fn replay_json(outcome: KeyOutcome) -> Response {
    let status = StatusCode::from_u16(outcome.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    replayed((status, Json(outcome.body)).into_response())
}

/// Marks `response` as a stored answer.
pub(crate) fn replayed(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(REPLAYED, HeaderValue::from_static("true"));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answers_and_failures_while_running_are_stored_refusals_are_not() {
        let ok: Result<serde_json::Value, ApiError> = Ok(serde_json::json!({"events": []}));
        assert_eq!(outcome_of(&ok).map(|o| o.status), Some(200));
        let stored = [
            ApiError::Internal("disk full".into()),
            ApiError::Overloaded,
            ApiError::OutOfDescriptors("open".into()),
        ];
        for error in stored {
            let status = error.status().as_u16();
            assert_eq!(
                outcome_of::<serde_json::Value>(&Err(error)).map(|o| o.status),
                Some(status)
            );
        }
        let refused = [
            ApiError::Draining,
            ApiError::Full(1),
            ApiError::Busy("s".into()),
            ApiError::UnknownSession("s".into()),
            ApiError::SessionEnded("s".into()),
            ApiError::Invalid("no such command".into()),
            ApiError::LeaseLost("s".into()),
        ];
        for error in refused {
            assert_eq!(outcome_of::<serde_json::Value>(&Err(error)), None);
        }
    }

    #[test]
    fn owners_count_as_running_until_they_finish_and_differ_per_request() {
        let keys = Keys::new(Duration::from_secs(1), 0);
        assert_eq!(keys.max_keys, 1);
        let (a, b) = (keys.start(), keys.start());
        assert_ne!(a, b);
        assert!(keys.is_running(&a) && keys.is_running(&b));
        keys.finish(&a);
        assert!(!keys.is_running(&a) && keys.is_running(&b));
        // Another process's owner is never running here.
        let other = Keys::new(Duration::from_secs(1), 1);
        assert!(!keys.is_running(&other.start()));
    }

    #[tokio::test]
    async fn settled_waits_for_every_running_owner_and_is_bounded() {
        let keys = Arc::new(Keys::new(Duration::from_secs(1), 1));
        assert!(keys.settled(Duration::ZERO).await, "nothing runs");
        let (a, b) = (keys.start(), keys.start());
        assert!(!keys.settled(Duration::from_millis(20)).await, "two run");
        let waiting = tokio::spawn({
            let keys = Arc::clone(&keys);
            async move { keys.settled(Duration::from_secs(30)).await }
        });
        keys.finish(&a);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one still runs");
        keys.finish(&b);
        assert!(waiting.await.unwrap());
    }

    #[test]
    fn digests_differ_by_route_and_body() {
        let turn = digest(&serde_json::json!(["turns", "hi", null]));
        assert_eq!(turn.len(), 64);
        assert_eq!(turn, digest(&serde_json::json!(["turns", "hi", null])));
        assert_ne!(turn, digest(&serde_json::json!(["turns", "hi", "plan"])));
        assert_ne!(turn, digest(&serde_json::json!(["commands", "hi"])));
    }
}
