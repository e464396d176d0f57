//! How a node reaches the database (issue 40 item 4): the URL, and TLS with rustls (no OpenSSL).
//!
//! `sslmode` is read from the URL as libpq names its values; tokio-postgres knows only the first
//! three, so the two that verify are taken out of the URL here and carried out by the rustls
//! configuration:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (the default) | when the server offers it | not checked |
//! | `require` | always | not checked |
//! | `verify-ca` | always | signed by the CA |
//! | `verify-full` | always | signed by the CA and naming the host |
//!
//! The CA is the PEM file `sslrootcert=` in the URL or [`PgStoreOptions::ca_file`] names (the
//! option wins), else the public web roots. The name checked is the URL's `host` (a `hostaddr`
//! may give the address to connect to).
//!
//! [`PgStoreOptions::ca_file`]: crate::PgStoreOptions::ca_file

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use hookline_host::store::StoreError;

/// libpq's `sslmode` values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, unverified (libpq's default).
    #[default]
    Prefer,
    /// TLS always, unverified.
    Require,
    /// TLS always; the certificate must be signed by the CA.
    VerifyCa,
    /// TLS always; the certificate must be signed by the CA and name the host.
    VerifyFull,
}

impl TlsMode {
    fn parse(value: &str) -> Result<Self, StoreError> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(StoreError::db(
                    "parse the database URL",
                    Refused(format!(
                        "sslmode {other:?} is not one of disable, prefer, require, verify-ca, \
                         verify-full"
                    )),
                ))
            }
        })
    }

    fn driver_mode(self) -> SslMode {
        match self {
            Self::Disable => SslMode::Disable,
            Self::Prefer => SslMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => SslMode::Require,
        }
    }
}

/// Why a URL or a CA file was refused, in words.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// A database to connect to: the driver's configuration and the TLS connector for it.
#[derive(Clone)]
pub struct Target {
    /// The driver's configuration (host, user, database, `sslmode` as the driver knows it).
    pub config: tokio_postgres::Config,
    /// The TLS connector (used unless `sslmode=disable`).
    pub tls: MakeRustlsConnect,
    /// The mode asked for.
    pub mode: TlsMode,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("mode", &self.mode).finish()
    }
}

/// Reads `url` (a libpq URL or key=value string) and builds its TLS connector; `ca_file`
/// overrides the URL's `sslrootcert`.
///
/// # Errors
/// [`StoreError::Database`] when the URL does not parse, `sslmode` is not a libpq value, or the
/// CA file cannot be read or holds no certificate.
pub fn target(url: &str, ca_file: Option<&Path>) -> Result<Target, StoreError> {
    let (rest, tls) = take_tls_params(url);
    let mode = tls
        .mode
        .as_deref()
        .map_or(Ok(TlsMode::Prefer), TlsMode::parse)?;
    let mut config: tokio_postgres::Config = rest
        .parse()
        .map_err(|e| StoreError::db("parse the database URL", e))?;
    config.ssl_mode(mode.driver_mode());
    let ca = ca_file.map(Path::to_path_buf).or(tls.root_cert);
    let tls = MakeRustlsConnect::new(client_config(mode, ca.as_deref())?);
    Ok(Target { config, tls, mode })
}

/// The TLS parameters taken out of a URL, and what is left of it.
#[derive(Default)]
struct TlsParams {
    mode: Option<String>,
    root_cert: Option<PathBuf>,
}

/// Takes `sslmode` and `sslrootcert` out of a URL's query or a key=value string.
fn take_tls_params(url: &str) -> (String, TlsParams) {
    let mut params = TlsParams::default();
    let mut take = |key: &str, value: String| match key {
        "sslmode" => {
            params.mode = Some(value);
            true
        }
        "sslrootcert" => {
            params.root_cert = Some(PathBuf::from(value));
            true
        }
        _ => false,
    };
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return (url.to_owned(), params);
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                !take(key, percent_decode(value))
            })
            .collect();
        let rest = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (rest, params);
    }
    let kept: Vec<&str> = url
        .split_whitespace()
        .filter(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            !take(key.trim(), value.trim_matches('\'').to_owned())
        })
        .collect();
    (kept.join(" "), params)
}

/// `%XX` escapes decoded (a path in a URL's query); anything malformed is kept as written.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| {
            std::str::from_utf8(h)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        });
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls configuration `mode` asks for, trusting `ca` (or the public roots).
fn client_config(mode: TlsMode, ca: Option<&Path>) -> Result<ClientConfig, StoreError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::db("set up TLS", e))?;
    let config = match mode {
        TlsMode::Disable | TlsMode::Prefer | TlsMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(provider())))
            .with_no_client_auth(),
        TlsMode::VerifyCa | TlsMode::VerifyFull => {
            let verifier =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots(ca)?), provider())
                    .build()
                    .map_err(|e| StoreError::db("set up TLS", e))?;
            let verifier: Arc<dyn ServerCertVerifier> = if mode == TlsMode::VerifyCa {
                Arc::new(AnyName(verifier))
            } else {
                verifier
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
    };
    Ok(config)
}

/// The certificates of the PEM file `ca`, or the public web roots.
fn roots(ca: Option<&Path>) -> Result<RootCertStore, StoreError> {
    let mut roots = RootCertStore::empty();
    let Some(ca) = ca else {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        return Ok(roots);
    };
    let read = |e: &dyn std::fmt::Display| {
        StoreError::db(
            "read the CA file",
            Refused(format!("{}: {e}", ca.display())),
        )
    };
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| read(&e))? {
        roots
            .add(cert.map_err(|e| read(&e))?)
            .map_err(|e| read(&e))?;
    }
    if roots.is_empty() {
        return Err(read(&"it holds no certificate"));
    }
    Ok(roots)
}

/// `prefer` and `require`: the connection is encrypted, the server is not authenticated (as
/// libpq does without a root certificate). The handshake's signatures are still checked.
#[derive(Debug)]
struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to the CA; the name is not checked.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tls_parameters_are_taken_out_of_a_url_and_the_rest_is_kept() {
        let (rest, tls) = take_tls_params(
            "postgres://u@h:5/db?sslmode=verify-full&application_name=x&sslrootcert=%2Fetc%2Fca.pem",
        );
        assert_eq!(rest, "postgres://u@h:5/db?application_name=x");
        assert_eq!(tls.mode.as_deref(), Some("verify-full"));
        assert_eq!(tls.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        let (rest, tls) = take_tls_params("host=h sslmode=require user=u sslrootcert='/ca.pem'");
        assert_eq!(rest, "host=h user=u");
        assert_eq!(tls.mode.as_deref(), Some("require"));
        assert_eq!(tls.root_cert, Some(PathBuf::from("/ca.pem")));
        let (rest, tls) = take_tls_params("postgres://u@h/db?sslmode=disable");
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(tls.mode.as_deref(), Some("disable"));
    }

    #[test]
    fn an_unknown_sslmode_or_a_missing_ca_file_is_refused_with_a_sentence() {
        let err = target("postgres://u@h/db?sslmode=verify", None).unwrap_err();
        assert!(
            err.to_string().contains("\"verify\" is not one of"),
            "{err}"
        );
        let err = target(
            "postgres://u@h/db?sslmode=verify-full",
            Some(Path::new("/nonexistent/ca.pem")),
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            let target = target(&format!("postgres://u@h/db?sslmode={mode}"), None).unwrap();
            assert_eq!(target.mode, TlsMode::parse(mode).unwrap());
        }
    }
}
