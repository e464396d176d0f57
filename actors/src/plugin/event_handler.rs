//! The gateway event handler a plugin may register beside its hooks (SPEC G1 to G5): the plugin
//! API's side of events. The bus that delivers them is `crate::events`.

use async_trait::async_trait;
use hookline_messages::event::{BootstrapFile, Event};

use super::HookResult;

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
