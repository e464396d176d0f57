//! JWT bearer tokens (issue 48, docs/serve.md "Auth"): checked with `jsonwebtoken` (pure-Rust
//! crypto) against a JWKS read from a file or fetched from a URL and kept. The algorithm is the
//! configuration's, never the token's (a token naming another, `none` among them, or HS256
//! signed with a public key as its secret, is refused); issuer, audience, expiry and not-before
//! are checked; the tenant and the role come from configured claims, the principal's id is
//! `jwt:<sub>`. A token naming a key id the copy does not have fetches the JWKS again, once per
//! request and at most once every [`JwtSettings::refetch_floor`] (default [`REFETCH_FLOOR`]; one
//! fetch at a time, so a flood of made-up key ids costs the identity provider one request per
//! floor). A fetch that fails keeps the last copy; one that fails at start stops the server.
//! A token that verified is kept (by its SHA-256) until its `exp`, so a client repeating its
//! token pays the signature check once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};

use super::{now_ms, Credential, Principal};
use crate::ApiError;
use hookline_host::store::{valid_tenant, Role};
use sha2::{Digest as _, Sha256};

/// The least time between two fetches of the JWKS, unless configured.
pub const REFETCH_FLOOR: Duration = Duration::from_secs(10);

/// The clock skew allowed on `exp` and `nbf`, in seconds.
const LEEWAY_SECS: u64 = 5;

/// How long a fetch of the JWKS may take.
const FETCH_WAIT: Duration = Duration::from_secs(5);

/// The largest JWKS read.
const MAX_JWKS: usize = 64 * 1024;

/// Where the JWKS is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JwksSource {
    /// A file, read again on an unknown key id.
    File(PathBuf),
    /// A URL (`https://issuer/.well-known/jwks.json`), fetched again on an unknown key id.
    Url(String),
}

/// How JWTs are checked (`[jwt]` in the config file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtSettings {
    /// The keys.
    pub jwks: JwksSource,
    /// The `iss` a token must have.
    pub issuer: String,
    /// The `aud` a token must have.
    pub audience: String,
    /// The one algorithm tokens are signed with (`RS256`, `ES256`, `EdDSA`, ...).
    pub algorithm: Algorithm,
    /// The claim holding the tenant.
    pub tenant_claim: String,
    /// The claim holding the role (`client`, `operator`, `admin`).
    pub role_claim: String,
    /// The least time between two fetches of the JWKS ([`REFETCH_FLOOR`] by default).
    pub refetch_floor: Duration,
}

/// The most verified tokens kept (the map is emptied past it).
const MAX_VERIFIED: usize = 4096;

/// The server's JWT checker.
pub(crate) struct JwtVerifier {
    settings: JwtSettings,
    keys: RwLock<Arc<JwkSet>>,
    /// Tokens verified already, by their SHA-256, with the principal each names: a signature
    /// check costs more than a whole echo turn (docs/performance.md, "Auth's cost"), and a
    /// client sends the same token with every request until it expires. A kept token is taken
    /// until its `exp` (checked on each use); a fetch of the JWKS empties the map, so a key
    /// the provider withdrew stops its tokens at once.
    verified: RwLock<HashMap<[u8; 32], Principal>>,
    /// When the JWKS was last fetched; held during a fetch (one at a time).
    fetched: tokio::sync::Mutex<Instant>,
    client: reqwest::Client,
}

fn refused(why: impl Into<String>) -> ApiError {
    ApiError::BadCredentials(why.into())
}

impl JwtVerifier {
    /// Reads the JWKS once.
    ///
    /// # Errors
    /// Why the JWKS cannot be read (a server never starts without its keys).
    pub(crate) async fn start(settings: JwtSettings) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(FETCH_WAIT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let keys = fetch(&client, &settings.jwks).await?;
        Ok(Self {
            settings,
            keys: RwLock::new(Arc::new(keys)),
            verified: RwLock::new(HashMap::new()),
            fetched: tokio::sync::Mutex::new(Instant::now()),
            client,
        })
    }

    fn find(&self, kid: &str) -> Option<Jwk> {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        keys.find(kid).cloned()
    }

    /// Fetches the JWKS again for `kid`, unless another request just did or the floor has not
    /// passed.
    async fn refetch_for(&self, kid: &str) {
        let mut fetched = self.fetched.lock().await;
        if self.find(kid).is_some() || fetched.elapsed() < self.settings.refetch_floor {
            return;
        }
        *fetched = Instant::now();
        match fetch(&self.client, &self.settings.jwks).await {
            Ok(keys) => {
                *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(keys);
                self.verified
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
            }
            Err(error) => tracing::warn!(%error, "cannot fetch the JWKS; keeping the last copy"),
        }
    }

