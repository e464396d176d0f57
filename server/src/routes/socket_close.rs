//! How a WebSocket ends when the client breaks its rules (issue 24 item 5, RFC 6455 section
//! 7.4.1): a message over `--body-limit` closes with 1009 (message too big) and a frame of text
//! that is not UTF-8 with 1007 (invalid payload), each with a reason; the message is never read
//! as a request, so the session is untouched. The limits themselves are set on the upgrade
//! ([`limit`]): tungstenite refuses an oversized frame by its header, before reading its payload.

use axum::extract::ws::{CloseFrame, Utf8Bytes, WebSocketUpgrade};
use tungstenite::error::CapacityError;

/// RFC 6455: the endpoint got a message too big for it to process.
pub(crate) const CLOSE_TOO_BIG: u16 = 1009;

/// RFC 6455: the endpoint got data inconsistent with the message's type (text not UTF-8).
pub(crate) const CLOSE_INVALID_PAYLOAD: u16 = 1007;

/// Caps every frame and every message (all its frames together) at `limit` bytes.
pub(crate) fn limit(ws: WebSocketUpgrade, limit: usize) -> WebSocketUpgrade {
    ws.max_message_size(limit).max_frame_size(limit)
}

/// The close frame for a read that failed by the client's doing; `None` for any other failure
/// (the connection is gone, or broke below the WebSocket): nothing can be sent then.
pub(crate) fn close_for(error: axum::Error, limit: usize) -> Option<CloseFrame> {
    let error = error.into_inner();
    let (code, reason) = match error.downcast_ref::<tungstenite::Error>()? {
        tungstenite::Error::Capacity(CapacityError::MessageTooLong { .. }) => (
            CLOSE_TOO_BIG,
            format!("the message is larger than the server's limit of {limit} bytes"),
        ),
        tungstenite::Error::Utf8(_) => (
            CLOSE_INVALID_PAYLOAD,
            "a text message must be UTF-8".to_owned(),
        ),
        _ => return None,
    };
    Some(CloseFrame {
        code,
        reason: Utf8Bytes::from(reason),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_message_too_long_closes_with_1009_naming_the_limit() {
        let error = axum::Error::new(tungstenite::Error::Capacity(
            CapacityError::MessageTooLong {
                size: 10,
                max_size: 4,
            },
        ));
        let frame = close_for(error, 4).unwrap();
        assert_eq!(frame.code, 1009);
        assert_eq!(
            frame.reason.as_str(),
            "the message is larger than the server's limit of 4 bytes"
        );
    }

    #[test]
    fn text_that_is_not_utf8_closes_with_1007() {
        let error = axum::Error::new(tungstenite::Error::Utf8("bad".into()));
        let frame = close_for(error, 4).unwrap();
        assert_eq!(frame.code, 1007);
        assert_eq!(frame.reason.as_str(), "a text message must be UTF-8");
    }

    #[test]
    fn a_connection_that_is_gone_gets_no_close_frame() {
        let error = axum::Error::new(tungstenite::Error::ConnectionClosed);
        assert!(close_for(error, 4).is_none());
        let error = axum::Error::new(std::io::Error::other("reset"));
        assert!(close_for(error, 4).is_none());
    }
}
