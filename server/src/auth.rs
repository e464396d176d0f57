//! Bearer-token auth (issue 11 item 3): with a token, every route but `/healthz` needs
//! `Authorization: Bearer <token>`, compared in constant time. A WebSocket may instead offer the
//! `bearer.<token>` subprotocol, or send `{"type":"auth","token":"..."}` first (browsers cannot
//! set headers): its upgrade passes with [`WsAuth::Pending`] and the socket checks the token.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::{ApiError, AppState};

/// How a WebSocket upgrade was authorized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WsAuth {
    /// By a header or the subprotocol, or no token is needed.
    Done,
    /// The socket's first message must carry the token.
    Pending,
}

/// Whether `offered` is the server's token, in time independent of where they differ.
pub(crate) fn token_matches(expected: &[u8], offered: &[u8]) -> bool {
    // `ct_eq` on slices of different lengths is false without looking at the bytes; the length
    // of the token is not a secret worth hiding.
    expected.ct_eq(offered).into()
}

/// The token of a WebSocket subprotocol header (`bearer.<token>`), if offered.
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

/// The middleware.
pub(crate) async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(expected) = state.token.clone() else {
        request.extensions_mut().insert(WsAuth::Done);
        return next.run(request).await;
    };
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    // Only the socket route may finish its auth after the upgrade.
    let upgrade = request.headers().contains_key(header::UPGRADE) && is_socket_route(&request);
    let auth = match (bearer, upgrade) {
        (Some(token), _) if token_matches(&expected, token.as_bytes()) => WsAuth::Done,
        (Some(_), _) => return ApiError::Unauthorized.into_response(),
        (None, true) => match subprotocol_token(&request) {
            Some(token) if token_matches(&expected, token.as_bytes()) => WsAuth::Done,
            Some(_) => return ApiError::Unauthorized.into_response(),
            None => WsAuth::Pending,
        },
        (None, false) => return ApiError::Unauthorized.into_response(),
    };
    request.extensions_mut().insert(auth);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(token_matches(b"secret", b"secret"));
        assert!(!token_matches(b"secret", b"secreT"));
        assert!(!token_matches(b"secret", b"secret2"));
        assert!(!token_matches(b"secret", b""));
    }
}
