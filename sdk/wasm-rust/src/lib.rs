//! Write hookline WebAssembly plugins in Rust: the core-module guest ABI, version 1
//! (`docs/wasm.md` in the hookline repository), for the `wasm32-unknown-unknown` target.
//!
//! A plugin crate (`crate-type = ["cdylib"]`) writes a hello and a handler, and
//! [`export_plugin!`] exports `hookline_abi`, `hookline_alloc`, `hookline_hello` and
//! `hookline_call` for them when built for wasm32 (`memory` is exported by rustc):
//!
//! ```
//! use hookline_wasm_guest::{export_plugin, Hello, Kind, Reply, Request};
//!
//! fn hello() -> Hello {
//!     Hello::default().hook("on_prompt")
//! }
//!
//! fn handle(request: &Request) -> Result<Reply, String> {
//!     if request.kind == Kind::Hook && request.name == "on_prompt" {
//!         let mut prompt = request.value.clone();
//!         let appended = prompt.get_mut("appended").and_then(|a| a.as_array_mut());
//!         match appended {
//!             Some(parts) => parts.push("Be brief.".into()),
//!             None => prompt["appended"] = serde_json::json!(["Be brief."]),
//!         }
//!         return Ok(Reply::Replace(prompt));
//!     }
//!     Ok(Reply::Keep)
//! }
//!
//! export_plugin!(hello, handle);
//! # fn main() {
//! #     let request = br#"{"type":"hook","id":1,"hook":"on_prompt","session":"s",
//! #         "value":{"mode":"work","text":"t"}}"#;
//! #     let reply = hookline_wasm_guest::answer(request, handle);
//! #     assert!(reply.contains(r#""appended":["Be brief."]"#), "{reply}");
//! # }
//! ```
//!
//! Everything but the exports ([`Request`], [`Reply`], [`Hello`], [`answer`], [`hello_json`])
//! builds and is tested on any target, so a plugin's handler can be unit-tested with `cargo test`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The ABI version this crate speaks (`hookline_abi`).
pub const ABI: i32 = 1;

/// A tool the plugin provides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tool {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// `read`, `write`, `execute` or `critical`.
    pub risk: String,
    /// `workspace` or `host`.
    pub authority: String,
}

impl Tool {
    /// A `read` tool acting on the workspace.
    pub fn read(name: &str, description: &str) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            risk: "read".into(),
            authority: "workspace".into(),
        }
    }
}

/// The plugin's hello (written with `"type": "hello"` and `"protocol": 1`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Hello {
    /// Hook wire names (`on_prompt`, `on_tool_call`, ...).
    pub hooks: Vec<String>,
    /// Raw hook names (`rewrite_prompt`, ...).
    pub raw_hooks: Vec<String>,
    /// Gateway event keys or families.
    pub events: Vec<String>,
    /// The tools.
    pub tools: Vec<Tool>,
}

impl Hello {
    /// With one more hook.
    #[must_use]
    pub fn hook(mut self, name: &str) -> Self {
        self.hooks.push(name.into());
        self
    }

    /// With one more raw hook.
    #[must_use]
    pub fn raw_hook(mut self, name: &str) -> Self {
        self.raw_hooks.push(name.into());
        self
    }

    /// With one more event subscription.
    #[must_use]
    pub fn event(mut self, key: &str) -> Self {
        self.events.push(key.into());
        self
    }

    /// With one more tool.
    #[must_use]
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }
}

/// The kind of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A hook call: `name` is the hook, `value` its value.
    Hook,
    /// A tool call: `name` is the tool, `value` its arguments.
    Tool,
    /// A gateway event: `name` is its key, `value` its context.
    Event,
}

/// One request, decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Hook, tool or event.
    pub kind: Kind,
    /// The request's id (put in the reply by [`answer`]).
    pub id: u64,
    /// The hook's wire name, the tool's name or the event's key.
    pub name: String,
    /// The hook's value, the tool's arguments or the event's context (shapes:
    /// `docs/protocol/host-message.json`).
    pub value: Value,
    /// Hooks and tools: the session id.
    pub session: Option<String>,
    /// Tools: the workspace root at the time of the call.
    pub workspace_root: Option<String>,
    /// Tools: the session's approval mode at the time of the call.
    pub approval_mode: Option<String>,
    /// The W3C trace context of the host's span, when it exports traces.
    pub traceparent: Option<String>,
}

