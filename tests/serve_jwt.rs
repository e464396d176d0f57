//! JWT bearer tokens (issue 48, docs/serve.md "Auth"), tried as an attacker would: a token
//! signed with another key, `alg: none`, HS256 with the public key as its secret, expired, not
//! yet valid, the wrong issuer or audience, an unknown key id, a truncated one, one without a
//! tenant: each a 401 with one sentence, never a 5xx. A good one is a principal with the
//! configured claims' tenant and role, `jwt:<sub>`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hookline::host::provider::EchoProvider;
use hookline::server::{JwksSource, JwtAlgorithm, JwtSettings};
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};
use serve_support::{serve, Served};

const ISSUER: &str = "https://idp.example";
const AUDIENCE: &str = "hookline";

struct Signer {
    der: Vec<u8>,
    jwk: Value,
}

fn signer(kid: &str) -> Signer {
    let pair = rcgen::KeyPair::generate().unwrap();
    let point = pair.public_key_raw();
    assert_eq!(point.len(), 65, "an uncompressed P-256 point");
    Signer {
        der: pair.serialize_der(),
        jwk: json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        }),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims() -> Value {
    json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "user-4711",
        "exp": now() + 600, "nbf": now() - 10,
        "tenant": "acme", "role": "client",
    })
}

fn es256(signer: &Signer, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some(kid.into());
    encode(&header, claims, &EncodingKey::from_ec_der(&signer.der)).unwrap()
}

async fn served(signer: &Signer) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({ "keys": [signer.jwk] }).to_string()).unwrap();
    let settings = JwtSettings {
        jwks: JwksSource::File(jwks),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        algorithm: JwtAlgorithm::ES256,
        tenant_claim: "tenant".into(),
        role_claim: "role".into(),
        refetch_floor: hookline::server::REFETCH_FLOOR,
    };
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        move |config| config.jwt = Some(settings),
    )
    .await;
    std::mem::forget(dir);
    served
}

async fn open_with(served: &Served, token: &str) -> (u16, Value) {
    let response = served
        .client
        .post(served.url("/v1/sessions"))
        .header("authorization", format!("Bearer {token}"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

#[actix_rt::test]
async fn a_good_jwt_is_a_principal_and_every_forgery_is_a_401_sentence() {
    let good = signer("a");
    let served = served(&good).await;
    let (status, body) = open_with(&served, &es256(&good, "a", &claims())).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["owner"],
        json!({ "tenant": "acme", "principal": "jwt:user-4711" })
    );
    // A client may not read the metrics.
    let response = served
        .client
        .get(served.url("/metrics"))
        .bearer_auth(es256(&good, "a", &claims()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);

    let other = signer("a");
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut claims = claims();
        edit(&mut claims);
        es256(&good, "a", &claims)
    };
    let header_none = URL_SAFE_NO_PAD.encode(json!({ "alg": "none", "kid": "a" }).to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims().to_string());
    let alg_none = format!("{header_none}.{payload}.");
    let mut hs_header = Header::new(jsonwebtoken::Algorithm::HS256);
    hs_header.kid = Some("a".into());
    let public_as_secret = encode(
        &hs_header,
        &claims(),
        &EncodingKey::from_secret(good.jwk.to_string().as_bytes()),
    )
    .unwrap();
    let valid = es256(&good, "a", &claims());
    let cases: Vec<(&str, String)> = vec![
        ("signed with another key", es256(&other, "a", &claims())),
        ("alg none", alg_none),
        ("HS256 with the public key as secret", public_as_secret),
        ("expired", with(&|c| c["exp"] = json!(now() - 3600))),
        ("not yet valid", with(&|c| c["nbf"] = json!(now() + 3600))),
        (
            "wrong issuer",
            with(&|c| c["iss"] = json!("https://evil.example")),
        ),
        (
            "wrong audience",
            with(&|c| c["aud"] = json!("someone-else")),
        ),
        ("no tenant", with(&|c| c["tenant"] = Value::Null)),
        ("not a role", with(&|c| c["role"] = json!("root"))),
        ("unknown key id", es256(&good, "zz", &claims())),
        ("truncated", valid[..valid.len() - 5].to_owned()),
        ("two dots only", "a.b.c".to_owned()),
    ];
    for (what, token) in cases {
        let (status, body) = open_with(&served, &token).await;
        assert_eq!(status, 401, "{what}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.ends_with('.') && message.matches(". ").count() == 0,
            "{what}: {message}"
        );
    }
    served.shutdown().await;
}
