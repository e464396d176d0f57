//! Builders shared by the rule tests: small model requests with one item of every kind.

#![allow(dead_code, unreachable_pub)]

pub mod arb;
pub mod mutate;
pub mod rebuild_edit;

use std::sync::Arc;

use hookline_messages::model::{
    HeldImages, ImageRef, Item, ItemBody, MediaType, ModelRequest, Purpose,
};
use serde_json::json;

pub const PNG1: ImageRef = ImageRef {
    number: 1,
    media_type: MediaType::Png,
};
pub const JPEG2: ImageRef = ImageRef {
    number: 2,
    media_type: MediaType::Jpeg,
};
pub const GIF3: ImageRef = ImageRef {
    number: 3,
    media_type: MediaType::Gif,
};
pub const WEBP4: ImageRef = ImageRef {
    number: 4,
    media_type: MediaType::Webp,
};

pub fn system(id: &str, text: &str) -> Item {
    Item::new(
        id,
        ItemBody::System {
            text: text.into(),
            images: vec![],
        },
    )
}

pub fn user(id: &str, text: &str, images: &[ImageRef]) -> Item {
    Item::new(
        id,
        ItemBody::User {
            text: text.into(),
            images: images.to_vec(),
        },
    )
}

pub fn assistant(id: &str, text: &str, images: &[ImageRef]) -> Item {
    Item::new(
        id,
        ItemBody::Assistant {
            text: text.into(),
            images: images.to_vec(),
        },
    )
}

pub fn tool_call(id: &str, call_id: &str, name: &str) -> Item {
    Item::new(
        id,
        ItemBody::ToolCall {
            call_id: call_id.into(),
            name: name.into(),
            arguments: json!({"path": "a.txt"}),
        },
    )
}

pub fn tool_result(id: &str, call_id: &str, name: &str, text: &str, images: &[ImageRef]) -> Item {
    Item::new(
        id,
        ItemBody::ToolResult {
            call_id: call_id.into(),
            name: name.into(),
            text: text.into(),
            images: images.to_vec(),
            success: true,
        },
    )
}

pub fn reasoning(id: &str, text: &str, state: Option<&str>) -> Item {
    Item::new(
        id,
        ItemBody::Reasoning {
            text: text.into(),
            provider_state: state.map(str::to_owned),
        },
    )
}

/// A work request on an image-capable model with one item of every kind:
/// `sys`, `u1` (image 1), `r1` (with provider state), `a1`, `call1`, `res1` (image 2).
pub fn work_request() -> ModelRequest {
    ModelRequest::new(
        Purpose::Work,
        true,
        [
            system("sys", "You are a coding agent."),
            user("u1", "look at this", &[PNG1]),
            reasoning("r1", "the user wants a look", Some("sig-1")),
            assistant("a1", "Reading the file.", &[]),
            tool_call("call1", "c1", "read_file"),
            tool_result("res1", "c1", "read_file", "hello", &[JPEG2]),
        ],
    )
}

/// The same request as a side question: it cannot carry images (SPEC R5.6).
pub fn side_request() -> ModelRequest {
    ModelRequest {
        purpose: Purpose::Side,
        accepts_images: false,
        ..work_request()
    }
}

/// The images the session of [`work_request`] holds: 1, 2 and 3.
pub fn held() -> HeldImages {
    [PNG1, JPEG2, GIF3].into_iter().collect()
}

/// The item with `id`.
pub fn item<'a>(request: &'a ModelRequest, id: &str) -> &'a Item {
    request
        .items
        .iter()
        .find(|item| item.id.0 == id)
        .unwrap_or_else(|| panic!("no item {id}"))
}

/// The item with `id`, for editing.
pub fn item_mut<'a>(request: &'a mut ModelRequest, id: &str) -> &'a mut Item {
    request
        .items
        .to_mut()
        .iter_mut()
        .find(|item| item.id.0 == id)
        .map(Arc::make_mut)
        .unwrap_or_else(|| panic!("no item {id}"))
}

/// The text of a text-carrying item.
pub fn text_mut(item: &mut Item) -> &mut String {
    match &mut item.body {
        ItemBody::System { text, .. }
        | ItemBody::User { text, .. }
        | ItemBody::Assistant { text, .. }
        | ItemBody::ToolResult { text, .. }
        | ItemBody::Reasoning { text, .. } => text,
        ItemBody::ToolCall { .. } => panic!("a tool call has no text"),
    }
}

/// The images of an image-carrying item.
pub fn images_mut(item: &mut Item) -> &mut Vec<ImageRef> {
    match &mut item.body {
        ItemBody::System { images, .. }
        | ItemBody::User { images, .. }
        | ItemBody::Assistant { images, .. }
        | ItemBody::ToolResult { images, .. } => images,
        ItemBody::ToolCall { .. } | ItemBody::Reasoning { .. } => panic!("no images"),
    }
}
