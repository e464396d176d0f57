//! What a hook changed, as an RFC 6902 JSON Patch from the value it was given to the value it
//! handed on: events carry changes, not snapshots, so a turn's report does not grow with the
//! conversation (issue 22; Kubernetes' watch events and the LSP's incremental sync do the same).
//!
//! [`Changes::patch`] serialises only what it must: for a model request, the items before the
//! first one that differs are skipped (they are the conversation's stored prefix, the same on both
//! sides), so the cost follows the change, not the length of the conversation.

use hookline_messages::approval::Classification;
use hookline_messages::compaction::{Compaction, CompactionText};
use hookline_messages::model::{ModelRequest, ModelResponse};
use hookline_messages::prompt::{Prompt, SystemText};
use hookline_messages::session::SessionInfo;
use hookline_messages::tool::{ToolCall, ToolResult};
use hookline_messages::user::{TurnInfo, UserMessage};
use serde::Serialize;

pub use json_patch::Patch;

/// The schema of a [`Patch`] as serde writes it: an array of RFC 6902 operations, each an
/// object tagged by `op` (json-patch's own serde; the OpenAPI document names it `JsonPatch`).
pub(crate) struct JsonPatch;

impl schemars::JsonSchema for JsonPatch {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "JsonPatch".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let pointer = serde_json::json!({
            "type": "string",
            "description": "An RFC 6901 JSON Pointer (`/items/3/text`)."
        });
        let operation = |op: &str, fields: &[&str]| {
            let mut properties = serde_json::Map::new();
            properties.insert("op".into(), serde_json::json!({ "const": op }));
            for field in fields {
                let schema = match *field {
                    "value" => serde_json::json!({}),
                    _ => pointer.clone(),
                };
                properties.insert((*field).into(), schema);
            }
            let mut required = vec!["op"];
            required.extend_from_slice(fields);
            serde_json::json!({
                "type": "object",
                "properties": properties,
                "required": required
            })
        };
        schemars::json_schema!({
            "description": "An RFC 6902 JSON Patch: the operations, in order.",
            "type": "array",
            "items": {
                "oneOf": [
                    operation("add", &["path", "value"]),
                    operation("remove", &["path"]),
                    operation("replace", &["path", "value"]),
                    operation("move", &["from", "path"]),
                    operation("copy", &["from", "path"]),
                    operation("test", &["path", "value"])
                ]
            }
        })
    }
}

/// How much a `hook-changed` event says.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Detail {
    /// The JSON Patch and the names of the plugins: what every client gets.
    #[default]
    Changes,
    /// The patch and the full values before and after (`?detail=full`).
    Full,
}

/// A value whose change a `hook-changed` event reports.
pub trait Changes: Serialize {
    /// The JSON Patch that turns `before` (as JSON) into `after`. Each `replace` and `remove`
    /// follows a `test` op holding the value it replaces or removes (RFC 6902 section 4.6), so a
    /// client can show what changed (a word diff of a text) from the patch alone, and applying
    /// the patch to anything but `before` fails instead of doing something else.
    fn patch(before: &Self, after: &Self) -> Patch {
        let before = json(before);
        let ops = tested(&json_patch::diff(&before, &json(after)), &before);
        read_back(ops)
    }
}

/// The ops of `patch` as JSON, each `replace` and `remove` after a `test` of the value it
/// replaces or removes at that point of the patch (`before` with the ops before it applied).
fn tested(patch: &Patch, before: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut doc = before.clone();
    let mut ops = Vec::with_capacity(patch.0.len() * 2);
    for op in &patch.0 {
        let written = json(op);
        let path = written["path"].as_str().unwrap_or_default();
        let old = matches!(written["op"].as_str(), Some("replace" | "remove"))
            .then(|| doc.pointer(path).cloned())
            .flatten();
        if let Some(old) = old {
            ops.push(serde_json::json!({ "op": "test", "path": path, "value": old }));
        }
        // The diff's own ops apply to the value they were made from.
        let _ = json_patch::patch(&mut doc, std::slice::from_ref(op));
        ops.push(written);
    }
    ops
}

