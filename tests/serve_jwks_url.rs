//! A JWKS fetched from a URL (issue 48 item 1, docs/serve.md "Auth"), against a tiny JWKS server
//! of the test's own that counts its fetches: the keys are fetched once and kept (no fetch per
//! request), fetched again for an unknown `kid` at most once per refetch floor, a refresh that
//! fails or hangs keeps the last copy (tokens of known keys keep working, unknown ones get a 401
//! sentence, never a 5xx), and a URL that cannot be read at start stops the server with a
//! sentence naming it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hookline::host::gateway::GatewayLimits;
use hookline::host::provider::EchoProvider;
use hookline::host::Host;
use hookline::server::{start, JwksSource, JwtAlgorithm, JwtSettings, ServeConfig};
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};
use serve_support::{serve, Served};

const ISSUER: &str = "https://idp.example";
const AUDIENCE: &str = "hookline";
/// Short, so the test waits little; long enough that two requests in a row fall inside it.
const FLOOR: Duration = Duration::from_secs(1);

struct Signer {
    der: Vec<u8>,
    jwk: Value,
}

fn signer(kid: &str) -> Signer {
    let pair = rcgen::KeyPair::generate().unwrap();
    let point = pair.public_key_raw();
    Signer {
        der: pair.serialize_der(),
        jwk: json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        }),
    }
}

fn token(signer: &Signer, kid: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "user-1", "exp": now + 600,
        "tenant": "acme", "role": "client",
    });
    let mut header = Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some(kid.into());
    encode(&header, &claims, &EncodingKey::from_ec_der(&signer.der)).unwrap()
}

/// How the JWKS server answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Serve,
    Fail,
    Hang,
}

/// The identity provider's JWKS endpoint.
struct Idp {
    keys: Mutex<Vec<Value>>,
    mode: Mutex<Mode>,
    fetches: AtomicUsize,
}

