//! `rebuild_model` may rebuild one outbound request outright; the host refuses only what it
//! cannot represent (SPEC R0.4, R1, R5.1 to R5.6).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::model::{HeldImages, ImageRef, Item, ItemBody, ItemId, ItemKind, ModelRequest};
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
    // Items a hook handed back untouched (the same shared item at the same place) keep their
    // identity and need no normalising: only the rest is looked at, so the cost follows the
    // change, not the length of the conversation (issue 22). The ids of `before` are unique (the
    // host assigns them, and every admitted request keeps them so), so those kept are too.
    let kept = proposed
        .items
        .iter()
        .zip(&before.items)
        .take_while(|(p, b)| Arc::ptr_eq(p, b))
        .count();
    let lookup = Lookup::new(&before.items, &proposed.items, kept);
    if lookup.repeats_an_id() {
        return Err(Refusal::RepeatedItem);
    }
    // Each new item with its original (same id, same kind), if it had one.
    let priors: Vec<Option<&Item>> = proposed.items[kept..]
        .iter()
        .map(|item| lookup.prior(&item.id).filter(|b| b.kind() == item.kind()))
        .collect();
    // A new tool result takes its name from its call: looked up only when there is one.
    let new_result = proposed.items[kept..]
        .iter()
        .zip(&priors)
        .any(|(item, prior)| prior.is_none() && item.kind() == ItemKind::ToolResult);
    let call_names = if new_result {
        call_names(&before.items, &proposed.items)
    } else {
        HashMap::new()
    };
    let accepts_images = proposed.accepts_images;
    let mut items = proposed.items;
    if kept < items.len() {
        for (item, prior) in items.to_mut()[kept..].iter_mut().zip(priors) {
            rebuilt_item(held, accepts_images, prior, item, &call_names)?;
        }
    }
    Ok(ModelRequest { items, ..proposed })
}

/// The ids of a proposed request, for the items after the `kept` prefix: looked up by scanning
/// when few items are new (the usual raw hook adds or edits one or two), else through a map.
struct Lookup<'b, 'p> {
    before: &'b [Arc<Item>],
    all: &'p [Arc<Item>],
    kept: usize,
    prior: Option<HashMap<&'b ItemId, &'b Item>>,
}

/// Up to this many new items are checked by scanning (one scan of the request per new item).
const SCANNED: usize = 8;

impl<'b, 'p> Lookup<'b, 'p> {
    fn new(before: &'b [Arc<Item>], all: &'p [Arc<Item>], kept: usize) -> Self {
        let prior =
            (all.len() - kept > SCANNED).then(|| before.iter().map(|i| (&i.id, &**i)).collect());
        Self {
            before,
            all,
            kept,
            prior,
        }
    }

    /// Whether two items of the proposed request share an id (two kept ones cannot).
    fn repeats_an_id(&self) -> bool {
        if self.prior.is_some() {
            let mut seen = HashSet::with_capacity(self.all.len());
            return !self.all.iter().all(|item| seen.insert(&item.id));
        }
        let (kept, new) = self.all.split_at(self.kept);
        new.iter().enumerate().any(|(n, item)| {
            kept.iter()
                .chain(&new[..n])
                .any(|other| other.id == item.id)
        })
    }

    /// The item of `before` with this id.
    fn prior(&self, id: &ItemId) -> Option<&'b Item> {
        match &self.prior {
            Some(prior) => prior.get(id).copied(),
            None => self.before.iter().find(|b| b.id == *id).map(|b| &**b),
        }
    }
}

/// Tool names by call id, from the proposed request first, then the original.
fn call_names(before: &[Arc<Item>], proposed: &[Arc<Item>]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for item in before.iter().chain(proposed) {
        if let ItemBody::ToolCall { call_id, name, .. } = &item.body {
            names.insert(call_id.clone(), name.clone());
        }
    }
    names
}

/// Checks and normalises one item that is not the same shared item at the same place; the
/// item is copied only if normalising changes it.
fn rebuilt_item(
    held: &HeldImages,
    accepts_images: bool,
    prior: Option<&Item>,
    item: &mut Arc<Item>,
    call_names: &HashMap<String, String>,
) -> Result<(), Refusal> {
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
    match (&item.body, prior.map(|p| &p.body)) {
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
            let state = match prior_text {
                Some((t, state)) if t == text => state.clone(),
                _ => None,
            };
            if *provider_state != state {
                if let ItemBody::Reasoning { provider_state, .. } = &mut Arc::make_mut(item).body {
                    *provider_state = state;
                }
            }
        }
        (ItemBody::ToolResult { call_id, name, .. }, None) => {
            let derived = call_names.get(call_id).cloned().unwrap_or_default();
            if *name != derived {
                if let ItemBody::ToolResult { name, .. } = &mut Arc::make_mut(item).body {
                    *name = derived;
                }
            }
        }
        _ => {}
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Purpose;

    fn user(id: &str) -> Item {
        Item::new(
            id,
            ItemBody::User {
                text: id.into(),
                images: Vec::new(),
            },
        )
    }

    fn request(items: impl IntoIterator<Item = Item>) -> ModelRequest {
        ModelRequest::new(Purpose::Work, false, items)
    }

    #[test]
    fn many_new_items_are_checked_as_a_few_are() {
        let before = request((0..3).map(|n| user(&format!("u{n}"))));
        let held = HeldImages::default();
        // More new items than are scanned: the map path.
        let mut many = before.clone();
        many.items
            .extend((0..=SCANNED).map(|n| Arc::new(user(&format!("new{n}")))));
        let call = Item::new(
            "call",
            ItemBody::ToolCall {
                call_id: "c1".into(),
                name: "read_file".into(),
                arguments: serde_json::json!({}),
            },
        );
        let result = Item::new(
            "result",
            ItemBody::ToolResult {
                call_id: "c1".into(),
                name: "forged".into(),
                text: "ok".into(),
                images: Vec::new(),
                success: true,
            },
        );
        many.items.push(Arc::new(call));
        many.items.push(Arc::new(result));
        let admitted = rebuild_model(&held, &before, many.clone());
        let Ok(admitted) = admitted else {
            panic!("refused: {admitted:?}");
        };
        assert_eq!(admitted.items.len(), many.items.len());
        assert!(
            Arc::ptr_eq(&admitted.items[0], &before.items[0]),
            "kept, not copied"
        );
        match &admitted.items.last().map(|i| &i.body) {
            Some(ItemBody::ToolResult { name, .. }) => assert_eq!(name, "read_file"),
            other => panic!("{other:?}"),
        }
        // A repeated id is found among many new items, and between a kept and a new one.
        let mut repeated = many.clone();
        repeated.items.push(Arc::new(user("new0")));
        assert_eq!(
            rebuild_model(&held, &before, repeated),
            Err(Refusal::RepeatedItem)
        );
        let mut few = before.clone();
        few.items.push(Arc::new(user("u1")));
        assert_eq!(
            rebuild_model(&held, &before, few),
            Err(Refusal::RepeatedItem)
        );
    }
}
