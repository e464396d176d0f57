//! `rebuild_model` may rebuild one outbound request outright; the host refuses only what it
//! cannot represent (SPEC R0.4, R1, R5.1 to R5.6).

use std::collections::{HashMap, HashSet};

use crate::model::{HeldImages, ImageRef, Item, ItemBody, ItemId, ModelRequest};
use crate::note::Refusal;

/// Admits a `rebuild_model` replacement and normalises it.
///
/// Accepted: dropping, reordering, adding or rewriting items of any kind, splitting a tool call
/// from its result. Normalised (SPEC R5.2, R5.3): an item keeps its identity only when its id
/// comes back on an item of the same kind; a new tool result takes its name from its call; new
/// reasoning, and reasoning whose text changed, carry no provider state.
///
/// # Errors
/// [`Refusal::ChangedRequestPurpose`], [`Refusal::RepeatedItem`], [`Refusal::EmptyReasoning`]
/// (unless that reasoning was already empty), [`Refusal::ImageOnTextOnlyRequest`] for an image
/// moved onto a request that cannot carry images (SPEC R5.6), [`Refusal::AddedImage`] for an image
/// the session does not hold.
pub fn rebuild_model(
    held: &HeldImages,
    before: &ModelRequest,
    proposed: ModelRequest,
) -> Result<ModelRequest, Refusal> {
    if proposed.purpose != before.purpose || proposed.accepts_images != before.accepts_images {
        return Err(Refusal::ChangedRequestPurpose);
    }
    let mut seen = HashSet::with_capacity(proposed.items.len());
    if !proposed.items.iter().all(|item| seen.insert(&item.id)) {
        return Err(Refusal::RepeatedItem);
    }
    let prior: HashMap<&ItemId, &Item> = before.items.iter().map(|i| (&i.id, i)).collect();
    let call_names = call_names(&before.items, &proposed.items);
    let items = proposed
        .items
        .iter()
        .map(|item| {
            let same = prior
                .get(&item.id)
                .copied()
                .filter(|b| b.kind() == item.kind());
            rebuilt_item(
                held,
                proposed.accepts_images,
                same,
                item.clone(),
                &call_names,
            )
        })
        .collect::<Result<_, _>>()?;
    Ok(ModelRequest { items, ..proposed })
}

/// Tool names by call id, from the proposed request first, then the original.
fn call_names(before: &[Item], proposed: &[Item]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for item in before.iter().chain(proposed) {
        if let ItemBody::ToolCall { call_id, name, .. } = &item.body {
            names.insert(call_id.clone(), name.clone());
        }
    }
    names
}

fn rebuilt_item(
    held: &HeldImages,
    accepts_images: bool,
    prior: Option<&Item>,
    mut item: Item,
    call_names: &HashMap<String, String>,
) -> Result<Item, Refusal> {
    // Each attachment the item already had may stay once; a second copy is an added image.
    let mut kept: Vec<Option<&ImageRef>> = prior
        .map_or(&[][..], |p| p.body.images())
        .iter()
        .map(Some)
        .collect();
    for image in item.body.images() {
        match kept.iter_mut().find(|slot| **slot == Some(image)) {
            Some(slot) => *slot = None,
            None => check_image(held, accepts_images, image)?,
        }
    }
    match (&mut item.body, prior.map(|p| &p.body)) {
        (
            ItemBody::Reasoning {
                text,
                provider_state,
            },
            prior,
        ) => {
            let prior_text = match prior {
                Some(ItemBody::Reasoning {
                    text,
                    provider_state,
                }) => Some((text, provider_state)),
                _ => None,
            };
            if text.is_empty() && !prior_text.is_some_and(|(t, _)| t.is_empty()) {
                return Err(Refusal::EmptyReasoning);
            }
            *provider_state = match prior_text {
                Some((t, state)) if t == text => state.clone(),
                _ => None,
            };
        }
        (ItemBody::ToolResult { call_id, name, .. }, None) => {
            *name = call_names.get(call_id).cloned().unwrap_or_default();
        }
        _ => {}
    }
    Ok(item)
}

/// Checks an image the item did not already have: added or moved (SPEC R5.4, R5.6).
fn check_image(held: &HeldImages, accepts_images: bool, image: &ImageRef) -> Result<(), Refusal> {
    if !accepts_images {
        return Err(Refusal::ImageOnTextOnlyRequest);
    }
    if !held.holds(image) {
        return Err(Refusal::AddedImage);
    }
    Ok(())
}
