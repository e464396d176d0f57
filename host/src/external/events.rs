//! [`ExternalPlugin`] as a gateway event handler: each event goes to the process as an `event`
//! request (SPEC G). A `replace` answer to `agent:bootstrap` is the new `bootstrapFiles` list
//! (SPEC G5.4); every other event is read-only, so its `replace` changes nothing.

use async_trait::async_trait;
use hookline_actors::events::{EventHandler, EventReply};
use hookline_actors::plugin::{HookError, HookResult};
use hookline_messages::event::{BootstrapFile, Event, EventKey};
use hookline_messages::note::SkipReason;
use hookline_messages::protocol::ReplyBody;
use serde::Deserialize;

use super::{ExternalPlugin, TOOL_TIMEOUT};

/// What a plugin may answer `agent:bootstrap` with: the list itself, or a whole context
/// holding it.
#[derive(Deserialize)]
#[serde(untagged)]
enum BootstrapReplacement {
    List(Vec<BootstrapFile>),
    #[serde(rename_all = "camelCase")]
    Context {
        bootstrap_files: Vec<BootstrapFile>,
    },
}

impl BootstrapReplacement {
    fn into_files(self) -> Vec<BootstrapFile> {
        match self {
            Self::List(files)
            | Self::Context {
                bootstrap_files: files,
            } => files,
        }
    }
}

#[async_trait]
impl EventHandler for ExternalPlugin {
    fn subscriptions(&self) -> Vec<String> {
        self.events().to_vec()
    }

    async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
        let key = event.key();
        // SPEC G2.2: the plugin actor stops waiting for a shutdown handler at the event timeout
        // but does not cancel it; the request itself is bounded by the longer tool timeout.
        let limit = if key.outlives_timeout() {
            TOOL_TIMEOUT
        } else {
            self.event_timeout
        };
        let reply = self
            .deliver_event(key.as_str(), event.context_json(), limit)
            .await
            .map_err(HookError::skip)?;
        event_reply(key, reply)
    }
}

/// A plugin's reply to event `key` (an external or WebAssembly plugin's answer alike): a
/// `replace` answer to `agent:bootstrap` is the new `bootstrapFiles` list (SPEC G5.4); any other
/// `replace` changes nothing.
///
/// # Errors
/// The plugin's error, or [`SkipReason::Undecodable`] for a bootstrap list that is not one.
pub(crate) fn event_reply(key: EventKey, reply: ReplyBody) -> HookResult<EventReply> {
    match reply {
        ReplyBody::Keep => Ok(EventReply::Done),
        ReplyBody::Replace(value) if key == EventKey::AgentBootstrap => {
            serde_json::from_value::<BootstrapReplacement>(value)
                .map(|files| EventReply::ReplaceBootstrapFiles(files.into_files()))
                .map_err(|_| HookError::skip(SkipReason::Undecodable))
        }
        ReplyBody::Replace(_) => Ok(EventReply::Done),
        ReplyBody::Error(message) => Err(HookError::msg(message)),
    }
}
