//! Gateway internal hook events (SPEC G): typed keys and families, subscriptions and their
//! dispatch order, one context type per event, and how long each event's producer waits.
//!
//! Everything here is data and pure rules; the event bus (in `hookline-actors`) delivers events
//! and the host's producers build the contexts.
//!
//! ```
//! use hookline_messages::event::{
//!     dispatch_order, parse_subscriptions, subscribed_to, EventKey, Subscription,
//! };
//!
//! let loaded = [
//!     parse_subscriptions(&["command:new"]),
//!     parse_subscriptions(&["command", "command:new"]),
//!     parse_subscriptions(&["session:compact"]),
//! ];
//! // SPEC G1.3: family subscribers first, then exact ones, each in load order.
//! assert_eq!(dispatch_order(&loaded, &EventKey::CommandNew), [1, 0, 1]);
//! // SPEC G1.4: `session:compact` matches nothing.
//! assert!(dispatch_order(&loaded, &EventKey::SessionCompactBefore).is_empty());
//! assert!(subscribed_to(&loaded, &EventKey::CommandNew));
//! assert!(!subscribed_to(&loaded, &EventKey::SessionCompactBefore));
//! assert!(!Subscription::parse("session:compact").is_known());
//! ```

mod bootstrap;
mod command;
mod entry;
mod gateway;
mod key;
mod media;
mod message;
mod session;
mod subscription;

pub use bootstrap::{
    finalize_bootstrap_files, AgentBootstrapContext, BootstrapFile, BootstrapPolicy,
};
pub use command::{CommandContext, CommandStopContext};
pub use entry::{CommandSource, Config, SessionEntry};
pub use gateway::{GatewayStartupContext, GatewayStopContext};
pub use key::{CustomKey, CustomKeyError, EventKey, Family};
pub use media::{InboundMedia, MediaFact, MediaView};
pub use message::{
    received_content, MessagePreprocessedContext, MessageReceivedContext, MessageSentContext,
    MessageStage, MessageTranscribedContext, ReceivedMetadata,
};
pub use session::{
    AutoResetContext, CompactAfterContext, CompactBeforeContext, ResetReason, SessionPatch,
    SessionPatchContext,
};
pub use subscription::{
    dispatch_order, parse_subscriptions, subscribed_to, unknown_subscriptions, Subscription,
};

use serde::{Deserialize, Serialize};

/// One event with its context.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)] // One variant per key; each is documented on its context type.
#[allow(clippy::large_enum_variant)] // Moved once per emit, then shared behind an `Arc`.
pub enum Event {
    CommandNew(CommandContext),
    CommandReset(CommandContext),
    CommandStop(CommandStopContext),
    SessionAutoReset(AutoResetContext),
    SessionPatch(SessionPatchContext),
    SessionCompactBefore(CompactBeforeContext),
    SessionCompactAfter(CompactAfterContext),
    AgentBootstrap(AgentBootstrapContext),
    GatewayStartup(GatewayStartupContext),
    GatewayShutdown(GatewayStopContext),
    GatewayPreRestart(GatewayStopContext),
    MessageReceived(MessageReceivedContext),
    MessageTranscribed(MessageTranscribedContext),
    MessagePreprocessed(MessagePreprocessedContext),
    MessageSent(MessageSentContext),
    /// A custom event, emitted explicitly by custom code (SPEC G4.2).
    Custom {
        /// Its key.
        key: CustomKey,
        /// Whatever the emitter passes.
        context: serde_json::Value,
    },
}

impl Event {
    /// The event's key.
    pub fn key(&self) -> EventKey {
        match self {
            Self::CommandNew(_) => EventKey::CommandNew,
            Self::CommandReset(_) => EventKey::CommandReset,
            Self::CommandStop(_) => EventKey::CommandStop,
            Self::SessionAutoReset(_) => EventKey::SessionAutoReset,
            Self::SessionPatch(_) => EventKey::SessionPatch,
            Self::SessionCompactBefore(_) => EventKey::SessionCompactBefore,
            Self::SessionCompactAfter(_) => EventKey::SessionCompactAfter,
            Self::AgentBootstrap(_) => EventKey::AgentBootstrap,
            Self::GatewayStartup(_) => EventKey::GatewayStartup,
            Self::GatewayShutdown(_) => EventKey::GatewayShutdown,
            Self::GatewayPreRestart(_) => EventKey::GatewayPreRestart,
            Self::MessageReceived(_) => EventKey::MessageReceived,
            Self::MessageTranscribed(_) => EventKey::MessageTranscribed,
            Self::MessagePreprocessed(_) => EventKey::MessagePreprocessed,
            Self::MessageSent(_) => EventKey::MessageSent,
            Self::Custom { key, .. } => EventKey::Custom(key.clone()),
        }
    }