/// What a handler answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Keep the value.
    Keep,
    /// The replacement (a tool answers `{"text": ..., "success": true}`: [`Reply::tool`]).
    Replace(Value),
    /// Skip the hook with this message as its note.
    Error(String),
}

impl Reply {
    /// A tool's result.
    pub fn tool(text: impl Into<String>, success: bool) -> Self {
        Self::Replace(serde_json::json!({ "text": text.into(), "success": success }))
    }
}

#[derive(Deserialize)]
struct Wire {
    #[serde(rename = "type")]
    kind: String,
    id: u64,
    hook: Option<String>,
    tool: Option<String>,
    key: Option<String>,
    session: Option<String>,
    workspace_root: Option<String>,
    approval_mode: Option<String>,
    traceparent: Option<String>,
    value: Option<Value>,
    arguments: Option<Value>,
    context: Option<Value>,
}

#[derive(Deserialize)]
struct IdOnly {
    id: u64,
}

/// Why a request could not be decoded, with its id when it has one (else 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRequest {
    /// The request's id, or 0.
    pub id: u64,
    /// What is wrong, in English.
    pub message: String,
}

impl Request {
    /// Decodes a request (a protocol `hook`, `tool` or `event` message).
    ///
    /// # Errors
    /// [`BadRequest`] when it is not JSON or not one of those messages.
    pub fn decode(raw: &[u8]) -> Result<Self, BadRequest> {
        let bad = |message: String| BadRequest {
            id: serde_json::from_slice::<IdOnly>(raw).map_or(0, |only| only.id),
            message,
        };
        let wire: Wire = serde_json::from_slice(raw)
            .map_err(|e| bad(format!("the request is not a protocol request: {e}")))?;
        let (kind, name, value) = match wire.kind.as_str() {
            "hook" => (Kind::Hook, wire.hook, wire.value),
            "tool" => (Kind::Tool, wire.tool, wire.arguments),
            "event" => (Kind::Event, wire.key, wire.context),
            other => {
                return Err(bad(format!(
                    "a request of type '{other}' is not for a guest"
                )))
            }
        };
        let (Some(name), Some(value)) = (name, value) else {
            return Err(bad("the request is not a protocol request".into()));
        };
        if kind != Kind::Event && wire.session.is_none() {
            return Err(bad("the request has no session".into()));
        }
        Ok(Self {
            kind,
            id: wire.id,
            name,
            value,
            session: wire.session,
            workspace_root: wire.workspace_root,
            approval_mode: wire.approval_mode,
            traceparent: wire.traceparent,
        })
    }
}

/// The reply JSON for request `id`.
pub fn encode(id: u64, reply: &Reply) -> String {
    let json = match reply {
        Reply::Keep => serde_json::json!({ "type": "keep", "id": id }),
        Reply::Replace(value) => serde_json::json!({ "type": "replace", "id": id, "value": value }),
        Reply::Error(message) => {
            serde_json::json!({ "type": "error", "id": id, "message": message })
        }
    };
    json.to_string()
}

/// The hello JSON.
pub fn hello_json(hello: &Hello) -> String {
    serde_json::json!({
        "type": "hello",
        "protocol": 1,
        "hooks": hello.hooks,
        "raw_hooks": hello.raw_hooks,
        "events": hello.events,
        "tools": hello.tools,
    })
    .to_string()
}

/// Answers one request with `handle`: decodes it, calls the handler, encodes the reply. A
/// request that does not decode, and a handler's `Err`, are `error` replies.
pub fn answer(raw: &[u8], handle: impl FnOnce(&Request) -> Result<Reply, String>) -> String {
    match Request::decode(raw) {
        Ok(request) => {
            let reply = handle(&request).unwrap_or_else(Reply::Error);
            encode(request.id, &reply)
        }
        Err(bad) => encode(bad.id, &Reply::Error(bad.message)),
    }
}

/// `ptr << 32 | len`, as the ABI returns guest memory.
pub fn pack(bytes: &[u8]) -> i64 {
    // Guest pointers and lengths are 32-bit on wasm32; the casts keep their bits.
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    let packed =
        ((bytes.as_ptr() as usize as u64) << 32 | (bytes.len() as u64 & 0xFFFF_FFFF)) as i64;
    packed
}

