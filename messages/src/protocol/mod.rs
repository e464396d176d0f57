//! The wire types of the external plugin protocol: newline-delimited JSON over a plugin process's
//! stdin (host to plugin) and stdout (plugin to host). Serde types only; the process, the codec and
//! the id matching live in `hookline-host` (`host/src/external/`). `docs/protocol.md` explains the
//! exchange; `docs/protocol/*.json` are JSON Schemas generated from these types.
//!
//! ```
//! use hookline_messages::protocol::{HostMessage, PluginMessage, ReplyBody};
//!
//! let line = r#"{"type":"hello","protocol":1,"hooks":["on_tool_call"]}"#;
//! let PluginMessage::Hello(hello) = serde_json::from_str(line).unwrap() else { panic!() };
//! assert!(hello.is_compatible());
//!
//! let reply: PluginMessage = serde_json::from_str(r#"{"type":"keep","id":7}"#).unwrap();
//! assert_eq!(reply.into_reply(), Some((7, ReplyBody::Keep)));
//! assert_eq!(
//!     serde_json::to_string(&HostMessage::Cancel { id: 7 }).unwrap(),
//!     r#"{"type":"cancel","id":7}"#
//! );
//! ```

mod schema;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approval::{Authority, Risk};
use crate::hook::{HookKind, HookSet};
use crate::session::ApprovalMode;

pub use schema::{schemas, SchemaFile};

/// The protocol version this host speaks. A plugin whose `hello` names another version is refused
/// with a note.
pub const PROTOCOL_VERSION: u32 = 1;

/// A request id, assigned by the host, unique for the life of one plugin process.
pub type RequestId = u64;

/// The first line a plugin writes: its protocol version and what it implements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Hello {
    /// The protocol version the plugin speaks ([`PROTOCOL_VERSION`]).
    pub protocol: u32,
    /// Ordinary hooks it implements, by wire name (`on_tool_call`). Raw hooks here are ignored.
    #[serde(default)]
    #[schemars(schema_with = "schema::hook_names")]
    pub hooks: HookSet,
    /// Raw hooks it implements, by wire name (`rebuild_model`); apart from `hooks` (SPEC R0.1).
    /// Ordinary hooks here are ignored.
    #[serde(default)]
    #[schemars(schema_with = "schema::hook_names")]
    pub raw_hooks: HookSet,
    /// Gateway event keys or family names it subscribes to (`command:new`, `message`). Unknown
    /// keys are kept, with a warning (SPEC G4.1).
    #[serde(default)]
    pub events: Vec<String>,
    /// Tools it contributes; the host runs them through the same hooks as any tool (SPEC P1.3).
    #[serde(default)]
    pub tools: Vec<ToolDecl>,
}

/// A plugin's hello as hookline's own JSON documents show it (`hookline hooks list --json`,
/// `GET /v1/plugins`): the fields of [`Hello`], named in camelCase like every other field there
/// (`rawHooks`). The protocol's wire keeps `raw_hooks`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelloView {
    /// The protocol version the plugin speaks ([`PROTOCOL_VERSION`]).
    pub protocol: u32,
    /// Ordinary hooks it implements, by wire name (`on_tool_call`).
    #[schemars(schema_with = "schema::hook_names")]
    pub hooks: HookSet,
    /// Raw hooks it implements, by wire name (`rebuild_model`); apart from `hooks` (SPEC R0.1).
    #[schemars(schema_with = "schema::hook_names")]
    pub raw_hooks: HookSet,
    /// Gateway event keys or family names it subscribes to (`command:new`, `message`).
    pub events: Vec<String>,
    /// Tools it contributes.
    pub tools: Vec<ToolDecl>,
}

impl From<&Hello> for HelloView {
    fn from(hello: &Hello) -> Self {
        Self {
            protocol: hello.protocol,
            hooks: hello.hooks,
            raw_hooks: hello.raw_hooks,
            events: hello.events.clone(),
            tools: hello.tools.clone(),
        }
    }
}

