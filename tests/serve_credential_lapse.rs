//! Long streams do not outlive their credential (issue 48, docs/serve.md "Auth"): the event feed
//! (SSE) sends a last `event: unauthorized` and ends, and a session's WebSocket closes with 1008
//! (policy violation) and the reason, when the JWT they were opened with passes its `exp`, and
//! within the 2 s promised for revocation when their API key is revoked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures::StreamExt as _;
use hookline::host::provider::EchoProvider;
use hookline::host::store::{ApiKeyRecord, ApiKeyTable, FileApiKeys, Role};
use hookline::server::{JwksSource, JwtAlgorithm, JwtSettings, KeyTable, REFETCH_FLOOR};
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::json;
use serve_support::{now_ms, serve, Served, SseReader, DEADLINE};
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::Message;

const ISSUER: &str = "https://idp.example";
const AUDIENCE: &str = "hookline";

struct Setup {
    served: Served,
    table: Arc<FileApiKeys>,
    /// A JWT of an `acme` client, already past its `exp` by 2 s: still taken within the 5 s
    /// leeway the checks allow (refused once `exp < now - 5` in whole seconds), so it lapses 3
    /// to 4 s from now.
    jwt: String,
    /// When the JWT stops being taken (ms since the epoch).
    jwt_until_ms: u64,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let pair = rcgen::KeyPair::generate().unwrap();
    let point = pair.public_key_raw();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "kid": "a", "use": "sig", "alg": "ES256",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..]),
    });
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({ "keys": [jwk] }).to_string()).unwrap();
    let exp = now_ms() / 1000 - 2;
    let claims = json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "user-1", "exp": exp,
        "tenant": "acme", "role": "client",
    });
    let mut header = Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("a".into());
    let jwt = encode(
        &header,
        &claims,
        &EncodingKey::from_ec_der(&pair.serialize_der()),
    )
    .unwrap();
    let table = Arc::new(FileApiKeys::new(dir.path()));
    let shared: Arc<dyn ApiKeyTable> = table.clone();
    let settings = JwtSettings {
        jwks: JwksSource::File(jwks),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        algorithm: JwtAlgorithm::ES256,
        tenant_claim: "tenant".into(),
        role_claim: "role".into(),
        refetch_floor: REFETCH_FLOOR,
    };
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        move |config| {
            config.jwt = Some(settings);
            config.keys = Some(KeyTable(shared));
        },
    )
    .await;
    // The JWKS and the key table live as long as the test.
    std::mem::forget(dir);
    Setup {
        served,
        table,
        jwt,
        jwt_until_ms: (exp + 6) * 1000,
    }
}

/// The event feed, open.
async fn feed(served: &Served, credential: &str) -> SseReader {
    let response = served
        .client
        .get(served.url("/v1/events"))
        .bearer_auth(credential)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    SseReader::new(response)
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The session's WebSocket, open with the credential in the upgrade's header.
async fn socket(served: &Served, session: &str, credential: &str) -> Socket {
    let mut request = served
        .ws(&format!("/v1/sessions/{session}/ws"))
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {credential}").parse().unwrap(),
    );
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

/// Reads the feed to its end: the reason of its last `unauthorized` event.
async fn feed_end(mut feed: SseReader) -> String {
    let data = feed.until("unauthorized").await;
    assert!(feed.next().await.is_none(), "the feed went on after it");
    data["reason"].as_str().unwrap().to_owned()
}

/// Reads the socket to its close frame: its code and reason.
async fn socket_end(mut socket: Socket) -> (u16, String) {
    loop {
        let read = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("the socket was never closed");
        match read {
            Some(Ok(Message::Close(Some(frame)))) => {
                return (frame.code.into(), frame.reason.to_string())
            }
            Some(Ok(Message::Close(None))) | None => panic!("closed without a frame"),
            Some(Ok(_)) => {}
            Some(Err(error)) => panic!("the socket failed: {error}"),
        }
    }
}

#[actix_rt::test]
async fn a_feed_and_a_socket_end_when_their_jwt_expires() {
    let setup = setup().await;
    let served = &setup.served;
    let session = served.open_as(&setup.jwt).await;
    let feed = feed(served, &setup.jwt).await;
    let socket = socket(served, &session, &setup.jwt).await;
    let (reason, (code, why)) = tokio::join!(feed_end(feed), socket_end(socket));
    let ended_ms = now_ms();
    assert_eq!(reason, "the JWT has expired");
    assert_eq!((code, why.as_str()), (1008, "the JWT has expired"));
    assert!(
        ended_ms >= setup.jwt_until_ms,
        "ended {} ms before the token's end",
        setup.jwt_until_ms - ended_ms
    );
    assert!(
        ended_ms < setup.jwt_until_ms + 2000,
        "ended {} ms after the token's end",
        ended_ms - setup.jwt_until_ms
    );
    // The token is refused from now on.
    let response = served
        .client
        .get(served.url("/v1/sessions"))
        .bearer_auth(&setup.jwt)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    setup.served.shutdown().await;
}

#[actix_rt::test]
async fn a_feed_and_a_socket_end_within_two_seconds_of_their_key_being_revoked() {
    let setup = setup().await;
    let served = &setup.served;
    let (key, record) = ApiKeyRecord::create("acme", Role::Client, None, None, now_ms()).unwrap();
    setup.table.insert(&record).await.unwrap();
    // The server reads the table every second: wait (bounded) until it takes the new key.
    let asked = Instant::now();
    loop {
        let response = served
            .client
            .get(served.url("/v1/sessions"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            break;
        }
        assert!(asked.elapsed() < DEADLINE, "the key was never taken");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let session = served.open_as(&key).await;
    let mut feed = feed(served, &key).await;
    let socket = socket(served, &session, &key).await;
    // Both are live: a turn's events reach the feed.
    let response = served
        .client
        .post(served.url(&format!("/v1/sessions/{session}/turns")))
        .bearer_auth(&key)
        .json(&json!({ "text": "hello" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    feed.until("turn-finished").await;

    assert!(setup.table.revoke(&record.id, now_ms()).await.unwrap());
    let revoked = Instant::now();
    let (reason, (code, why)) = tokio::join!(feed_end(feed), socket_end(socket));
    let took = revoked.elapsed();
    assert_eq!(reason, "the key was revoked");
    assert_eq!((code, why.as_str()), (1008, "the key was revoked"));
    assert!(
        took < Duration::from_secs(2),
        "ended {took:?} after the revocation"
    );
    setup.served.shutdown().await;
}
