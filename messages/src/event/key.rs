//! Event keys (SPEC G1.1), their families (G1.2) and custom keys (G4.2).
//!
//! Keys are typed inside the code; strings appear only at the wire ([`EventKey::as_str`],
//! [`EventKey::parse_known`]). Matching is exact and case-sensitive: `COMMAND:NEW`,
//! `command:nwe` and `session:compact` are not keys.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The five families an event key belongs to (SPEC G1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// `command:*`.
    Command,
    /// `session:*`.
    Session,
    /// `agent:*`.
    Agent,
    /// `gateway:*`.
    Gateway,
    /// `message:*`.
    Message,
}

impl Family {
    /// Every family, in the order of SPEC G1.2.
    pub const ALL: [Family; 5] = [
        Family::Command,
        Family::Session,
        Family::Agent,
        Family::Gateway,
        Family::Message,
    ];

    /// The family's wire name (`command`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Command => "command",
            Self::Session => "session",
            Self::Agent => "agent",
            Self::Gateway => "gateway",
            Self::Message => "message",
        }
    }

    /// The family named exactly `name` (case-sensitive), if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|family| family.as_str() == name)
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A key the gateway emits (SPEC G1.1), or a custom key that custom code emits explicitly (G4.2).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum EventKey {
    /// `command:new`.
    CommandNew,
    /// `command:reset`.
    CommandReset,
    /// `command:stop`.
    CommandStop,
    /// `session:auto-reset`.
    SessionAutoReset,
    /// `session:patch`.
    SessionPatch,
    /// `session:compact:before`.
    SessionCompactBefore,
    /// `session:compact:after`.
    SessionCompactAfter,
    /// `agent:bootstrap`.
    AgentBootstrap,
    /// `gateway:startup`.
    GatewayStartup,
    /// `gateway:shutdown`.
    GatewayShutdown,
    /// `gateway:pre-restart`.
    GatewayPreRestart,
    /// `message:received`.
    MessageReceived,
    /// `message:transcribed`.
    MessageTranscribed,
    /// `message:preprocessed`.
    MessagePreprocessed,
    /// `message:sent`.
    MessageSent,
    /// A key the core never emits; it fires only through an explicit custom emit (SPEC G4.2).
    Custom(CustomKey),
}

impl EventKey {
    /// The fifteen keys the gateway emits, in the order of SPEC G1.1.
    pub const KNOWN: [EventKey; 15] = [
        EventKey::CommandNew,
        EventKey::CommandReset,
        EventKey::CommandStop,
        EventKey::SessionAutoReset,
        EventKey::SessionPatch,
        EventKey::SessionCompactBefore,
        EventKey::SessionCompactAfter,
        EventKey::AgentBootstrap,
        EventKey::GatewayStartup,
        EventKey::GatewayShutdown,
        EventKey::GatewayPreRestart,
        EventKey::MessageReceived,
        EventKey::MessageTranscribed,
        EventKey::MessagePreprocessed,
        EventKey::MessageSent,
    ];

    /// The wire string (`command:new`, ...; a custom key as written).
    pub fn as_str(&self) -> &str {
        match self {
            Self::CommandNew => "command:new",
            Self::CommandReset => "command:reset",
            Self::CommandStop => "command:stop",
            Self::SessionAutoReset => "session:auto-reset",
            Self::SessionPatch => "session:patch",
            Self::SessionCompactBefore => "session:compact:before",
            Self::SessionCompactAfter => "session:compact:after",
            Self::AgentBootstrap => "agent:bootstrap",
            Self::GatewayStartup => "gateway:startup",
            Self::GatewayShutdown => "gateway:shutdown",
            Self::GatewayPreRestart => "gateway:pre-restart",
            Self::MessageReceived => "message:received",
            Self::MessageTranscribed => "message:transcribed",
            Self::MessagePreprocessed => "message:preprocessed",
            Self::MessageSent => "message:sent",
            Self::Custom(key) => key.as_str(),
        }
    }

    /// The known key spelled exactly `text` (case-sensitive); `None` for anything else.
    pub fn parse_known(text: &str) -> Option<Self> {
        Self::KNOWN.into_iter().find(|key| key.as_str() == text)
    }