async fn jwks(State(idp): State<Arc<Idp>>) -> Response {
    idp.fetches.fetch_add(1, Ordering::SeqCst);
    let mode = *idp.mode.lock().unwrap();
    match mode {
        Mode::Serve => {
            let keys = idp.keys.lock().unwrap().clone();
            axum::Json(json!({ "keys": keys })).into_response()
        }
        Mode::Fail => (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response(),
        Mode::Hang => {
            // Longer than the server's fetch wait (5 s): it gives up first.
            tokio::time::sleep(Duration::from_secs(30)).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
    }
}

/// Serves `/jwks.json` on loopback; the URL and the endpoint's state.
async fn idp(keys: Vec<Value>) -> (String, Arc<Idp>) {
    let idp = Arc::new(Idp {
        keys: Mutex::new(keys),
        mode: Mutex::new(Mode::Serve),
        fetches: AtomicUsize::new(0),
    });
    let app = axum::Router::new()
        .route("/jwks.json", axum::routing::get(jwks))
        .route("/broken.json", axum::routing::get(|| async { "not json" }))
        .with_state(idp.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/jwks.json"), idp)
}

fn settings(url: String) -> JwtSettings {
    JwtSettings {
        jwks: JwksSource::Url(url),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        algorithm: JwtAlgorithm::ES256,
        tenant_claim: "tenant".into(),
        role_claim: "role".into(),
        refetch_floor: FLOOR,
    }
}

/// `GET /v1/sessions` with `token`: the status and the error message, if any.
async fn list(served: &Served, token: &str) -> (u16, String) {
    let response = served
        .client
        .get(served.url("/v1/sessions"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or_default();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    (status, message.to_owned())
}

#[actix_rt::test]
async fn the_jwks_is_kept_refetched_for_an_unknown_kid_at_most_once_a_floor_and_survives_failures()
{
    let (a, b) = (signer("a"), signer("b"));
    let (url, idp) = idp(vec![a.jwk.clone()]).await;
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        |config| config.jwt = Some(settings(url)),
    )
    .await;
    let started = Instant::now();
    assert_eq!(
        idp.fetches.load(Ordering::SeqCst),
        1,
        "fetched once at start"
    );

    // Kept: many requests, no fetch.
    let kept = token(&a, "a");
    for _ in 0..20 {
        assert_eq!(list(&served, &kept).await.0, 200);
    }
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 1, "a fetch per request");

    // Rotation: the provider adds `b`; a token naming it fetches again once the floor passed.
    idp.keys.lock().unwrap().push(b.jwk.clone());
    tokio::time::sleep(FLOOR.saturating_sub(started.elapsed())).await;
    assert_eq!(list(&served, &token(&b, "b")).await.0, 200);
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 2, "refetched for `b`");
    assert_eq!(list(&served, &token(&b, "b")).await.0, 200);

    // Within the floor an unknown kid fetches nothing: a flood of made-up kids is one fetch.
    for _ in 0..5 {
        let (status, message) = list(&served, &token(&b, "zz")).await;
        assert_eq!(status, 401);
        assert_eq!(
            message,
            "The credential is refused: no key of the JWKS has the token's key id."
        );
    }
    assert_eq!(
        idp.fetches.load(Ordering::SeqCst),
        2,
        "fetched within the floor"
    );

    // A failing refresh keeps the last copy: known keys work, the unknown one is a 401 sentence.
    *idp.mode.lock().unwrap() = Mode::Fail;
    tokio::time::sleep(FLOOR).await;
    let (status, message) = list(&served, &token(&b, "zz")).await;
    assert_eq!(
        (status, message.as_str()),
        (
            401,
            "The credential is refused: no key of the JWKS has the token's key id."
        )
    );
    assert_eq!(
        idp.fetches.load(Ordering::SeqCst),
        3,
        "the refresh was tried"
    );
    assert_eq!(list(&served, &token(&a, "a")).await.0, 200);

    // A hanging refresh holds up only the request that asked for it (bounded by the fetch
    // wait); tokens of known keys are answered meanwhile.
    *idp.mode.lock().unwrap() = Mode::Hang;
    tokio::time::sleep(FLOOR).await;
    let waiting = {
        let (client, url, unknown) = (
            served.client.clone(),
            served.url("/v1/sessions"),
            token(&b, "yy"),
        );
        tokio::spawn(async move {
            let asked = Instant::now();
            let response = client.get(url).bearer_auth(unknown).send().await.unwrap();
            (response.status().as_u16(), asked.elapsed())
        })
    };
    while idp.fetches.load(Ordering::SeqCst) < 4 {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for _ in 0..10 {
        let asked = Instant::now();
        assert_eq!(list(&served, &token(&a, "a")).await.0, 200);
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "a known key waited {:?} for a refresh",
            asked.elapsed()
        );
    }
    let (status, waited) = waiting.await.unwrap();
    assert_eq!(status, 401, "a hanging JWKS is no 5xx");
    assert!(
        waited < Duration::from_secs(10),
        "the refresh waited {waited:?}"
    );

    // The provider withdraws `a`: once the JWKS is fetched again, a token of `a` that verified
    // before (and was kept) is refused.
    *idp.mode.lock().unwrap() = Mode::Serve;
    idp.keys.lock().unwrap().retain(|jwk| jwk["kid"] != "a");
    assert_eq!(list(&served, &kept).await.0, 200, "kept before the fetch");
    tokio::time::sleep(FLOOR).await;
    assert_eq!(list(&served, &token(&b, "xx")).await.0, 401);
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 5, "refetched for `xx`");
    let (status, message) = list(&served, &kept).await;
    assert_eq!(
        (status, message.as_str()),
        (
            401,
            "The credential is refused: no key of the JWKS has the token's key id."
        )
    );
    assert_eq!(list(&served, &token(&b, "b")).await.0, 200);
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_jwks_url_that_cannot_be_read_at_start_stops_the_server_with_a_sentence() {
    let (url, idp) = idp(vec![]).await;
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let broken = url.replace("jwks.json", "broken.json");
    *idp.mode.lock().unwrap() = Mode::Fail;
    let cases = [
        (
            format!("http://127.0.0.1:{port}/jwks.json"),
            "cannot fetch the JWKS",
        ),
        (url.clone(), "500"),
        (broken, "the JWKS is not a JWK set"),
    ];
    for (url, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let gateway = Host::builder()
            .provider(Arc::new(EchoProvider::new()))
            .workspace(dir.path())
            .spaces_root(dir.path())
            .start_gateway(GatewayLimits::default())
            .unwrap();
        let mut config = ServeConfig::new(dir.path());
        config.jwt = Some(settings(url.clone()));
        let Err(error) = start(gateway.clone(), config).await else {
            panic!("served with an unreadable JWKS at {url}");
        };
        let error = error.to_string();
        assert!(error.contains(expected), "{url}: {error}");
        assert!(
            error.contains(&url) || expected.starts_with("the JWKS"),
            "{error}"
        );
        let _ = gateway.shutdown("test", None).await;
    }
}
