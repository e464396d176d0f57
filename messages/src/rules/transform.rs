//! `transform_model` changes texts of one outbound call, nothing structural
//! (SPEC P2.5, P3.5, P3.8, P3.9).

use std::sync::Arc;

use crate::model::{ImageRef, Item, ItemBody, ItemKind, ModelRequest};
use crate::note::Refusal;

/// Admits a `transform_model` replacement.
///
/// Allowed: new text on user, assistant and tool-result items; dropping image references an item
/// already has (SPEC P3.5); new reasoning text, which drops the provider state (as SPEC R5.3).
/// Everything structural is refused with a specific reason (SPEC P3.9): items added, dropped,
/// reordered or re-identified, a role or kind changed, the system message edited, a tool call
/// changed, a tool result's call id, name or success changed, reasoning emptied, an image added.
///
/// # Errors
/// The first [`Refusal`] found, checking the request, then its structure, then item by item.
pub fn transform_model(
    before: &ModelRequest,
    proposed: ModelRequest,
) -> Result<ModelRequest, Refusal> {
    if proposed.purpose != before.purpose || proposed.accepts_images != before.accepts_images {
        return Err(Refusal::ChangedRequestPurpose);
    }
    same_structure(&before.items, &proposed.items)?;
    let mut items = proposed.items;
    // An item handed back untouched (the same shared item) passes as it is: only the items a
    // hook rewrote are checked, so the cost follows the change (issue 22); a request handed
    // back whole is not copied (issue 47).
    let rewritten = |(b, p): (&Arc<Item>, &Arc<Item>)| !Arc::ptr_eq(b, p);
    if before.items.iter().zip(items.iter()).any(rewritten) {
        for (b, p) in before.items.iter().zip(items.to_mut()) {
            if !Arc::ptr_eq(b, p) {
                transformed_item(b, p)?;
            }
        }
    }
    Ok(ModelRequest { items, ..proposed })
}

fn same_structure(before: &[Arc<Item>], proposed: &[Arc<Item>]) -> Result<(), Refusal> {
    if proposed.len() > before.len() {
        return Err(Refusal::AddedItem);
    }
    if proposed.len() < before.len() {
        return Err(Refusal::DroppedItem);
    }
    if before
        .iter()
        .zip(proposed)
        .all(|(b, p)| Arc::ptr_eq(b, p) || b.id == p.id)
    {
        return Ok(());
    }
    let mut before_ids: Vec<_> = before.iter().map(|i| &i.id).collect();
    let mut proposed_ids: Vec<_> = proposed.iter().map(|i| &i.id).collect();
    before_ids.sort_unstable();
    proposed_ids.sort_unstable();
    if before_ids == proposed_ids {
        Err(Refusal::ReorderedItems)
    } else {
        Err(Refusal::ChangedItemId)
    }
}

/// Checks one rewritten item against its original; normalises its reasoning's provider state
/// (copying the item only when that changes it).
fn transformed_item(before: &Item, proposed: &mut Arc<Item>) -> Result<(), Refusal> {
    let (bk, pk) = (before.kind(), proposed.kind());
    if bk != pk {
        return Err(if bk == ItemKind::System || pk == ItemKind::System {
            Refusal::EditedSystemMessage
        } else if bk.is_message() && pk.is_message() {
            Refusal::ChangedRole
        } else {
            Refusal::ChangedItemKind
        });
    }
    match (&before.body, &proposed.body) {
        (b @ ItemBody::System { .. }, p) if b != p => return Err(Refusal::EditedSystemMessage),
        (b @ ItemBody::ToolCall { .. }, p) if b != p => return Err(Refusal::ChangedToolCall),
        (ItemBody::User { images: bi, .. }, ItemBody::User { images, .. })
        | (ItemBody::Assistant { images: bi, .. }, ItemBody::Assistant { images, .. }) => {
            only_dropped(bi, images)?;
        }
        (
            ItemBody::ToolResult {
                call_id: bc,
                name: bn,
                images: bi,
                success: bs,
                ..
            },
            ItemBody::ToolResult {
                call_id,
                name,
                images,
                success,
                ..
            },
        ) => {
            if bc != call_id {
                return Err(Refusal::ChangedResultCallId);
            }
            if bn != name {
                return Err(Refusal::ChangedResultName);
            }
            if bs != success {
                return Err(Refusal::ChangedResultSuccess);
            }
            only_dropped(bi, images)?;
        }
        (
            ItemBody::Reasoning {
                text: bt,
                provider_state: bs,
            },
            ItemBody::Reasoning {
                text,
                provider_state,
            },
        ) => {
            if text.is_empty() && !bt.is_empty() {
                return Err(Refusal::EmptyReasoning);
            }
            let state = if bt == text { bs.clone() } else { None };
            if *provider_state != state {
                if let ItemBody::Reasoning { provider_state, .. } =
                    &mut Arc::make_mut(proposed).body
                {
                    *provider_state = state;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Checks that `proposed` names only images `before` has, each at most as often (SPEC P3.5).
fn only_dropped(before: &[ImageRef], proposed: &[ImageRef]) -> Result<(), Refusal> {
    let mut available: Vec<Option<&ImageRef>> = before.iter().map(Some).collect();
    for image in proposed {
        let slot = available.iter_mut().find(|slot| **slot == Some(image));
        match slot {
            Some(slot) => *slot = None,
            None => return Err(Refusal::AddedImage),
        }
    }
    Ok(())
}
