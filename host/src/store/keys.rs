//! Idempotency keys stored with a session (issue 22 item 3): what a request with an
//! `Idempotency-Key` header claimed, and the answer it got, so the same request sent again is
//! answered from the store instead of running twice, on any node that resumes the session.
//!
//! Both backends keep the same entries ([`SessionStore::claim_key`](super::SessionStore::claim_key),
//! [`SessionStore::settle_key`](super::SessionStore::settle_key)): the file store as one small
//! file per key under `sessions/<id>/keys/`, PostgreSQL as rows of `hookline_idempotency_keys`.
//! An entry expires `ttl` after it was claimed and a session keeps at most `max_keys` entries:
//! past it the oldest finished ones are forgotten.
//!
//! ```
//! use hookline_host::store::IdempotencyKey;
//!
//! assert!(IdempotencyKey::parse("8e03978e-40d5-43e8-bc93-6894a57f9324").is_ok());
//! // The IETF draft's form is a structured-field string: the quotes are not part of the key.
//! assert_eq!(IdempotencyKey::parse("\"abc\"").unwrap().as_str(), "abc");
//! assert!(IdempotencyKey::parse("").is_err());
//! assert!(IdempotencyKey::parse(&"k".repeat(256)).is_err());
//! ```

use serde::{Deserialize, Serialize};

/// The longest key, in bytes (Stripe's bound).
pub const MAX_KEY_BYTES: usize = 255;

/// A valid idempotency key: 1 to [`MAX_KEY_BYTES`] printable ASCII characters.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IdempotencyKey(String);

/// Why a header value is not a key; renders as the end of an English sentence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadKey {
    /// Nothing (or only quotes).
    #[error("it is empty")]
    Empty,
    /// Longer than [`MAX_KEY_BYTES`].
    #[error("it is {0} bytes long, over the limit of {MAX_KEY_BYTES}")]
    TooLong(usize),
    /// A character outside printable ASCII, or a quote or backslash that does not fit the
    /// structured-field string form.
    #[error("it holds a character that is not printable ASCII or a stray quote or backslash")]
    BadCharacter,
}

impl IdempotencyKey {
    /// The key a header value carries: as sent (Stripe's form), or a structured-field string
    /// (`"..."` with `\"` and `\\` escapes, the IETF draft's form) without its quotes.
    ///
    /// # Errors
    /// [`BadKey`] for an empty or too long key, or one with characters a header key cannot
    /// have.
    pub fn parse(value: &str) -> Result<Self, BadKey> {
        let key = match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            Some(quoted) => unescape(quoted)?,
            None if value.contains(['"', '\\']) => return Err(BadKey::BadCharacter),
            None => value.to_owned(),
        };
        if key.is_empty() {
            return Err(BadKey::Empty);
        }
        if key.len() > MAX_KEY_BYTES {
            return Err(BadKey::TooLong(key.len()));
        }
        if !key.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
            return Err(BadKey::BadCharacter);
        }
        Ok(Self(key))
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The inside of a structured-field string (RFC 8941 3.3.3): `\"` and `\\` are the only escapes.
fn unescape(quoted: &str) -> Result<String, BadKey> {
    let mut out = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('"' | '\\')) => out.push(escaped),
                _ => return Err(BadKey::BadCharacter),
            },
            '"' => return Err(BadKey::BadCharacter),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// What a request claims: its key, the digest of what it asks, and who runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyClaim {
    /// The key.
    pub key: IdempotencyKey,
    /// A digest of the request (route and body), compared on every later use of the key.
    pub digest: String,
    /// Who runs the request: unique per request, so a claim can tell its own process's
    /// requests from a dead one's.
    pub owner: String,
    /// Now, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// How long an entry lasts after its claim, in milliseconds.
    pub ttl_ms: u64,
    /// The most entries the session keeps.
    pub max_keys: usize,
}

impl KeyClaim {
    /// Whether an entry claimed at `created_ms` has expired by this claim's time.
    pub fn expired(&self, created_ms: u64) -> bool {
        created_ms.saturating_add(self.ttl_ms) <= self.now_ms
    }
}

/// The answer a finished request got: its HTTP status and JSON body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyOutcome {
    /// The HTTP status.
    pub status: u16,
    /// The JSON answer.
    pub body: serde_json::Value,
}

/// Where a keyed request is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum KeyState {
    /// Claimed by `owner` and not finished (or its process died before it finished).
    Running {
        /// The claim's owner.
        owner: String,
    },
    /// Finished with this answer.
    Done {
        /// The answer.
        outcome: KeyOutcome,
    },
}

/// One stored key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyEntry {
    /// The key.
    pub key: IdempotencyKey,
    /// The digest of the request that claimed it.
    pub digest: String,
    /// When it was claimed, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Running or done.
    #[serde(flatten)]
    pub state: KeyState,
}

/// What a claim found.
#[derive(Clone, Debug, PartialEq)]
pub enum Claimed {
    /// The key was free (never used, forgotten, or expired): it is now the caller's, running.
    New,
    /// The key is taken, by this entry (which may hold another digest).
    Existing(KeyEntry),
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_printable_ascii_of_one_to_255_bytes_bare_or_quoted() {
        assert_eq!(IdempotencyKey::parse("a b").unwrap().as_str(), "a b");
        assert_eq!(
            IdempotencyKey::parse(r#""say \"hi\" \\ bye""#)
                .unwrap()
                .as_str(),
            r#"say "hi" \ bye"#
        );
        assert!(IdempotencyKey::parse(&"k".repeat(MAX_KEY_BYTES)).is_ok());
        assert_eq!(
            IdempotencyKey::parse(&"k".repeat(MAX_KEY_BYTES + 1)),
            Err(BadKey::TooLong(256))
        );
        assert_eq!(IdempotencyKey::parse("\"\""), Err(BadKey::Empty));
        for bad in [
            "clé",
            "tab\there",
            "a\"b",
            "back\\slash",
            "\"a\"b\"",
            r#""a\x""#,
        ] {
            assert_eq!(
                IdempotencyKey::parse(bad),
                Err(BadKey::BadCharacter),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_entry_expires_at_its_claim_time_plus_the_ttl() {
        let claim = KeyClaim {
            key: IdempotencyKey::parse("k").unwrap(),
            digest: "d".into(),
            owner: "o".into(),
            now_ms: 2_000,
            ttl_ms: 1_000,
            max_keys: 1,
        };
        assert!(!claim.expired(1_001));
        assert!(claim.expired(1_000));
        // A TTL past the end of time never expires anything.
        let forever = KeyClaim {
            ttl_ms: u64::MAX,
            ..claim
        };
        assert!(!forever.expired(0));
    }

    #[test]
    fn entries_round_trip_as_json() {
        let entry = KeyEntry {
            key: IdempotencyKey::parse("k").unwrap(),
            digest: "d".into(),
            created_ms: 5,
            state: KeyState::Done {
                outcome: KeyOutcome {
                    status: 200,
                    body: serde_json::json!({"stopReason": "completed"}),
                },
            },
        };
        let json = serde_json::to_value(&entry).unwrap();
        assert_eq!(json["state"], "done");
        assert_eq!(json["createdMs"], 5);
        assert_eq!(serde_json::from_value::<KeyEntry>(json).unwrap(), entry);
    }
}