/// The guest's buffers: the request being received and the last reply (valid until the guest is
/// next entered, as the ABI says). Used by [`export_plugin!`].
#[doc(hidden)]
pub mod state {
    use std::sync::Mutex;

    /// The request buffer and the reply.
    pub static BUFFERS: Mutex<(Vec<u8>, String)> = Mutex::new((Vec::new(), String::new()));
}

/// Exports the ABI for a hello function (`fn() -> Hello`) and a handler
/// (`fn(&Request) -> Result<Reply, String>`). The functions are compiled on every target (so a
/// host build type-checks them and tests can call them), and exported under their ABI names on
/// wasm32 only.
#[macro_export]
macro_rules! export_plugin {
    ($hello:path, $handle:path) => {
        /// The guest ABI's exports (docs/wasm.md), made by `export_plugin!`.
        #[allow(
            dead_code,
            clippy::cast_possible_truncation,
            clippy::cast_possible_wrap
        )]
        pub mod hookline_exports {
            #[allow(unused_imports)]
            use super::*;
            use $crate::state::BUFFERS;

            /// The ABI version: 1.
            #[cfg_attr(target_arch = "wasm32", unsafe(no_mangle))]
            pub extern "C" fn hookline_abi() -> i32 {
                $crate::ABI
            }

            /// Room for the next request (the request buffer, emptied), or 0.
            #[cfg_attr(target_arch = "wasm32", unsafe(no_mangle))]
            pub extern "C" fn hookline_alloc(len: i32) -> i32 {
                let Ok(len) = usize::try_from(len) else {
                    return 0;
                };
                let mut buffers = BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
                buffers.0.clear();
                if buffers.0.try_reserve_exact(len).is_err() {
                    return 0;
                }
                buffers.0.resize(len, 0);
                buffers.0.as_mut_ptr() as usize as i32
            }

            /// The hello JSON, packed.
            #[cfg_attr(target_arch = "wasm32", unsafe(no_mangle))]
            pub extern "C" fn hookline_hello() -> i64 {
                let mut buffers = BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
                buffers.1 = $crate::hello_json(&$hello());
                $crate::pack(buffers.1.as_bytes())
            }

            /// Answers the request in the request buffer; the reply JSON, packed.
            #[cfg_attr(target_arch = "wasm32", unsafe(no_mangle))]
            pub extern "C" fn hookline_call(ptr: i32, len: i32) -> i64 {
                let mut buffers = BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
                let (request, reply) = &mut *buffers;
                // The host wrote the request where hookline_alloc pointed it: our buffer.
                let ours = request.as_ptr() as usize as i32 == ptr && request.len() as i32 == len;
                *reply = if ours {
                    $crate::answer(request, $handle)
                } else {
                    let bad = "the request is not where hookline_alloc put it";
                    $crate::encode(0, &$crate::Reply::Error(bad.into()))
                };
                $crate::pack(reply.as_bytes())
            }

            /// The last reply (for tests on the host target, where a packed pointer is cut short).
            pub fn last_reply() -> String {
                BUFFERS.lock().unwrap_or_else(|e| e.into_inner()).1.clone()
            }

            /// Writes `bytes` where `hookline_alloc` pointed (for tests on the host target).
            pub fn write_request(bytes: &[u8]) {
                let mut buffers = BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
                buffers.0.copy_from_slice(bytes);
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(request: &Request) -> Result<Reply, String> {
        match (request.kind, request.name.as_str()) {
            (Kind::Hook, "on_user_message") => {
                let mut value = request.value.clone();
                let text = value["text"].as_str().ok_or("no text")?.to_owned();
                value["text"] = format!("{text} [kit]").into();
                Ok(Reply::Replace(value))
            }
            (Kind::Tool, "kit_fail") => Err("kit_fail always fails".into()),
            (Kind::Tool, _) => Ok(Reply::tool(
                format!(
                    "{} from {}",
                    request.value["text"].as_str().unwrap_or_default(),
                    request.session.as_deref().unwrap_or_default()
                ),
                true,
            )),
            _ => Ok(Reply::Keep),
        }
    }

    fn json(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_hello_is_a_protocol_hello() {
        let hello = Hello::default()
            .hook("on_prompt")
            .raw_hook("rewrite_prompt")
            .event("command:new")
            .tool(Tool::read("kit_echo", "Echoes."));
        assert_eq!(
            json(&hello_json(&hello)),
            serde_json::json!({"type": "hello", "protocol": 1, "hooks": ["on_prompt"],
                "raw_hooks": ["rewrite_prompt"], "events": ["command:new"],
                "tools": [{"name": "kit_echo", "description": "Echoes.", "risk": "read",
                    "authority": "workspace"}]})
        );
    }

    #[test]
    fn a_hook_a_tool_and_an_event_get_their_replies_with_their_ids() {
        let text = "say \"hi\" \\ \n\t\u{1} \u{e9} \u{1f600}";
        let request = serde_json::json!({"type": "hook", "id": u64::MAX, "hook": "on_user_message",
            "session": "s1", "value": {"text": text, "sideQuestion": false}});
        assert_eq!(
            json(&answer(request.to_string().as_bytes(), handle)),
            serde_json::json!({"type": "replace", "id": u64::MAX,
                "value": {"text": format!("{text} [kit]"), "sideQuestion": false}})
        );
        let tool = br#"{"type":"tool","id":8,"tool":"kit_echo","arguments":{"text":"hi"},
            "workspace_root":"/w","session":"s1","approval_mode":"ask-all"}"#;
        assert_eq!(
            json(&answer(tool, handle)),
            serde_json::json!({"type": "replace", "id": 8,
                "value": {"text": "hi from s1", "success": true}})
        );
        let fail = br#"{"type":"tool","id":9,"tool":"kit_fail","arguments":{},"session":"s1"}"#;
        assert_eq!(
            json(&answer(fail, handle)),
            serde_json::json!({"type": "error", "id": 9, "message": "kit_fail always fails"})
        );
        let event =
            br#"{"type":"event","id":10,"key":"command:new","context":{},"traceparent":null}"#;
        assert_eq!(
            json(&answer(event, handle)),
            serde_json::json!({"type": "keep", "id": 10})
        );
    }

    #[test]
    fn a_bad_request_is_an_error_reply_under_its_id_when_it_has_one() {
        for (raw, id) in [
            (&b"not json"[..], 0),
            (b"", 0),
            (br#"{"type":"hook"}"#, 0),
            (br#"{"type":"goodbye","id":3}"#, 3),
            (
                br#"{"type":"hook","id":4,"hook":"on_prompt","session":"s"}"#,
                4,
            ),
            (
                br#"{"type":"hook","id":5,"hook":7,"session":"s","value":{}}"#,
                5,
            ),
            (br#"{"type":"tool","id":6,"tool":"t","arguments":{}}"#, 6),
        ] {
            let reply = json(&answer(raw, handle));
            assert_eq!(reply["type"], "error", "{reply}");
            assert_eq!(reply["id"], id, "{reply}");
        }
    }

    fn hello() -> Hello {
        Hello::default().hook("on_user_message")
    }

    export_plugin!(hello, handle);

    #[test]
    fn the_exports_answer_through_the_request_buffer() {
        use hookline_exports::*;
        assert_eq!(hookline_abi(), 1);
        assert_ne!(hookline_hello(), 0);
        assert_eq!(
            json(&last_reply())["hooks"],
            serde_json::json!(["on_user_message"])
        );
        let request = br#"{"type":"hook","id":3,"hook":"on_user_message","session":"s","value":{"text":"a"}}"#;
        let len = i32::try_from(request.len()).unwrap();
        let ptr = hookline_alloc(len);
        assert_ne!(ptr, 0);
        write_request(request);
        hookline_call(ptr, len);
        assert_eq!(
            json(&last_reply()),
            serde_json::json!({"type": "replace", "id": 3, "value": {"text": "a [kit]"}})
        );
        // A pointer that is not the buffer is an error reply, not a read of stray memory.
        hookline_call(ptr.wrapping_add(1), len);
        assert_eq!(json(&last_reply())["type"], "error");
        assert_eq!(hookline_alloc(-1), 0);
    }

    #[test]
    fn pack_puts_the_pointer_high_and_the_length_low() {
        let bytes = [1u8, 2, 3];
        let packed = pack(&bytes) as u64;
        assert_eq!(packed & 0xFFFF_FFFF, 3);
        assert_eq!(packed >> 32, (bytes.as_ptr() as usize as u64) & 0xFFFF_FFFF);
    }
}
