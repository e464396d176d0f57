//! The error answers many operations share, each one `IntoResponses` type named in
//! `#[utoipa::path(responses(...))]` beside the operation's own answers: one description per
//! error code, every body an [`ErrorBody`](crate::ErrorBody).

use std::collections::BTreeMap;

use utoipa::openapi::{
    header::HeaderBuilder, Content, Ref, RefOr, Response, ResponseBuilder, ResponsesBuilder,
};
use utoipa::{IntoResponses, PartialSchema};

/// An error answer with `description`, its `Retry-After` header when `retry` is set.
fn error(description: &str, retry: bool) -> Response {
    let body = Content::new(Some(Ref::from_schema_name("ErrorBody")));
    let mut response = ResponseBuilder::new()
        .description(description)
        .content("application/json", body);
    if retry {
        let seconds = HeaderBuilder::new()
            .schema(<u64 as PartialSchema>::schema())
            .description(Some("Seconds to wait."))
            .build();
        response = response.header("Retry-After", seconds);
    }
    response.build()
}

/// Declares one unit type per shared error answer.
macro_rules! error_answers {
    ($($(#[$doc:meta])* $name:ident: $status:literal $(+ $retry:ident)?, $description:literal;)*) => {
        $(
            $(#[$doc])*
            pub(crate) struct $name;

            impl IntoResponses for $name {
                fn responses() -> BTreeMap<String, RefOr<Response>> {
                    let retry = false $(|| stringify!($retry) == "retry")?;
                    ResponsesBuilder::new()
                        .response($status.to_string(), error($description, retry))
                        .build()
                        .into()
                }
            }
        )*
    };
}

error_answers! {
    /// 400 for a body a route cannot take.
    BadBody: 400, "The body is not the JSON this route takes (`bad-json`, naming the field) or asks for what cannot be (`invalid-request`, `unknown-model`).";
    /// 400 for a body a route cannot take, or a malformed `Idempotency-Key`.
    BadKeyedBody: 400, "The body is not the JSON this route takes (`bad-json`, naming the field), asks for what cannot be (`invalid-request`, `unknown-model`), or the `Idempotency-Key` is malformed (`bad-idempotency-key`).";
    /// 401 `unauthorized`.
    Unauthorized: 401, "No credential, or one the server refuses: a wrong token, an unknown, revoked or expired API key, a JWT that does not verify (`unauthorized`).";
    /// 403 `forbidden` for a route of admins.
    NeedsAdmin: 403, "The route needs the admin role (`forbidden`).";
    /// 404 `unknown-session` for a session that is not open here.
    NotOpen: 404, "No session with this id is open here, and none whose holder is gone can be taken over here (`unknown-session`).";
    /// 409 `session-leased` for a session another node that runs holds.
    Leased: 409 + retry, "Another node that runs holds the session (`session-leased`, naming it, with `Retry-After`); one whose node died or whose lease expired is taken over here instead.";
    /// 408 `timeout`.
    TimedOut: 408, "The request took longer than `--request-timeout` (`timeout`).";
    /// 409 for an `Idempotency-Key` whose first request runs or was cut off, with `Retry-After`.
    KeyBusy: 409 + retry, "A request with this `Idempotency-Key` still runs (`request-in-progress`; `Retry-After` says when to retry), or the node running it stopped before it answered (`request-interrupted`: it will not run again); or another node that runs holds the session (`session-leased`, naming it, with `Retry-After`; one whose node died or whose lease expired is taken over here instead).";
    /// 422 `idempotency-key-reused`.
    KeyReused: 422, "This `Idempotency-Key` was used with another body or route (`idempotency-key-reused`).";
    /// 410 `session-ended`.
    SessionEnded: 410, "The session ended while the request waited (`session-ended`).";
    /// 413 `body-too-large`.
    TooLarge: 413, "The body is larger than `--body-limit`, or than the caller's tenant's `body_limit` (`body-too-large`).";
    /// 429 `tenant-limit`, with `Retry-After`.
    TenantLimited: 429 + retry, "The caller's tenant holds one of its limits on this node (`tenant-limit`, naming it: `max_sessions`); `Retry-After` says when to retry.";
    /// 429 for a busy session or a tenant past its turn limits, with `Retry-After`.
    TurnRefused: 429 + retry, "Too many requests wait for this session (`session-busy`), or the caller's tenant starts turns faster than `turns_per_second` or runs `max_running_turns` (`tenant-limit`, naming it); `Retry-After` says when to retry.";
    /// 415 `unsupported-media-type`.
    NotJson: 415, "The body's content type is not JSON (`unsupported-media-type`).";
    /// 429 `session-busy`, with `Retry-After`.
    SessionBusy: 429 + retry, "Too many requests wait for this session (`session-busy`); `Retry-After` says when to retry.";
    /// 500 `internal`.
    Internal: 500, "The host failed (`internal`): not the client's doing.";
    /// 503 for a server that cannot take the request now, with `Retry-After`.
    /// 307 `session-moved`: the server is being replaced (issue 49).
    Moved: 307, "This server is being replaced and hands its sessions over (`session-moved`): nothing ran; `Location` is the request's own URL and the connection closes (`Connection: close`), so the request sent again reaches the server that replaced this one.";
    /// 202 `turn-moved`: a turn waiting for an approval went on in the server replacing this one.
    TurnMoved: 202, "The server was replaced while this turn waited for an approval (`turn-moved`): the turn goes on in the new server, which asks the approval again with the same call id and deadline (`GET /v1/approvals` there); its outcome shows in the session's records and events. With `Accept: text/event-stream` the stream ends with an `error` event of this body instead.";
    Unavailable: 503 + retry, "The server is draining (`draining`), holds its limit of sessions (`full`), its pipeline is overloaded (`overloaded`) or it is out of file descriptors (`out-of-descriptors`); `Retry-After` says when to retry.";
}