    /// The context as wire JSON (camelCase; unknown optional values absent).
    pub fn context_json(&self) -> serde_json::Value {
        let json = match self {
            Self::CommandNew(cx) | Self::CommandReset(cx) => serde_json::to_value(cx),
            Self::CommandStop(cx) => serde_json::to_value(cx),
            Self::SessionAutoReset(cx) => serde_json::to_value(cx),
            Self::SessionPatch(cx) => serde_json::to_value(cx),
            Self::SessionCompactBefore(cx) => serde_json::to_value(cx),
            Self::SessionCompactAfter(cx) => serde_json::to_value(cx),
            Self::AgentBootstrap(cx) => serde_json::to_value(cx),
            Self::GatewayStartup(cx) => serde_json::to_value(cx),
            Self::GatewayShutdown(cx) | Self::GatewayPreRestart(cx) => serde_json::to_value(cx),
            Self::MessageReceived(cx) => serde_json::to_value(cx),
            Self::MessageTranscribed(cx) => serde_json::to_value(cx),
            Self::MessagePreprocessed(cx) => serde_json::to_value(cx),
            Self::MessageSent(cx) => serde_json::to_value(cx),
            Self::Custom { context, .. } => Ok(context.clone()),
        };
        // These types hold only strings, numbers, bools and JSON values: serializing cannot fail.
        json.unwrap_or(serde_json::Value::Null)
    }

    /// The event a [`WireEvent`] holds (`hookline replay` emits an archived event again, issue
    /// 34).
    ///
    /// # Errors
    /// When the context is not the one the key's producer supplies.
    pub fn from_wire(wire: WireEvent) -> Result<Self, serde_json::Error> {
        use serde_json::from_value as ctx;
        let context = wire.context;
        Ok(match wire.key {
            EventKey::CommandNew => Self::CommandNew(ctx(context)?),
            EventKey::CommandReset => Self::CommandReset(ctx(context)?),
            EventKey::CommandStop => Self::CommandStop(ctx(context)?),
            EventKey::SessionAutoReset => Self::SessionAutoReset(ctx(context)?),
            EventKey::SessionPatch => Self::SessionPatch(ctx(context)?),
            EventKey::SessionCompactBefore => Self::SessionCompactBefore(ctx(context)?),
            EventKey::SessionCompactAfter => Self::SessionCompactAfter(ctx(context)?),
            EventKey::AgentBootstrap => Self::AgentBootstrap(ctx(context)?),
            EventKey::GatewayStartup => Self::GatewayStartup(ctx(context)?),
            EventKey::GatewayShutdown => Self::GatewayShutdown(ctx(context)?),
            EventKey::GatewayPreRestart => Self::GatewayPreRestart(ctx(context)?),
            EventKey::MessageReceived => Self::MessageReceived(ctx(context)?),
            EventKey::MessageTranscribed => Self::MessageTranscribed(ctx(context)?),
            EventKey::MessagePreprocessed => Self::MessagePreprocessed(ctx(context)?),
            EventKey::MessageSent => Self::MessageSent(ctx(context)?),
            EventKey::Custom(key) => Self::Custom { key, context },
        })
    }

    /// The event as it goes over the wire to an external plugin.
    pub fn to_wire(&self) -> WireEvent {
        WireEvent {
            key: self.key(),
            context: self.context_json(),
        }
    }
}

/// An event on the wire: `{"key": "command:new", "context": {...}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireEvent {
    /// The event key.
    pub key: EventKey,
    /// The context.
    pub context: serde_json::Value,
}

/// How an event's producer waits for its handlers (SPEC G3.1; documented in `docs/events.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wait {
    /// The producer awaits every handler, in order (each bounded by its timeout).
    Awaited,
    /// Queued without blocking the producer; a full queue drops the event with a note.
    Queued,
    /// Started in the background; the producer does not wait.
    Detached,
    /// Delivered by the gateway lifecycle actor, which bounds the caller's wait (SPEC G2).
    Lifecycle,
}

impl EventKey {
    /// How this key's producer waits. Message events and `session:patch` never block message
    /// handling (SPEC G3.1); `session:auto-reset` runs detached; custom emits are awaited.
    pub fn wait(&self) -> Wait {
        match self {
            Self::CommandNew
            | Self::CommandReset
            | Self::CommandStop
            | Self::SessionCompactBefore
            | Self::SessionCompactAfter
            | Self::AgentBootstrap
            | Self::Custom(_) => Wait::Awaited,
            Self::SessionPatch
            | Self::MessageReceived
            | Self::MessageTranscribed
            | Self::MessagePreprocessed
            | Self::MessageSent => Wait::Queued,
            Self::SessionAutoReset => Wait::Detached,
            Self::GatewayStartup | Self::GatewayShutdown | Self::GatewayPreRestart => {
                Wait::Lifecycle
            }
        }
    }

    /// Whether a handler that exceeds its timeout is left running rather than cancelled: true
    /// for `gateway:shutdown` and `gateway:pre-restart`, whose timeout bounds only the wait
    /// (SPEC G2.2).
    pub fn outlives_timeout(&self) -> bool {
        matches!(self, Self::GatewayShutdown | Self::GatewayPreRestart)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_comes_back_from_its_wire_form_and_a_wrong_context_is_refused() {
        let stop = Event::CommandStop(CommandStopContext {
            session_id: Some("s1".into()),
            ..CommandStopContext::default()
        });
        let key = CustomKey::new("acme:deployed");
        assert!(key.is_ok());
        let events = key.into_iter().map(|key| Event::Custom {
            key,
            context: serde_json::json!({"v": 1}),
        });
        for event in events.chain([stop]) {
            let json = serde_json::to_string(&event.to_wire()).unwrap_or_default();
            let wire: Result<WireEvent, _> = serde_json::from_str(&json);
            let back = wire.ok().and_then(|wire| Event::from_wire(wire).ok());
            assert_eq!(back, Some(event));
        }
        let wrong = WireEvent {
            key: EventKey::CommandNew,
            context: serde_json::json!({"agentId": 3}),
        };
        assert!(Event::from_wire(wrong).is_err());
    }
}