impl Hello {
    /// A hello for the current protocol that implements nothing yet.
    pub fn new() -> Self {
        Self {
            protocol: PROTOCOL_VERSION,
            hooks: HookSet::empty(),
            raw_hooks: HookSet::empty(),
            events: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// Whether this host speaks the plugin's protocol version.
    pub fn is_compatible(&self) -> bool {
        self.protocol == PROTOCOL_VERSION
    }
}

impl Default for Hello {
    fn default() -> Self {
        Self::new()
    }
}

/// A tool a plugin contributes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ToolDecl {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default)]
    pub description: String,
    /// How risky a call is; the approval policy starts from this.
    #[schemars(schema_with = "schema::risk")]
    pub risk: Risk,
    /// Where a call acts.
    #[schemars(schema_with = "schema::authority")]
    pub authority: Authority,
}

/// One line the host writes to a plugin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostMessage {
    /// Run a hook on a value; answered by a reply with the same id.
    Hook(HookRequest),
    /// Run one of the plugin's tools; answered by `replace` with a [`ToolOutput`], or `error`.
    Tool(ToolRequest),
    /// Deliver a gateway event; answered by `keep`, `replace` (a new context, where the event
    /// allows it) or `error`.
    Event(EventRequest),
    /// The host stopped waiting for request `id` (its timeout passed); any reply to it is dropped.
    Cancel {
        /// The request given up on.
        id: RequestId,
    },
    /// The host is shutting down; stdin closes next. The plugin should exit.
    Goodbye,
}

/// A hook call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct HookRequest {
    /// The request id; the reply carries it back.
    pub id: RequestId,
    /// The hook, by wire name.
    #[schemars(schema_with = "schema::hook_name")]
    pub hook: HookKind,
    /// The session the call belongs to.
    pub session: String,
    /// The hook's value (its JSON shape is the hook's value type in `hookline-messages`).
    pub value: serde_json::Value,
    /// The W3C trace context of the host's span for this request (`00-<trace id>-<span id>-<flags>`),
    /// when the host exports traces: a plugin that starts its own spans under it joins the turn's
    /// trace. Absent otherwise; plugins may ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// A hook call whose value is borrowed: it encodes to exactly the line of [`HostMessage::Hook`]
/// holding the value's JSON, without that JSON being built first (the host encodes each hook
/// call's value once, straight into the request line).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "hook")]
pub struct HookRequestRef<'a, T: ?Sized> {
    /// The request id.
    pub id: RequestId,
    /// The hook.
    pub hook: HookKind,
    /// The session the call belongs to.
    pub session: &'a str,
    /// The hook's value, encoded as its JSON.
    pub value: &'a T,
    /// As [`HookRequest::traceparent`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<&'a str>,
}

/// A tool run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ToolRequest {
    /// The request id.
    pub id: RequestId,
    /// The tool's name, one the plugin declared in its hello.
    pub tool: String,
    /// The call's arguments.
    pub arguments: serde_json::Value,
    /// The session's workspace root.
    pub workspace_root: String,
    /// The session calling the tool (as `session` of a hook request).
    pub session: String,
    /// The session's approval mode at the time of the call (`ask-above-read`, `ask-all`,
    /// `allow-workspace`).
    #[schemars(schema_with = "schema::approval_mode")]
    pub approval_mode: ApprovalMode,
    /// The W3C trace context of the host's span for this request (`00-<trace id>-<span id>-<flags>`),
    /// when the host exports traces: a plugin that starts its own spans under it joins the turn's
    /// trace. Absent otherwise; plugins may ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// What a tool run returns, as the `value` of a `replace` reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ToolOutput {
    /// The result text.
    pub text: String,
    /// Whether the tool succeeded (default true).
    #[serde(default = "yes")]
    pub success: bool,
}