    /// The principal `token` names, or why it names none: from the verified tokens while it
    /// has not expired, else checked in full (and kept when good).
    pub(crate) async fn principal(&self, token: &str) -> Result<Principal, ApiError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let kept = self
            .verified
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&digest)
            .cloned();
        if let Some(principal) = kept {
            if let Credential::Jwt { until_ms } = principal.credential {
                if now_ms() < until_ms {
                    return Ok(principal);
                }
            }
        }
        let principal = self.verify(token).await?;
        let mut verified = self
            .verified
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if verified.len() >= MAX_VERIFIED {
            verified.clear();
        }
        verified.insert(digest, principal.clone());
        Ok(principal)
    }

    /// Checks `token` in full: its key, signature, algorithm and claims.
    async fn verify(&self, token: &str) -> Result<Principal, ApiError> {
        let header = decode_header(token).map_err(|_| refused("the token is not a JWT"))?;
        let kid = header
            .kid
            .ok_or_else(|| refused("the token names no key id (kid)"))?;
        let jwk = match self.find(&kid) {
            Some(jwk) => jwk,
            None => {
                self.refetch_for(&kid).await;
                self.find(&kid)
                    .ok_or_else(|| refused("no key of the JWKS has the token's key id"))?
            }
        };
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| refused("the JWKS key is unusable"))?;
        let mut validation = Validation::new(self.settings.algorithm);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        let data = decode::<serde_json::Value>(token, &key, &validation)
            .map_err(|e| refused(format!("the JWT does not verify ({})", reason(&e))))?;
        let claims = data.claims;
        let claim = |name: &str| claims.get(name).and_then(serde_json::Value::as_str);
        let tenant = claim(&self.settings.tenant_claim)
            .filter(|t| valid_tenant(t))
            .ok_or_else(|| {
                refused(format!(
                    "the JWT has no usable '{}' claim",
                    self.settings.tenant_claim
                ))
            })?;
        let role: Role = claim(&self.settings.role_claim)
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| {
                refused(format!(
                    "the JWT's '{}' claim is not a role",
                    self.settings.role_claim
                ))
            })?;
        let subject = claim("sub").unwrap_or_default();
        // `exp` is required and checked above (refused once `exp < now - leeway`, in whole
        // seconds); a stream ends when that check would fail.
        let exp = claims
            .get("exp")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        Ok(Principal {
            tenant: tenant.into(),
            id: format!("jwt:{subject}").into(),
            role,
            credential: Credential::Jwt {
                until_ms: exp.saturating_add(LEEWAY_SECS + 1).saturating_mul(1000),
            },
        })
    }
}

/// Why a token did not verify, in a few words.
fn reason(error: &jsonwebtoken::errors::Error) -> &'static str {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => "it has expired",
        ErrorKind::ImmatureSignature => "it is not valid yet",
        ErrorKind::InvalidIssuer => "wrong issuer",
        ErrorKind::InvalidAudience => "wrong audience",
        ErrorKind::InvalidAlgorithm => "wrong algorithm",
        ErrorKind::InvalidSignature => "bad signature",
        ErrorKind::MissingRequiredClaim(_) => "a required claim is missing",
        _ => "malformed",
    }
}

/// Reads the JWKS `settings` name once, as a server starting on them will: a check a command
/// can make before it starts anything else.
///
/// # Errors
/// Why the JWKS cannot be read (a sentence naming the file or the URL).
pub(crate) async fn check_jwks(settings: &JwtSettings) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .timeout(FETCH_WAIT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    fetch(&client, &settings.jwks).await.map(|_| ())
}

async fn fetch(client: &reqwest::Client, source: &JwksSource) -> Result<JwkSet, String> {
    let bytes = match source {
        JwksSource::File(path) => tokio::fs::read(path)
            .await
            .map_err(|e| format!("cannot read the JWKS {}: {e}", path.display()))?,
        JwksSource::Url(url) => {
            let response = client
                .get(url)
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .map_err(|e| format!("cannot fetch the JWKS {url}: {e}"))?;
            if response
                .content_length()
                .is_some_and(|n| n > MAX_JWKS as u64)
            {
                return Err(format!("the JWKS at {url} is larger than {MAX_JWKS} bytes"));
            }
            response
                .bytes()
                .await
                .map_err(|e| format!("cannot fetch the JWKS {url}: {e}"))?
                .to_vec()
        }
    };
    if bytes.len() > MAX_JWKS {
        return Err(format!("the JWKS is larger than {MAX_JWKS} bytes"));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("the JWKS is not a JWK set: {e}"))
}
