//! hookline's pure floor: every hook's data, the notes the host records, and the spec's rules as
//! functions.
//!
//! Nothing here does I/O or needs a runtime (compare nushell's `nu-plugin-protocol`). The actor
//! layer (`hookline-actors`) moves these values between plugins; the host (`hookline-host`)
//! stores them.
//!
//! ```
//! use hookline_messages::hook::{Hook, OnToolCall};
//! use hookline_messages::note::Refusal;
//! use hookline_messages::tool::{ToolCall, ToolProvider};
//!
//! let call = ToolCall {
//!     call_id: "c1".into(),
//!     name: "read_file".into(),
//!     arguments: serde_json::json!({"path": "README.md"}),
//!     provider: ToolProvider::BuiltIn,
//! };
//! let mut rewritten = call.clone();
//! rewritten.call_id = "c2".into();
//! // SPEC P2.7: a hook cannot change the call id.
//! assert_eq!(OnToolCall::admit(&(), &call, rewritten), Err(Refusal::ChangedCallId));
//! ```

pub mod approval;
pub mod compaction;
pub mod cut_off;
pub mod edit;
pub mod event;
pub mod hook;
pub mod items;
pub mod kind;
pub mod model;
pub mod note;
pub mod policy;
pub mod prompt;
pub mod protocol;
pub mod record;
pub mod rules;
pub mod scenario;
pub mod session;
pub mod tool;
pub mod transition;
pub mod user;
