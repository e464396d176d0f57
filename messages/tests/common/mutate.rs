//! Edits of a request that `transform_model` must accept or refuse, each with the refusal the
//! spec names for it. The property tests apply any number of allowed edits and at most one
//! forbidden one, and know the answer the rule must give.

use std::sync::Arc;

use hookline_messages::model::{ImageRef, Item, ItemBody, ItemKind, ModelRequest, Purpose};
use hookline_messages::note::Refusal;
use proptest::prelude::*;
use proptest::sample::Index;

use super::arb;

/// An edit SPEC P2.5 and P3.5 allow.
#[derive(Clone, Debug)]
pub enum Allowed {
    /// New text on a user, assistant or tool-result item.
    Text(Index, String),
    /// New, non-empty reasoning text.
    Reasoning(Index, String),
    /// Drop one image reference.
    DropImage(Index, Index),
    /// A forged provider state: the rule puts the host's back (or none).
    ForgeState(Index, Option<String>),
}

/// An edit SPEC P2.5 and P3.9 forbid.
#[derive(Clone, Debug)]
pub enum Forbidden {
    Purpose(Purpose),
    FlipImages,
    Add(Index, ItemBody),
    Drop(Index),
    Swap(Index, Index),
    NewId(Index),
    Rekind(Index, ItemBody),
    EditSystem(Index),
    EditCall(Index, u8),
    ResultCallId(Index),
    ResultName(Index),
    ResultSuccess(Index),
    EmptyReasoning(Index),
    AddImage(Index, ImageRef),
}

pub fn allowed() -> impl Strategy<Value = Allowed> {
    prop_oneof![
        (any::<Index>(), "[A-Z]{0,5}").prop_map(|(i, t)| Allowed::Text(i, t)),
        (any::<Index>(), "[A-Z]{1,5}").prop_map(|(i, t)| Allowed::Reasoning(i, t)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, j)| Allowed::DropImage(i, j)),
        (any::<Index>(), proptest::option::of("f[0-9]"))
            .prop_map(|(i, s)| Allowed::ForgeState(i, s)),
    ]
}

pub fn forbidden() -> impl Strategy<Value = Forbidden> {
    prop_oneof![
        arb::purpose().prop_map(Forbidden::Purpose),
        Just(Forbidden::FlipImages),
        (any::<Index>(), arb::body(arb::any_image())).prop_map(|(i, b)| Forbidden::Add(i, b)),
        any::<Index>().prop_map(Forbidden::Drop),
        (any::<Index>(), any::<Index>()).prop_map(|(i, j)| Forbidden::Swap(i, j)),
        any::<Index>().prop_map(Forbidden::NewId),
        (any::<Index>(), arb::body(arb::any_image())).prop_map(|(i, b)| Forbidden::Rekind(i, b)),
        any::<Index>().prop_map(Forbidden::EditSystem),
        (any::<Index>(), 0u8..3).prop_map(|(i, f)| Forbidden::EditCall(i, f)),
        any::<Index>().prop_map(Forbidden::ResultCallId),
        any::<Index>().prop_map(Forbidden::ResultName),
        any::<Index>().prop_map(Forbidden::ResultSuccess),
        any::<Index>().prop_map(Forbidden::EmptyReasoning),
        (any::<Index>(), arb::any_image()).prop_map(|(i, img)| Forbidden::AddImage(i, img)),
    ]
}

/// The `index`-th item (wrapping) whose body matches `pick`.
fn pick<'a>(
    items: &'a mut [Arc<Item>],
    index: &Index,
    pick: impl Fn(&ItemBody) -> bool,
) -> Option<&'a mut Item> {
    let matching: Vec<usize> = (0..items.len()).filter(|&n| pick(&items[n].body)).collect();
    if matching.is_empty() {
        return None;
    }
    let n = matching[index.index(matching.len())];
    items.get_mut(n).map(Arc::make_mut)
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

/// Applies an allowed edit to `proposed` (a copy of `before`).
pub fn apply_allowed(before: &ModelRequest, proposed: &mut ModelRequest, edit: &Allowed) {
    let items = proposed.items.to_mut();
    match edit {
        Allowed::Text(i, new) => {
            let editable = |b: &ItemBody| {
                matches!(
                    b,
                    ItemBody::User { .. }
                        | ItemBody::Assistant { .. }
                        | ItemBody::ToolResult { .. }
                )
            };
            if let Some(item) = pick(items, i, editable) {
                match &mut item.body {
                    ItemBody::User { text, .. }
                    | ItemBody::Assistant { text, .. }
                    | ItemBody::ToolResult { text, .. } => *text = new.clone(),
                    _ => {}
                }
            }
        }
        Allowed::Reasoning(i, new) => {
            if let Some(item) = pick(items, i, |b| matches!(b, ItemBody::Reasoning { .. })) {
                if let ItemBody::Reasoning { text, .. } = &mut item.body {
                    *text = new.clone();
                }
            }
        }
        Allowed::DropImage(i, j) => {
            let with_images = |b: &ItemBody| !b.images().is_empty() && b.kind() != ItemKind::System;
            if let Some(images) =
                pick(items, i, with_images).and_then(|item| images_of(&mut item.body))
            {
                images.remove(j.index(images.len()));
            }
        }
        Allowed::ForgeState(i, forged) => {
            if let Some(item) = pick(items, i, |b| matches!(b, ItemBody::Reasoning { .. })) {
                if let ItemBody::Reasoning { provider_state, .. } = &mut item.body {
                    provider_state.clone_from(forged);
                }
            }
        }
    }
    let _ = before;
}

