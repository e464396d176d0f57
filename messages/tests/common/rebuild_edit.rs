//! Edits a raw `rebuild_model` hook makes to the request it is given, and the invariants any
//! sequence of admitted rebuilds must keep (SPEC R1, R5.2 to R5.6).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use hookline_messages::model::{HeldImages, ImageRef, Item, ItemBody, ModelRequest};
use proptest::prelude::*;
use proptest::sample::Index;

use super::arb;

/// One edit a raw hook makes to the request it was given.
#[derive(Clone, Debug)]
pub enum RebuildEdit {
    Drop(Index),
    Move(Index, Index),
    /// Insert a new item; its id comes from a small pool, so it may repeat or reuse an id.
    Insert(Index, u8, ItemBody),
    /// Replace an item's body, keeping its id (a different kind makes it a new item).
    Rebody(Index, ItemBody),
    SetText(Index, String),
    MoveImage(Index, Index),
    AddImage(Index, ImageRef),
    Duplicate(Index),
}

pub fn rebuild_edit() -> impl Strategy<Value = RebuildEdit> {
    prop_oneof![
        any::<Index>().prop_map(RebuildEdit::Drop),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| RebuildEdit::Move(a, b)),
        (any::<Index>(), 0u8..10, arb::body(arb::any_image()))
            .prop_map(|(a, id, body)| RebuildEdit::Insert(a, id, body)),
        (any::<Index>(), arb::body(arb::any_image())).prop_map(|(a, b)| RebuildEdit::Rebody(a, b)),
        (any::<Index>(), "[a-z]{0,3}").prop_map(|(a, t)| RebuildEdit::SetText(a, t)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| RebuildEdit::MoveImage(a, b)),
        (any::<Index>(), arb::any_image()).prop_map(|(a, img)| RebuildEdit::AddImage(a, img)),
        any::<Index>().prop_map(RebuildEdit::Duplicate),
    ]
}

fn images_of(body: &mut ItemBody) -> Option<&mut Vec<ImageRef>> {
    match body {
        ItemBody::System { images, .. }
        | ItemBody::User { images, .. }
        | ItemBody::Assistant { images, .. }
        | ItemBody::ToolResult { images, .. } => Some(images),
        ItemBody::ToolCall { .. } | ItemBody::Reasoning { .. } => None,
    }
}

pub fn apply_rebuild_edit(request: &mut ModelRequest, edit: &RebuildEdit) {
    let items = request.items.to_mut();
    let len = items.len();
    match edit {
        RebuildEdit::Insert(at, id, body) => {
            items.insert(
                at.index(len + 1),
                Item::new(format!("i{id}"), body.clone()).into(),
            );
        }
        _ if len == 0 => {}
        RebuildEdit::Drop(at) => drop(items.remove(at.index(len))),
        RebuildEdit::Move(from, to) => {
            let item = items.remove(from.index(len));
            items.insert(to.index(len), item);
        }
        RebuildEdit::Rebody(at, body) => {
            Arc::make_mut(&mut items[at.index(len)]).body = body.clone()
        }
        RebuildEdit::SetText(at, new) => match &mut Arc::make_mut(&mut items[at.index(len)]).body {
            ItemBody::System { text, .. }
            | ItemBody::User { text, .. }
            | ItemBody::Assistant { text, .. }
            | ItemBody::ToolResult { text, .. }
            | ItemBody::Reasoning { text, .. } => text.clone_from(new),
            ItemBody::ToolCall { name, .. } => name.clone_from(new),
        },
        RebuildEdit::MoveImage(from, to) => {
            let taken = images_of(&mut Arc::make_mut(&mut items[from.index(len)]).body)
                .and_then(|i| i.pop());
            if let (Some(image), Some(images)) = (
                taken,
                images_of(&mut Arc::make_mut(&mut items[to.index(len)]).body),
            ) {
                images.push(image);
            }
        }
        RebuildEdit::AddImage(at, image) => {
            if let Some(images) = images_of(&mut Arc::make_mut(&mut items[at.index(len)]).body) {
                images.push(*image);
            }
        }
        RebuildEdit::Duplicate(at) => {
            let copy = items[at.index(len)].clone();
            items.push(copy);
        }
    }
}

pub fn check_representable(
    held: &HeldImages,
    original: &ModelRequest,
    value: &ModelRequest,
) -> Result<(), TestCaseError> {
    let mut ids = HashSet::new();
    for item in &value.items {
        prop_assert!(
            ids.insert(&item.id),
            "repeated id {:?} in {:?}",
            item.id,
            value
        );
    }
    let originals: HashMap<_, _> = original
        .items
        .iter()
        .map(|i| ((&i.id, i.kind()), i))
        .collect();
    for item in &value.items {
        let was = originals.get(&(&item.id, item.kind())).copied();
        if let ItemBody::Reasoning {
            text,
            provider_state,
        } = &item.body
        {
            let was_text = was.and_then(|w| match &w.body {
                ItemBody::Reasoning {
                    text,
                    provider_state,
                } => Some((text, provider_state)),
                _ => None,
            });
            if text.is_empty() {
                prop_assert!(
                    was_text.is_some_and(|(t, _)| t.is_empty()),
                    "new empty reasoning {:?}",
                    item
                );
            }
            if provider_state.is_some() {
                prop_assert_eq!(
                    Some((text, provider_state)),
                    was_text,
                    "forged provider state"
                );
            }
        }
        for image in item.body.images() {
            prop_assert!(held.holds(image), "unheld image {:?} in {:?}", image, item);
        }
        if !value.accepts_images {
            // Only attachments the item already had, each at most as often (SPEC R5.6).
            let mut had: Vec<ImageRef> = was.map_or(vec![], |w| w.body.images().to_vec());
            for image in item.body.images() {
                let slot = had.iter().position(|h| h == image);
                prop_assert!(
                    slot.is_some(),
                    "image {:?} added to a text-only request",
                    image
                );
                if let Some(slot) = slot {
                    had.remove(slot);
                }
            }
        }
    }
    Ok(())
}

/// SPEC R5.3: a tool result new in this step takes its name from its call (the replacement's
/// call first, then the request's), and has no name without one; never the plugin's name.
pub fn check_new_results_named_by_their_call(
    before: &ModelRequest,
    proposed: &ModelRequest,
    value: &ModelRequest,
) -> Result<(), TestCaseError> {
    let call_name = |wanted: &str| {
        let named = |items: &[Arc<Item>]| {
            items.iter().rev().find_map(|i| match &i.body {
                ItemBody::ToolCall { call_id, name, .. } if call_id == wanted => Some(name.clone()),
                _ => None,
            })
        };
        named(&proposed.items)
            .or_else(|| named(&before.items))
            .unwrap_or_default()
    };
    for item in &value.items {
        let existed = before
            .items
            .iter()
            .any(|b| b.id == item.id && b.kind() == item.kind());
        if let (ItemBody::ToolResult { call_id, name, .. }, false) = (&item.body, existed) {
            prop_assert_eq!(name, &call_name(call_id), "new result {:?}", item);
        }
    }
    Ok(())
}
