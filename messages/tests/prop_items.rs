//! Property tests over a request's shared item list (issue 47): whatever edits a request goes
//! through (appends, replacements, a raw hook's edits through `to_mut`), the image answer kept
//! with the list is the one a look at every item gives, and the request prepared for the
//! provider is exactly what preparing each item gives (SPEC R5.5, R5.6); the request it was
//! cloned from is never changed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::arb;
use common::rebuild_edit::{apply_rebuild_edit, rebuild_edit, RebuildEdit};
use hookline_messages::model::{Item, ItemBody, ModelRequest};
use proptest::prelude::*;
use proptest::sample::Index;

/// One change to a request's items.
#[derive(Clone, Debug)]
enum Change {
    /// Appended (keeps the image count).
    Push(ItemBody),
    /// Put in place of an item (keeps the image count).
    Replace(Index, ItemBody),
    /// A raw hook's edit, through `to_mut` or `item_mut` (forgets the count).
    Edit(RebuildEdit),
    /// Asks, so that the count is known before the next change.
    Ask,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        arb::body(arb::any_image()).prop_map(Change::Push),
        (any::<Index>(), arb::body(arb::any_image())).prop_map(|(i, b)| Change::Replace(i, b)),
        rebuild_edit().prop_map(Change::Edit),
        Just(Change::Ask),
    ]
}

fn apply(request: &mut ModelRequest, change: &Change, n: usize) {
    match change {
        Change::Push(body) => request
            .items
            .push(Arc::new(Item::new(format!("p{n}"), body.clone()))),
        Change::Replace(at, body) if !request.items.is_empty() => {
            let at = at.index(request.items.len());
            let replaced = request
                .items
                .replace(at, Arc::new(Item::new(format!("p{n}"), body.clone())));
            assert!(replaced.is_some());
        }
        Change::Replace(..) => {}
        Change::Edit(edit) => apply_rebuild_edit(request, edit),
        Change::Ask => {
            let _ = request.needs_preparing();
        }
    }
}

/// What preparing for the provider did before the count was kept: each item looked at and
/// prepared on its own.
fn prepared_item_by_item(request: &ModelRequest) -> Vec<Item> {
    let accepts = request.accepts_images;
    request
        .items
        .iter()
        .map(|item| {
            let mut item = Item::clone(item);
            match &mut item.body {
                ItemBody::System { text, images } | ItemBody::Assistant { text, images } => {
                    for image in images.drain(..) {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&format!("[image {}: {}]", image.number, image.media_type));
                    }
                }
                ItemBody::User { images, .. } | ItemBody::ToolResult { images, .. } if !accepts => {
                    images.clear();
                }
                _ => {}
            }
            item
        })
        .collect()
}

fn plain(request: &ModelRequest) -> Vec<Item> {
    request.items.iter().map(|i| Item::clone(i)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn the_image_answer_and_the_prepared_request_follow_every_change(
        before in arb::request(),
        changes in prop::collection::vec(change(), 0..8),
        ask_first in any::<bool>(),
    ) {
        if ask_first {
            let _ = before.needs_preparing();
        }
        let original = plain(&before);
        let mut request = before.clone();
        prop_assert!(request.items.shares_with(&before.items));
        for (n, change) in changes.iter().enumerate() {
            apply(&mut request, change, n);
            let expected = prepared_item_by_item(&request);
            prop_assert_eq!(request.needs_preparing(), expected != plain(&request));
        }
        let expected = prepared_item_by_item(&request);
        let sent = request.clone().prepared_for_provider();
        prop_assert_eq!(&plain(&sent), &expected);
        prop_assert_eq!(sent.purpose, request.purpose);
        prop_assert_eq!(sent.accepts_images, request.accepts_images);
        // An item preparing leaves as it is stays the same allocation.
        for ((item, kept), prepared) in request.items.iter().zip(sent.items.iter()).zip(&expected) {
            if **item == *prepared {
                prop_assert!(Arc::ptr_eq(item, kept));
            }
        }
        // The request cloned from is untouched, and so is its count.
        prop_assert_eq!(plain(&before), original);
        let expected = prepared_item_by_item(&before);
        prop_assert_eq!(before.needs_preparing(), expected != plain(&before));
    }
}
