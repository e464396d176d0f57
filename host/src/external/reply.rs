//! Decoding a reply line in one pass (issue 35). [`PluginMessage`] is an internally tagged enum:
//! serde's decoder for it buffers the whole line into a tree of its own before it can look at
//! `type`, then builds the variant from that tree, so a `replace` reply's value was built twice.
//! [`decode_reply`] reads the usual shapes (an object with `type` `keep`, `replace` or `error`)
//! straight into their fields, and hands anything else to the tagged decoder: the answer is the
//! same for every line.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use hookline_messages::protocol::{PluginMessage, ReplyBody, RequestId};

/// A reply's fields, read in one pass. `Some(null)` and a missing field differ (a `replace`
/// without a value is not a reply; with `null` it is).
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    id: RequestId,
    #[serde(default, deserialize_with = "present")]
    value: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    message: Option<String>,
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Decodes one line from a plugin as a reply: its id and body, or `None` for a hello or a line
/// that is not a plugin message. Always the same as decoding a [`PluginMessage`] and taking
/// [`PluginMessage::into_reply`], in one pass for the usual shapes.
pub(crate) fn decode_reply(line: &[u8]) -> Option<(RequestId, ReplyBody)> {
    // Only the object form is read directly: the tagged decoder also takes arrays, with rules
    // of its own.
    let object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if let Some(reply) = object
        .then(|| serde_json::from_slice::<Fields<'_>>(line).ok())
        .flatten()
        .and_then(Fields::into_reply)
    {
        return Some(reply);
    }
    serde_json::from_slice::<PluginMessage>(line)
        .ok()
        .and_then(PluginMessage::into_reply)
}

/// A reply whose value is decoded straight into the hook's value type `T` (the WebAssembly
/// fast path, issue 36): no [`serde_json::Value`] tree in between. Only WebAssembly plugins use
/// it (the `wasm` feature); its tests run either way.
#[cfg_attr(not(feature = "wasm"), allow(dead_code))]
#[derive(Debug, PartialEq)]
pub(crate) enum TypedReply<T> {
    /// Hand the value on unchanged.
    Keep,
    /// The replacement, decoded.
    Replace(T),
    /// A replacement that is not a `T`.
    Undecodable,
    /// The plugin's error message.
    Error(String),
}

#[cfg_attr(not(feature = "wasm"), allow(dead_code))]
impl<T: DeserializeOwned> TypedReply<T> {
    fn of_body(body: ReplyBody) -> Self {
        match body {
            ReplyBody::Keep => Self::Keep,
            ReplyBody::Replace(value) => {
                serde_json::from_value(value).map_or(Self::Undecodable, Self::Replace)
            }
            ReplyBody::Error(message) => Self::Error(message),
        }
    }
}

/// [`Fields`] with the value read as a `T` in the same pass.
#[cfg_attr(not(feature = "wasm"), allow(dead_code))]
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: DeserializeOwned"))]
struct TypedFields<'a, T> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    id: RequestId,
    #[serde(default = "none", deserialize_with = "present")]
    value: Option<T>,
    #[serde(default, deserialize_with = "present")]
    message: Option<String>,
}

#[cfg_attr(not(feature = "wasm"), allow(dead_code))]
fn none<T>() -> Option<T> {
    None
}