/// `ops` as a patch (they were just written from one: reading them back cannot fail).
fn read_back(ops: Vec<serde_json::Value>) -> Patch {
    serde_json::from_value(serde_json::Value::Array(ops)).unwrap_or_else(|_| Patch(Vec::new()))
}

/// `value` as JSON (`null` if it cannot be: every hook value is plain data, so never in practice).
pub(crate) fn json<T: Serialize + ?Sized>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
}

macro_rules! whole_value_changes {
    ($($value:ty),* $(,)?) => { $(impl Changes for $value {})* };
}

// Small values, or values a hook may rewrite anywhere: diffed whole.
whole_value_changes!(
    SessionInfo,
    Prompt,
    SystemText,
    UserMessage,
    TurnInfo,
    ModelResponse,
    ToolCall,
    ToolResult,
    Classification,
    Compaction,
    CompactionText,
);

impl Changes for ModelRequest {
    /// Skips the items both sides share from the start (the same shared item, or an equal
    /// one), diffs the rest, and puts the skipped count back into the paths (`/items/<n>/...`).
    fn patch(before: &Self, after: &Self) -> Patch {
        let (shared, before, after) = request_tails(before, after);
        let mut ops = tested(&json_patch::diff(&before, &after), &before);
        if shared > 0 {
            shift_item_paths(&mut ops, shared);
        }
        read_back(ops)
    }
}

/// The JSON Patch from one request to another, as [`Changes::patch`] makes it but without the
/// `test` ops: what the archive keeps of how the hooks changed a request (issue 25).
pub fn request_patch(before: &ModelRequest, after: &ModelRequest) -> Patch {
    let (shared, before, after) = request_tails(before, after);
    let patch = json_patch::diff(&before, &after);
    if shared == 0 {
        return patch;
    }
    let mut ops: Vec<serde_json::Value> = patch.0.iter().map(json).collect();
    shift_item_paths(&mut ops, shared);
    read_back(ops)
}

/// How many items both requests share from the start, and each request as JSON without them.
fn request_tails(
    before: &ModelRequest,
    after: &ModelRequest,
) -> (usize, serde_json::Value, serde_json::Value) {
    let shared = before
        .items
        .iter()
        .zip(&after.items)
        .take_while(|(b, a)| b == a)
        .count();
    let tail = |request: &ModelRequest| {
        serde_json::json!({
            "purpose": request.purpose,
            "acceptsImages": request.accepts_images,
            "items": &request.items[shared..],
        })
    };
    (shared, tail(before), tail(after))
}

/// Adds `by` to the item index of every path (and `from`) under `/items/`.
fn shift_item_paths(ops: &mut [serde_json::Value], by: usize) {
    for op in ops {
        for key in ["path", "from"] {
            let Some(path) = op.get(key).and_then(|p| p.as_str()) else {
                continue;
            };
            if let Some(shifted) = shifted(path, by) {
                op[key] = shifted.into();
            }
        }
    }
}

