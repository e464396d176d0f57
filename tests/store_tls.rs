//! TLS to PostgreSQL (issue 40 item 4): a throwaway cluster serving a certificate signed by a CA
//! the test makes (rcgen), and the store connecting with each `sslmode`: `verify-full` accepts
//! the name the certificate carries and refuses another, `verify-ca` checks only the CA, a CA
//! it was not given is refused, and `require` encrypts without checking. `hookline store
//! migrate` takes the same URL and `--database-ca`.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

use std::path::Path;

use hookline::host::store::{NewSession, SessionStore};
use hookline::messages::session::ApprovalMode;
use hookline::postgres::{migrate_url, PgStore, PgStoreOptions};

/// The name the server's certificate carries.
const NAME: &str = "db.hookline.test";

/// A CA, and a server certificate for [`NAME`] it signed: (CA PEM, chain PEM, key PEM).
fn certificates() -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "hookline test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut server = rcgen::CertificateParams::new(vec![NAME.to_owned()]).unwrap();
    server
        .distinguished_name
        .push(rcgen::DnType::CommonName, NAME);
    let server = server.signed_by(&key, &ca, &ca_key).unwrap();
    (ca.pem(), server.pem(), key.serialize_pem())
}

fn url(port: u16, host: &str, mode: &str) -> String {
    format!("postgres://postgres@{host}:{port}/postgres?hostaddr=127.0.0.1&sslmode={mode}")
}

async fn connect(url: &str, ca: Option<&Path>) -> Result<PgStore, String> {
    let options = PgStoreOptions {
        node: "tls".into(),
        migrate: true,
        ca_file: ca.map(Path::to_path_buf),
        ..PgStoreOptions::default()
    };
    PgStore::connect(url, options)
        .await
        .map_err(|e| e.with_causes())
}

#[tokio::test]
async fn verify_full_accepts_the_certificate_s_name_and_refuses_another() {
    let (ca, chain, key) = certificates();
    let port = pg::tls_cluster(&chain, &key).expect("a TLS cluster");
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca).unwrap();

    // The right name, the right CA: the store connects (over TLS) and writes.
    let store = connect(&url(port, NAME, "verify-full"), Some(&ca_file))
        .await
        .expect("verify-full with the certificate's name");
    let new = NewSession {
        workspace_root: "/w".into(),
        approval_mode: ApprovalMode::AskAboveRead,
        model: None,
        mode: None,
        owner: None,
    };
    store.create(new, &[]).await.unwrap();
    // The CA named in the URL does as well as the option.
    let in_url = format!(
        "{}&sslrootcert={}",
        url(port, NAME, "verify-full"),
        ca_file.display()
    );
    connect(&in_url, None)
        .await
        .expect("sslrootcert in the URL");

    // Another name: refused, saying why.
    let wrong = connect(
        &url(port, "other.hookline.test", "verify-full"),
        Some(&ca_file),
    )
    .await
    .expect_err("verify-full with another name");
    assert!(wrong.contains("certificate"), "{wrong}");
    // verify-ca checks the CA only: the other name passes.
    connect(
        &url(port, "other.hookline.test", "verify-ca"),
        Some(&ca_file),
    )
    .await
    .expect("verify-ca ignores the name");
    // A CA it was not given (the public roots): refused.
    let unknown = connect(&url(port, NAME, "verify-full"), None)
        .await
        .expect_err("an unknown CA");
    assert!(unknown.contains("certificate"), "{unknown}");
    // require encrypts without checking.
    connect(&url(port, "other.hookline.test", "require"), None)
        .await
        .expect("require");

    // `hookline store migrate` takes the same URL and CA.
    assert!(
        migrate_url(&url(port, NAME, "verify-full"), Some(&ca_file))
            .await
            .unwrap()
            .is_empty(),
        "migrated already"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["store", "migrate", "--database-url"])
        .arg(url(port, "other.hookline.test", "verify-full"))
        .arg("--database-ca")
        .arg(&ca_file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["store", "migrate", "--database-url"])
        .arg(url(port, NAME, "verify-full"))
        .arg("--database-ca")
        .arg(&ca_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