    /// The key's family; `None` for a custom key (SPEC G4.2: family subscribers do not see
    /// custom emits, so a custom key cannot pose as a core event).
    pub fn family(&self) -> Option<Family> {
        let family = match self {
            Self::CommandNew | Self::CommandReset | Self::CommandStop => Family::Command,
            Self::SessionAutoReset
            | Self::SessionPatch
            | Self::SessionCompactBefore
            | Self::SessionCompactAfter => Family::Session,
            Self::AgentBootstrap => Family::Agent,
            Self::GatewayStartup | Self::GatewayShutdown | Self::GatewayPreRestart => {
                Family::Gateway
            }
            Self::MessageReceived
            | Self::MessageTranscribed
            | Self::MessagePreprocessed
            | Self::MessageSent => Family::Message,
            Self::Custom(_) => return None,
        };
        Some(family)
    }

    /// Whether the gateway itself emits this key (every key but a custom one).
    pub fn is_known(&self) -> bool {
        !matches!(self, Self::Custom(_))
    }
}

impl fmt::Display for EventKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<EventKey> for String {
    fn from(key: EventKey) -> Self {
        key.as_str().to_owned()
    }
}

/// A key's schema is what its serde writes: the key as a string (a known key such as
/// `command:new`, or a custom one such as `acme:deployed`, SPEC G4.2).
impl schemars::JsonSchema for EventKey {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EventKey".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A gateway event key: `family:action` (`command:new`, \
                `session:compact:before`) or a custom key (`acme:deployed`).",
            "type": "string"
        })
    }
}

impl TryFrom<String> for EventKey {
    type Error = CustomKeyError;

    /// A known key, else a custom key (which must pass [`CustomKey::new`]).
    fn try_from(text: String) -> Result<Self, Self::Error> {
        match Self::parse_known(&text) {
            Some(key) => Ok(key),
            None => CustomKey::new(text).map(Self::Custom),
        }
    }
}

/// A key custom code emits explicitly (SPEC G4.2), e.g. `acme:deployed`.
///
/// It may not be blank, nor spell a known key, a family, or `session:compact` in any letter case:
/// those would let a custom emit pose as (or be mistaken for) a core event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CustomKey(Arc<str>);

/// Why a string cannot be a custom key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CustomKeyError {
    /// The key is empty or only whitespace.
    #[error("a custom event key cannot be blank")]
    Blank,
    /// The key spells a core key or family name (in some letter case).
    #[error("'{0}' is reserved for the gateway's own events")]
    Reserved(String),
}

impl CustomKey {
    /// The custom key `text`, as written.
    ///
    /// # Errors
    /// [`CustomKeyError`] when `text` is blank or reserved.
    pub fn new(text: impl Into<Arc<str>>) -> Result<Self, CustomKeyError> {
        let text: Arc<str> = text.into();
        if text.trim().is_empty() {
            return Err(CustomKeyError::Blank);
        }
        if is_reserved(&text) {
            return Err(CustomKeyError::Reserved(text.to_string()));
        }
        Ok(Self(text))
    }

    /// The key as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Core keys, family names and `session:compact` (SPEC G1.4), compared ignoring case.
fn is_reserved(text: &str) -> bool {
    let known = EventKey::KNOWN.iter().map(EventKey::as_str);
    let families = Family::ALL.iter().map(|family| family.as_str());
    known
        .chain(families)
        .chain(std::iter::once("session:compact"))
        .any(|reserved| reserved.eq_ignore_ascii_case(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_key_round_trips_through_its_wire_string() {
        for key in EventKey::KNOWN {
            assert_eq!(EventKey::parse_known(key.as_str()), Some(key.clone()));
            let json = serde_json::to_string(&key).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", key.as_str()));
        }
    }

    #[test]
    fn misspelt_or_cased_keys_are_not_known() {
        for text in [
            "COMMAND:NEW",
            "command:nwe",
            "message:recieved",
            "session:compact",
            "startup",
            "",
        ] {
            assert_eq!(EventKey::parse_known(text), None, "{text}");
        }
    }

    #[test]
    fn custom_keys_cannot_pose_as_core_keys() {
        assert!(CustomKey::new("acme:deployed").is_ok());
        for text in [
            "command:new",
            "COMMAND:NEW",
            "Session",
            "session:compact",
            "  ",
        ] {
            assert!(CustomKey::new(text).is_err(), "{text}");
        }
    }
}