/// Applies a forbidden edit to `proposed` and returns the refusal it must earn, or `None` when
/// the request had nothing to apply it to (or the edit changed nothing forbidden).
pub fn apply_forbidden(
    before: &ModelRequest,
    proposed: &mut ModelRequest,
    edit: &Forbidden,
) -> Option<Refusal> {
    let items = proposed.items.to_mut();
    let any = |_: &ItemBody| true;
    match edit {
        Forbidden::Purpose(p) if *p != proposed.purpose => {
            proposed.purpose = *p;
            Some(Refusal::ChangedRequestPurpose)
        }
        Forbidden::Purpose(_) => None,
        Forbidden::FlipImages => {
            proposed.accepts_images = !proposed.accepts_images;
            Some(Refusal::ChangedRequestPurpose)
        }
        Forbidden::Add(i, body) => {
            let at = i.index(items.len() + 1);
            items.insert(at, Arc::new(Item::new("added", body.clone())));
            Some(Refusal::AddedItem)
        }
        Forbidden::Drop(i) if !items.is_empty() => {
            items.remove(i.index(items.len()));
            Some(Refusal::DroppedItem)
        }
        Forbidden::Swap(i, j) if items.len() >= 2 => {
            let (a, b) = (i.index(items.len()), j.index(items.len() - 1));
            let b = if b >= a { b + 1 } else { b };
            items.swap(a, b);
            Some(Refusal::ReorderedItems)
        }
        Forbidden::NewId(i) => {
            let item = pick(items, i, any)?;
            item.id = "renamed".into();
            Some(Refusal::ChangedItemId)
        }
        Forbidden::Rekind(i, body) => {
            let item = pick(items, i, any)?;
            let (from, to) = (item.kind(), body.kind());
            if from == to {
                return None;
            }
            item.body = body.clone();
            Some(if from == ItemKind::System || to == ItemKind::System {
                Refusal::EditedSystemMessage
            } else if from.is_message() && to.is_message() {
                Refusal::ChangedRole
            } else {
                Refusal::ChangedItemKind
            })
        }
        Forbidden::EditSystem(i) => {
            let item = pick(items, i, |b| matches!(b, ItemBody::System { .. }))?;
            if let ItemBody::System { text, .. } = &mut item.body {
                text.push('!');
            }
            Some(Refusal::EditedSystemMessage)
        }
        Forbidden::EditCall(i, field) => {
            let item = pick(items, i, |b| matches!(b, ItemBody::ToolCall { .. }))?;
            if let ItemBody::ToolCall {
                call_id,
                name,
                arguments,
            } = &mut item.body
            {
                match field {
                    0 => call_id.push('x'),
                    1 => name.push('x'),
                    _ => *arguments = serde_json::json!("other"),
                }
            }
            Some(Refusal::ChangedToolCall)
        }
        Forbidden::ResultCallId(i) | Forbidden::ResultName(i) | Forbidden::ResultSuccess(i) => {
            let item = pick(items, i, |b| matches!(b, ItemBody::ToolResult { .. }))?;
            if let ItemBody::ToolResult {
                call_id,
                name,
                success,
                ..
            } = &mut item.body
            {
                match edit {
                    Forbidden::ResultCallId(_) => call_id.push('x'),
                    Forbidden::ResultName(_) => name.push('x'),
                    _ => *success = !*success,
                }
            }
            Some(match edit {
                Forbidden::ResultCallId(_) => Refusal::ChangedResultCallId,
                Forbidden::ResultName(_) => Refusal::ChangedResultName,
                _ => Refusal::ChangedResultSuccess,
            })
        }
        Forbidden::EmptyReasoning(i) => {
            let non_empty: Vec<_> = before
                .items
                .iter()
                .filter(|b| matches!(&b.body, ItemBody::Reasoning { text, .. } if !text.is_empty()))
                .map(|b| b.id.clone())
                .collect();
            let reasoning = |b: &ItemBody| matches!(b, ItemBody::Reasoning { .. });
            let item = pick(items, i, reasoning).filter(|it| non_empty.contains(&it.id))?;
            if let ItemBody::Reasoning { text, .. } = &mut item.body {
                text.clear();
            }
            Some(Refusal::EmptyReasoning)
        }
        Forbidden::AddImage(i, image) => {
            let carries = |b: &ItemBody| {
                matches!(
                    b,
                    ItemBody::User { .. }
                        | ItemBody::Assistant { .. }
                        | ItemBody::ToolResult { .. }
                )
            };
            let item = pick(items, i, carries)?;
            let had = before
                .items
                .iter()
                .find(|b| b.id == item.id)
                .map_or(0, |b| {
                    b.body.images().iter().filter(|x| *x == image).count()
                });
            let images = images_of(&mut item.body)?;
            images.push(*image);
            let now = images.iter().filter(|x| *x == image).count();
            (now > had).then_some(Refusal::AddedImage)
        }
        Forbidden::Drop(_) | Forbidden::Swap(..) => None,
    }
}

/// What `transform_model` must hand on for an accepted proposal: the proposal, with each
/// reasoning item's provider state taken from the host's item when its text is unchanged and
/// dropped otherwise (SPEC R5.3, applied to `transform_model` as documented).
pub fn normalised(before: &ModelRequest, mut proposed: ModelRequest) -> ModelRequest {
    for (b, p) in before.items.iter().zip(proposed.items.to_mut()) {
        if let (
            ItemBody::Reasoning {
                text: bt,
                provider_state: bs,
            },
            ItemBody::Reasoning {
                text,
                provider_state,
            },
        ) = (&b.body, &mut Arc::make_mut(p).body)
        {
            *provider_state = if bt == text { bs.clone() } else { None };
        }
    }
    proposed
}
