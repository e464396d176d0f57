//! Gateway internal hook events (SPEC G1 to G5) on the actor layer: the [`EventHandler`] trait a
//! plugin implements, and the [`EventBus`] that delivers each event to its subscribers.
//!
//! Delivery order (SPEC G1.3): the family's subscribers, then the exact key's, each group in load
//! order, one call after another; a plugin subscribed to both is called twice. Each call runs in
//! the plugin's own actor under its event timeout and a panic guard: a handler that errors,
//! panics or times out is skipped with a note and the next one runs.
//!
//! How long a producer waits is the event key's [`Wait`](hookline_messages::event::Wait) rule;
//! `docs/events.md` writes it down.

mod bus;
mod deliver;
mod invoke;
mod log;

pub use bus::{Emitted, EventBus, EventBusConfig, EventError, Subscribed};
pub use deliver::Delivery;
pub use invoke::{EventCall, InvokeEvent};

use async_trait::async_trait;
use hookline_messages::event::{BootstrapFile, Event};

use crate::plugin::HookResult;

/// What an event handler returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventReply {
    /// Nothing to hand on.
    Done,
    /// For `agent:bootstrap`: the list the next handler (and then the host) sees instead
    /// (SPEC G5.4). Ignored for every other event, whose context is read-only.
    ReplaceBootstrapFiles(Vec<BootstrapFile>),
}

/// A plugin's in-process gateway event handler (register it with
/// [`PluginRegistration::with_events`](crate::plugin::PluginRegistration::with_events)).
///
/// ```
/// # use async_trait::async_trait;
/// use hookline_actors::events::{EventHandler, EventReply};
/// use hookline_actors::plugin::HookResult;
/// use hookline_messages::event::Event;
///
/// struct Audit;
///
/// #[async_trait]
/// impl EventHandler for Audit {
///     fn subscriptions(&self) -> Vec<String> {
///         vec!["command".into(), "session:compact:after".into()]
///     }
///     async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
///         println!("{}", event.key());
///         Ok(EventReply::Done)
///     }
/// }
/// ```
#[async_trait]
pub trait EventHandler: Send + Sync + 'static {
    /// The keys or family names this handler subscribes to, as written (SPEC G1.2). Read once,
    /// at registration. Unknown strings stay registered and are warned about (SPEC G4.1).
    fn subscriptions(&self) -> Vec<String>;

    /// Handles one event. An error skips this call with a note; the next handler still runs.
    async fn on_event(&self, event: &Event) -> HookResult<EventReply>;
}

use actix::Addr;
use hookline_messages::note::Note;

use crate::plugin::{PluginActor, PluginRegistration};

/// The plugins with an event handler, in load order, as the bus delivers to them.
pub(crate) fn subscribers(
    actors: &[(PluginRegistration, Addr<PluginActor>)],
) -> Vec<deliver::Subscriber> {
    actors
        .iter()
        .filter(|(plugin, _)| plugin.events.is_some())
        .map(|(plugin, addr)| deliver::Subscriber {
            name: plugin.name.clone(),
            addr: addr.clone(),
            subscriptions: plugin.subscriptions.clone(),
        })
        .collect()
}

/// One load warning per unknown subscription, in load order (SPEC G4.1).
pub(crate) fn unknown_subscription_notes(
    actors: &[(PluginRegistration, Addr<PluginActor>)],
) -> impl Iterator<Item = Note> + '_ {
    actors.iter().flat_map(|(plugin, _)| {
        hookline_messages::event::unknown_subscriptions(&plugin.subscriptions)
            .into_iter()
            .map(|key| Note::UnknownSubscription {
                plugin: plugin.name.to_string(),
                key: key.as_str().to_owned(),
            })
    })
}
