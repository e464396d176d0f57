//! Gateway internal hook events (SPEC G1 to G5) on the actor layer: the [`EventBus`] that
//! delivers each event to its subscribers through their plugin actors. The [`EventHandler`] trait a
//! plugin implements is part of the plugin API (`crate::plugin`), re-exported here.
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

pub use crate::plugin::{EventHandler, EventReply};

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