fn yes() -> bool {
    true
}

/// A gateway event delivery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct EventRequest {
    /// The request id.
    pub id: RequestId,
    /// The event key (`command:new`).
    pub key: String,
    /// The event's context, as the producer supplies it (SPEC G5).
    pub context: serde_json::Value,
    /// The W3C trace context of the host's span for this request (`00-<trace id>-<span id>-<flags>`),
    /// when the host exports traces: a plugin that starts its own spans under it joins the turn's
    /// trace. Absent otherwise; plugins may ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// One line a plugin writes to the host: its hello (first, once) or a reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PluginMessage {
    /// The handshake; the first line, exactly once.
    Hello(Hello),
    /// Hand the value on unchanged.
    Keep {
        /// The request answered.
        id: RequestId,
    },
    /// Hand this value on instead, if the hook's rule admits it.
    Replace {
        /// The request answered.
        id: RequestId,
        /// The replacement value.
        value: serde_json::Value,
    },
    /// The hook failed; it is skipped and `message` becomes the note's reason.
    Error {
        /// The request answered.
        id: RequestId,
        /// Why, in English.
        #[serde(default)]
        message: String,
    },
}

/// A reply without its id.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplyBody {
    /// Keep the value.
    Keep,
    /// Replace it with this JSON.
    Replace(serde_json::Value),
    /// The plugin's error message.
    Error(String),
}

impl HostMessage {
    /// The message with `traceparent` as its trace context (hook, tool and event requests; the
    /// others carry none).
    #[must_use]
    pub fn with_traceparent(mut self, traceparent: Option<String>) -> Self {
        match &mut self {
            Self::Hook(HookRequest {
                traceparent: at, ..
            })
            | Self::Tool(ToolRequest {
                traceparent: at, ..
            })
            | Self::Event(EventRequest {
                traceparent: at, ..
            }) => *at = traceparent,
            Self::Cancel { .. } | Self::Goodbye => {}
        }
        self
    }

    /// The message's `type` on the wire (`hook`, `tool`, `event`, `cancel`, `goodbye`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Hook(_) => "hook",
            Self::Tool(_) => "tool",
            Self::Event(_) => "event",
            Self::Cancel { .. } => "cancel",
            Self::Goodbye => "goodbye",
        }
    }
}

impl ReplyBody {
    /// The reply's `type` on the wire (`keep`, `replace`, `error`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Keep => "keep",
            Self::Replace(_) => "replace",
            Self::Error(_) => "error",
        }
    }
}

