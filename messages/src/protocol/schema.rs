//! JSON Schemas of the wire types, generated with schemars. `docs/protocol/*.json` hold them; a
//! test in `tests/external_protocol_schemas.rs` fails when the files and the types disagree.

use schemars::{json_schema, Schema, SchemaGenerator};

use super::{HostMessage, PluginMessage};
use crate::hook::HookKind;

/// One schema and the file name it is kept under in `docs/protocol/`.
#[derive(Clone, Debug)]
pub struct SchemaFile {
    /// The file name (`host-message.json`).
    pub file_name: &'static str,
    /// The schema, pretty-printed, ending with a newline.
    pub text: String,
}

/// The schemas of the two directions of the protocol.
pub fn schemas() -> Vec<SchemaFile> {
    let render = |schema: Schema| {
        let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
        text.push('\n');
        text
    };
    vec![
        SchemaFile {
            file_name: "host-message.json",
            text: render(schemars::schema_for!(HostMessage)),
        },
        SchemaFile {
            file_name: "plugin-message.json",
            text: render(schemars::schema_for!(PluginMessage)),
        },
    ]
}

fn wire_names() -> Vec<&'static str> {
    HookKind::ALL.iter().map(|kind| kind.wire_name()).collect()
}

/// One hook wire name.
pub(super) fn hook_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "enum": wire_names() })
}

/// A set of hook wire names.
pub(super) fn hook_names(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "uniqueItems": true,
        "items": { "type": "string", "enum": wire_names() }
    })
}

/// A risk, lowest first.
pub(super) fn risk(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "enum": ["read", "write", "execute", "critical"] })
}

/// An authority.
pub(super) fn authority(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "enum": ["workspace", "host"] })
}

/// An approval mode.
pub(super) fn approval_mode(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "enum": ["ask-above-read", "ask-all", "allow-workspace"] })
}