/// `/items/<i>/rest` as `/items/<i + by>/rest`; `None` for any other path (and `/items/-`).
fn shifted(path: &str, by: usize) -> Option<String> {
    let rest = path.strip_prefix("/items/")?;
    let (index, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let index: usize = index.parse().ok()?;
    Some(format!("/items/{}{tail}", index + by))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookline_messages::model::{Item, ItemBody, Purpose};

    fn user(id: &str, text: &str) -> Item {
        Item::new(
            id,
            ItemBody::User {
                text: text.into(),
                images: Vec::new(),
            },
        )
    }

    fn request(texts: &[&str]) -> ModelRequest {
        ModelRequest {
            purpose: Purpose::Work,
            accepts_images: false,
            items: texts
                .iter()
                .enumerate()
                .map(|(n, t)| user(&format!("r{n}"), t))
                .collect(),
        }
    }

    /// The patch, applied to the whole `before`, gives the whole `after`.
    fn applies(before: &ModelRequest, after: &ModelRequest) -> Patch {
        let patch = ModelRequest::patch(before, after);
        let mut doc = json(before);
        assert!(json_patch::patch(&mut doc, &patch).is_ok(), "{patch:?}");
        assert_eq!(doc, json(after));
        patch
    }

    #[test]
    fn an_appended_item_is_one_add_at_its_index() {
        let before = request(&["a", "b", "c"]);
        let mut after = before.clone();
        after.items.push(user("extra", "reminder").into());
        let patch = applies(&before, &after);
        assert_eq!(patch.0.len(), 1, "an add tests nothing");
        let op = json(&patch.0[0]);
        assert_eq!(op["op"], "add");
        assert!(op["path"] == "/items/3" || op["path"] == "/items/-", "{op}");
    }

    #[test]
    fn a_text_changed_deep_in_the_request_keeps_its_real_index() {
        let before = request(&["a", "b", "c", "d"]);
        let mut after = before.clone();
        if let ItemBody::User { text, .. } =
            &mut std::sync::Arc::make_mut(&mut after.items.to_mut()[2]).body
        {
            text.push_str(" (be brief)");
        }
        let patch = applies(&before, &after);
        // The old text is tested first, so the change can be shown from the patch alone.
        let ops = json(&patch);
        assert_eq!(ops[0]["op"], "test");
        assert_eq!(ops[0]["path"], "/items/2/text");
        assert_eq!(ops[0]["value"], "c");
        assert_eq!(ops[1]["op"], "replace");
        assert_eq!(ops[1]["path"], "/items/2/text");
        assert_eq!(ops[1]["value"], "c (be brief)");
        // Applied to another value, the test fails rather than patching the wrong thing.
        let mut other = json(&request(&["a", "b", "x", "d"]));
        assert!(json_patch::patch(&mut other, &patch).is_err());
    }

    #[test]
    fn dropped_and_reordered_items_still_apply() {
        let before = request(&["a", "b", "c", "d", "e"]);
        let mut after = before.clone();
        after.items.to_mut().remove(1);
        after.items.to_mut().swap(2, 3);
        applies(&before, &after);
        applies(&after, &before);
        assert!(ModelRequest::patch(&before, &before).0.is_empty());
    }

    #[test]
    fn the_archived_patch_applies_and_tests_nothing() {
        let before = request(&["a", "b", "c", "d"]);
        let mut after = before.clone();
        if let ItemBody::User { text, .. } =
            &mut std::sync::Arc::make_mut(&mut after.items.to_mut()[2]).body
        {
            text.push_str(" (be brief)");
        }
        after.items.push(user("extra", "reminder").into());
        let patch = request_patch(&before, &after);
        let ops = json(&patch);
        assert!(
            ops.as_array()
                .is_some_and(|ops| ops.iter().all(|op| op["op"] != "test")),
            "{ops}"
        );
        assert_eq!(ops[0]["path"], "/items/2/text");
        let mut doc = json(&before);
        assert!(json_patch::patch(&mut doc, &patch).is_ok(), "{patch:?}");
        assert_eq!(doc, json(&after));
        let mut doc = json(&after);
        assert!(json_patch::patch(&mut doc, &request_patch(&after, &before)).is_ok());
        assert_eq!(doc, json(&before));
    }

    #[test]
    fn other_values_are_diffed_whole() {
        let before = UserMessage::new("my password is hunter2");
        let after = UserMessage::new("my [password redacted]");
        let patch = UserMessage::patch(&before, &after);
        let mut doc = json(&before);
        assert!(json_patch::patch(&mut doc, &patch).is_ok());
        assert_eq!(doc, json(&after));
    }

    #[test]
    fn only_item_paths_shift() {
        assert_eq!(
            shifted("/items/2/text", 5).as_deref(),
            Some("/items/7/text")
        );
        assert_eq!(shifted("/items/0", 3).as_deref(), Some("/items/3"));
        assert_eq!(shifted("/items/-", 3), None);
        assert_eq!(shifted("/purpose", 3), None);
    }
}
