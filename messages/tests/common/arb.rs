//! proptest strategies for model requests and classifications.

use hookline_messages::approval::{Authority, Classification, Risk};
use hookline_messages::model::{ImageRef, Item, ItemBody, MediaType, ModelRequest, Purpose};
use proptest::prelude::*;
use serde_json::json;

pub fn media_type() -> impl Strategy<Value = MediaType> + Clone {
    prop_oneof![
        Just(MediaType::Png),
        Just(MediaType::Jpeg),
        Just(MediaType::Gif),
        Just(MediaType::Webp)
    ]
}

/// The session of the property tests holds images 1 to 3, with these media types.
pub fn held_image() -> impl Strategy<Value = ImageRef> + Clone {
    prop_oneof![
        Just(ImageRef {
            number: 1,
            media_type: MediaType::Png
        }),
        Just(ImageRef {
            number: 2,
            media_type: MediaType::Jpeg
        }),
        Just(ImageRef {
            number: 3,
            media_type: MediaType::Gif
        }),
    ]
}

/// Any image marker: held ones and others (unknown numbers, wrong media types).
pub fn any_image() -> impl Strategy<Value = ImageRef> + Clone {
    prop_oneof![
        3 => held_image(),
        1 => (1u32..6, media_type()).prop_map(|(number, media_type)| ImageRef { number, media_type }),
    ]
}

pub fn purpose() -> impl Strategy<Value = Purpose> {
    prop_oneof![
        Just(Purpose::Work),
        Just(Purpose::Plan),
        Just(Purpose::Side),
        Just(Purpose::Compaction)
    ]
}

fn text() -> impl Strategy<Value = String> {
    "[a-z ]{0,6}"
}

/// An item body of any kind, with images from `image`.
pub fn body<S>(image: S) -> impl Strategy<Value = ItemBody>
where
    S: Strategy<Value = ImageRef> + Clone + 'static,
{
    let images = move || prop::collection::vec(image.clone(), 0..3);
    prop_oneof![
        (text(), images()).prop_map(|(text, images)| ItemBody::System { text, images }),
        (text(), images()).prop_map(|(text, images)| ItemBody::User { text, images }),
        (text(), images()).prop_map(|(text, images)| ItemBody::Assistant { text, images }),
        ("c[0-3]", "[a-z]{1,4}", any::<u8>()).prop_map(|(call_id, name, n)| ItemBody::ToolCall {
            call_id,
            name,
            arguments: json!({ "n": n }),
        }),
        ("c[0-3]", "[a-z]{1,4}", text(), images(), any::<bool>()).prop_map(
            |(call_id, name, text, images, success)| ItemBody::ToolResult {
                call_id,
                name,
                text,
                images,
                success,
            }
        ),
        (text(), proptest::option::of("s[0-9]")).prop_map(|(text, provider_state)| {
            ItemBody::Reasoning {
                text,
                provider_state,
            }
        }),
    ]
}

/// A request as the host builds it: unique ids `i0`, `i1`, ..., held images only.
pub fn request() -> impl Strategy<Value = ModelRequest> {
    (
        purpose(),
        any::<bool>(),
        prop::collection::vec(body(held_image()), 0..7),
    )
        .prop_map(|(purpose, model_takes_images, bodies)| {
            ModelRequest::new(
                purpose,
                ModelRequest::accepts_images_for(purpose, model_takes_images),
                bodies
                    .into_iter()
                    .enumerate()
                    .map(|(n, body)| Item::new(format!("i{n}"), body)),
            )
        })
}

pub fn risk() -> impl Strategy<Value = Risk> {
    prop_oneof![
        Just(Risk::Read),
        Just(Risk::Write),
        Just(Risk::Execute),
        Just(Risk::Critical)
    ]
}

pub fn classification() -> impl Strategy<Value = Classification> {
    (
        risk(),
        prop_oneof![Just(Authority::Workspace), Just(Authority::Host)],
        prop_oneof![Just("write a.txt".to_owned()), Just("other".to_owned())],
        any::<bool>(),
    )
        .prop_map(
            |(risk, authority, summary, requires_prompt)| Classification {
                risk,
                authority,
                summary,
                requires_prompt,
            },
        )
}