/// Decodes a reply with its value as a `T`: always the same as [`decode_reply`] followed by
/// `serde_json::from_value::<T>` on a replacement. The usual shapes are read in one pass, the
/// value straight into a `T`; anything that pass does not take (a value that is not a `T`, a
/// duplicate key, another shape) is decoded the general way.
#[cfg_attr(not(feature = "wasm"), allow(dead_code))]
pub(crate) fn decode_typed<T: DeserializeOwned>(line: &[u8]) -> Option<(RequestId, TypedReply<T>)> {
    let object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if let Some(fields) = object
        .then(|| serde_json::from_slice::<TypedFields<'_, T>>(line).ok())
        .flatten()
    {
        match (&*fields.kind, fields.value) {
            ("keep", _) => return Some((fields.id, TypedReply::Keep)),
            ("replace", Some(value)) => return Some((fields.id, TypedReply::Replace(value))),
            ("error", _) => {
                return Some((
                    fields.id,
                    TypedReply::Error(fields.message.unwrap_or_default()),
                ))
            }
            _ => {}
        }
    }
    decode_reply(line).map(|(id, body)| (id, TypedReply::of_body(body)))
}

impl Fields<'_> {
    /// The reply, when the fields make one as the tagged decoder would (fields a variant does
    /// not have are ignored, as it ignores them); `None` leaves the line to that decoder.
    fn into_reply(self) -> Option<(RequestId, ReplyBody)> {
        let body = match &*self.kind {
            "keep" => ReplyBody::Keep,
            "replace" => ReplyBody::Replace(self.value?),
            "error" => ReplyBody::Error(self.message.unwrap_or_default()),
            _ => return None,
        };
        Some((self.id, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tagged(line: &str) -> Option<(RequestId, ReplyBody)> {
        serde_json::from_str::<PluginMessage>(line)
            .ok()
            .and_then(PluginMessage::into_reply)
    }

    #[test]
    fn the_usual_replies_decode_as_the_tagged_decoder_decodes_them() {
        for line in [
            r#"{"type":"keep","id":7}"#,
            r#"{"id":7,"type":"keep","value":{"x":1}}"#,
            r#"{"type":"replace","id":8,"value":{"text":"hi"}}"#,
            r#"{"type":"replace","id":8,"value":null}"#,
            r#"{"type":"error","id":9,"message":"why"}"#,
            r#"{"type":"error","id":9}"#,
            r#" {"type":"k\u0065ep","id":1}"#,
        ] {
            assert_eq!(decode_reply(line.as_bytes()), tagged(line), "{line}");
            assert!(tagged(line).is_some(), "{line}");
        }
    }

    #[test]
    fn what_is_not_a_reply_is_refused_as_before() {
        for line in [
            r#"{"type":"replace","id":8}"#,
            r#"{"type":"error","id":9,"message":null}"#,
            r#"{"type":"hello","protocol":1}"#,
            r#"{"type":"keep","id":-1}"#,
            r#"{"type":"keep","id":1,"id":2}"#,
            r#"{"type":"Keep","id":1}"#,
            r#"["keep",1,2,"x"]"#,
            "not json",
        ] {
            assert_eq!(decode_reply(line.as_bytes()), tagged(line), "{line}");
        }
    }

    fn field() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec!["type", "id", "value", "message", "other"]);
        let value = prop::sample::select(vec![
            r#""keep""#,
            r#""replace""#,
            r#""error""#,
            r#""hello""#,
            "7",
            "-1",
            "1.5",
            "null",
            "true",
            r#""text""#,
            r#"{"text":"a"}"#,
            "[1]",
        ]);
        (key, value).prop_map(|(k, v)| format!("\"{k}\":{v}"))
    }

    /// A value type with the shapes a hook value has: a required field, an optional one.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Text {
        text: String,
        #[serde(default)]
        n: Option<u32>,
    }

    fn typed_by_value(line: &str) -> Option<(RequestId, TypedReply<Text>)> {
        decode_reply(line.as_bytes()).map(|(id, body)| (id, TypedReply::of_body(body)))
    }

    fn text_value() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            r#"{"text":"a"}"#,
            r#"{"text":"a","n":3}"#,
            r#"{"text":"a","text":"b"}"#,
            r#"{"n":3}"#,
            r#"{"text":"a","n":-1}"#,
            r#"{"text":"a\u0062","other":[1,{"x":null}]}"#,
            "null",
            "[1]",
        ])
        .prop_map(str::to_owned)
    }

    proptest! {
        /// A reply decoded straight into the value type is the reply decoded as a
        /// `serde_json::Value` and then converted, for every shape of reply and value.
        #[test]
        fn a_typed_reply_is_the_reply_decoded_then_converted(
            fields in prop::collection::vec(field(), 0..5),
            value in text_value(),
        ) {
            let mut fields = fields;
            fields.push(format!("\"value\":{value}"));
            let line = format!("{{{}}}", fields.join(","));
            prop_assert_eq!(decode_typed::<Text>(line.as_bytes()), typed_by_value(&line), "{}", line);
        }
    }

    proptest! {
        /// Any object of these keys and values (duplicates, wrong types, missing fields
        /// included) decodes exactly as the tagged decoder decodes it.
        #[test]
        fn any_object_decodes_as_the_tagged_decoder_decodes_it(
            fields in prop::collection::vec(field(), 0..6)
        ) {
            let line = format!("{{{}}}", fields.join(","));
            prop_assert_eq!(decode_reply(line.as_bytes()), tagged(&line), "{}", line);
        }
    }
}