impl PluginMessage {
    /// The reply's id and body; `None` for a hello.
    pub fn into_reply(self) -> Option<(RequestId, ReplyBody)> {
        match self {
            Self::Hello(_) => None,
            Self::Keep { id } => Some((id, ReplyBody::Keep)),
            Self::Replace { id, value } => Some((id, ReplyBody::Replace(value))),
            Self::Error { id, message } => Some((id, ReplyBody::Error(message))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T>(value: &T) -> T
    where
        T: Serialize + serde::de::DeserializeOwned,
    {
        let json = serde_json::to_string(value).unwrap_or_default();
        match serde_json::from_str(&json) {
            Ok(back) => back,
            Err(error) => panic!("{json} did not round-trip: {error}"),
        }
    }

    #[test]
    fn a_borrowed_hook_request_is_the_same_line_as_an_owned_one() {
        let value = serde_json::json!({"callId": "c", "arguments": {"path": "a.txt"}});
        for traceparent in [
            None,
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        ] {
            let borrowed = HookRequestRef {
                id: 7,
                hook: HookKind::OnToolCall,
                session: "s1",
                value: &value,
                traceparent,
            };
            let owned = HostMessage::Hook(HookRequest {
                id: 7,
                hook: HookKind::OnToolCall,
                session: "s1".into(),
                value: value.clone(),
                traceparent: traceparent.map(str::to_owned),
            });
            let line = serde_json::to_string(&borrowed).unwrap_or_default();
            assert_eq!(line, serde_json::to_string(&owned).unwrap_or_default());
            assert_eq!(serde_json::from_str::<HostMessage>(&line).ok(), Some(owned));
        }
    }

    #[test]
    fn every_host_message_round_trips() {
        let messages = [
            HostMessage::Hook(HookRequest {
                id: 1,
                hook: HookKind::OnToolCall,
                session: "s".into(),
                value: serde_json::json!({"callId": "c"}),
                traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
            }),
            HostMessage::Tool(ToolRequest {
                id: 2,
                tool: "clock".into(),
                arguments: serde_json::json!({}),
                workspace_root: "/w".into(),
                session: "s1".into(),
                approval_mode: ApprovalMode::AskAll,
                traceparent: None,
            }),
            HostMessage::Event(EventRequest {
                id: 3,
                key: "command:new".into(),
                context: serde_json::json!({"agentId": "a"}),
                traceparent: None,
            }),
            HostMessage::Cancel { id: 4 },
            HostMessage::Goodbye,
        ];
        for message in messages {
            assert_eq!(round_trip(&message), message);
        }
    }

    #[test]
    fn every_plugin_message_round_trips() {
        let mut hello = Hello::new();
        hello.hooks = HookSet::of(&[HookKind::OnPrompt]);
        hello.raw_hooks = HookSet::of(&[HookKind::RewritePrompt]);
        hello.events = vec!["command:nwe".into()];
        hello.tools = vec![ToolDecl {
            name: "clock".into(),
            description: "tells the time".into(),
            risk: Risk::Read,
            authority: Authority::Workspace,
        }];
        let messages = [
            PluginMessage::Hello(hello),
            PluginMessage::Keep { id: 1 },
            PluginMessage::Replace {
                id: 2,
                value: serde_json::json!("x"),
            },
            PluginMessage::Error {
                id: 3,
                message: "no".into(),
            },
        ];
        for message in messages {
            assert_eq!(round_trip(&message), message);
        }
    }

    #[test]
    fn with_traceparent_sets_the_field_of_requests_only() {
        let traced = HostMessage::Event(EventRequest {
            id: 9,
            key: "command:new".into(),
            context: serde_json::json!({}),
            traceparent: None,
        })
        .with_traceparent(Some("00-a-b-01".into()));
        let HostMessage::Event(event) = traced else {
            panic!("an event stays an event");
        };
        assert_eq!(event.traceparent.as_deref(), Some("00-a-b-01"));
        let goodbye = HostMessage::Goodbye.with_traceparent(Some("00-a-b-01".into()));
        assert_eq!(goodbye, HostMessage::Goodbye);
    }

    #[test]
    fn a_request_without_trace_context_has_no_traceparent_field() {
        let request = HostMessage::Event(EventRequest {
            id: 9,
            key: "command:new".into(),
            context: serde_json::json!({}),
            traceparent: None,
        });
        let line = serde_json::to_string(&request).unwrap_or_default();
        assert_eq!(
            line,
            r#"{"type":"event","id":9,"key":"command:new","context":{}}"#
        );
    }

    #[test]
    fn hello_with_an_unknown_hook_does_not_decode() {
        let line = r#"{"type":"hello","protocol":1,"hooks":["on_nothing"]}"#;
        assert!(serde_json::from_str::<PluginMessage>(line).is_err());
    }

    #[test]
    fn hello_fields_default_and_unknown_fields_are_ignored() {
        let line = r#"{"type":"hello","protocol":2,"future":true}"#;
        let Ok(PluginMessage::Hello(hello)) = serde_json::from_str(line) else {
            panic!("a minimal hello decodes");
        };
        assert!(!hello.is_compatible());
        assert!(hello.hooks.is_empty() && hello.events.is_empty() && hello.tools.is_empty());
    }
}
