//! The WebSocket's limits over a real socket (issue 24 item 5, docs/serve.md "WebSocket"): a
//! message over `--body-limit`, in one frame or in several, closes with 1009 and a reason, and
//! the session is untouched (no record, still idle, a small turn on a new socket runs); a text
//! frame that is not UTF-8 closes with 1007 (RFC 6455); also as the first message of a socket
//! that must authenticate by message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;

use futures::{SinkExt as _, StreamExt as _};
use hookline::host::provider::EchoProvider;
use serde_json::json;
use serve_support::{serve, Served, DEADLINE};
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;

/// The body cap these tests serve with.
const LIMIT: usize = 1024;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(served: &Served, key: &str) -> Socket {
    let (socket, _) =
        tokio_tungstenite::connect_async(served.ws(&format!("/v1/sessions/{key}/ws")))
            .await
            .unwrap();
    socket
}

/// Sends `messages` (the server may close before the last is written: a failed send is not
/// the test's concern) and returns the close frame's code and reason.
async fn close_after(socket: &mut Socket, messages: Vec<Message>) -> (u16, String) {
    for message in messages {
        if tokio::time::timeout(DEADLINE, socket.send(message))
            .await
            .expect("the send hung")
            .is_err()
        {
            break;
        }
    }
    let next = tokio::time::timeout(DEADLINE, socket.next())
        .await
        .expect("the server neither answered nor closed");
    match next {
        Some(Ok(Message::Close(Some(frame)))) => {
            (u16::from(frame.code), frame.reason.as_str().to_owned())
        }
        Some(Ok(Message::Close(None))) => panic!("the server closed without a code"),
        Some(Ok(other)) => panic!("the server answered instead of closing: {other:?}"),
        Some(Err(error)) => panic!("the socket broke without a close frame: {error}"),
        None => panic!("the socket ended without a close frame"),
    }
}

/// The session has no record and is idle.
async fn untouched(served: &Served, key: &str) {
    let (status, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["records"]["total"], 0, "{shown}");
    assert_eq!(shown["session"]["activity"], "idle", "{shown}");
}

fn turn(text: &str) -> Message {
    Message::text(json!({ "type": "turn", "text": text }).to_string())
}

#[actix_rt::test]
async fn a_message_over_the_body_limit_closes_with_1009_and_the_session_is_untouched() {
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        |config| config.body_limit = LIMIT,
    )
    .await;
    let key = served.open().await;
    let reason = format!("the message is larger than the server's limit of {LIMIT} bytes");

    // One frame: refused by its header.
    let mut socket = connect(&served, &key).await;
    let big = turn(&"x".repeat(4 * LIMIT));
    assert_eq!(
        close_after(&mut socket, vec![big]).await,
        (1009, reason.clone())
    );
    untouched(&served, &key).await;

    // Frames each under the limit, a message over it.
    let mut socket = connect(&served, &key).await;
    let text = json!({ "type": "turn", "text": "y".repeat(2 * LIMIT) }).to_string();
    let pieces: Vec<&[u8]> = text.as_bytes().chunks(LIMIT / 2).collect();
    let last = pieces.len() - 1;
    let frames = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let opcode = if i == 0 { Data::Text } else { Data::Continue };
            Message::Frame(Frame::message(
                piece.to_vec(),
                OpCode::Data(opcode),
                i == last,
            ))
        })
        .collect();
    assert_eq!(close_after(&mut socket, frames).await, (1009, reason));
    untouched(&served, &key).await;

    // A turn under the limit still runs, on a new socket.
    let mut socket = connect(&served, &key).await;
    socket.send(turn("hello")).await.unwrap();
    loop {
        let message = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("the turn did not finish")
            .expect("the socket closed")
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let message: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
        assert_ne!(message["type"], "error", "{message}");
        if message["type"] == "done" {
            assert_eq!(message["stopReason"], "completed", "{message}");
            break;
        }
    }
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    assert!(shown["records"]["total"].as_u64().unwrap() > 0, "{shown}");
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_text_frame_that_is_not_utf8_closes_with_1007() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let mut socket = connect(&served, &key).await;
    let bad = Message::Frame(Frame::message(
        vec![b'{', 0xff, 0xfe, b'}'],
        OpCode::Data(Data::Text),
        true,
    ));
    assert_eq!(
        close_after(&mut socket, vec![bad]).await,
        (1007, "a text message must be UTF-8".to_owned())
    );
    untouched(&served, &key).await;
    served.shutdown().await;
}

#[actix_rt::test]
async fn an_auth_message_over_the_body_limit_closes_with_1009_not_4401() {
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        |config| {
            config.body_limit = LIMIT;
            config.token = Some("s3cret".into());
        },
    )
    .await;
    let response = served
        .client
        .post(served.url("/v1/sessions"))
        .bearer_auth("s3cret")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let opened: serde_json::Value = response.json().await.unwrap();
    let key = opened["key"].as_str().unwrap();
    // No header: the first message must carry the token.
    let mut socket = connect(&served, key).await;
    let big = json!({ "type": "auth", "token": "x".repeat(4 * LIMIT) }).to_string();
    let (code, reason) = close_after(&mut socket, vec![Message::text(big)]).await;
    assert_eq!(
        (code, reason.as_str()),
        (
            1009,
            "the message is larger than the server's limit of 1024 bytes"
        )
    );
    // A small wrong token is still refused as unauthorized.
    let mut socket = connect(&served, key).await;
    let wrong = json!({ "type": "auth", "token": "wrong" }).to_string();
    assert_eq!(
        close_after(&mut socket, vec![Message::text(wrong)]).await,
        (4401, "unauthorized".to_owned())
    );
    served.shutdown().await;
}
