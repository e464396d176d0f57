//! [`Items`]: a model request's items, shared whole (issue 47).
//!
//! A session sends its whole history at every model call. Each item is reference-counted
//! (`Arc<Item>`, issue 22), so a hook that edits one copies that one only; and the list itself is
//! shared too: the session's transcript keeps its items as an [`Items`], and a request built from
//! it holds the same list. Building a request, handing it on and dropping it cost one pointer,
//! whatever the length of the conversation; a profile of a 12,000-turn session had a `Arc` per
//! item copied and released at every call as 14% of its samples (docs/performance.md, "Long
//! sessions").
//!
//! Reading goes through `Deref` to a slice. Editing goes through [`Items::to_mut`] (or
//! [`Items::push`], [`Items::replace`]), which copies the list first when anything else shares it
//! (copy on write), so the transcript and every other holder keep theirs. When nothing else
//! does, the edit is in place: the transcript appends a turn's records without a copy once the
//! turn's request is dropped.
//!
//! The list also knows which kinds of item carry images ([`Items::images`]), so a request that
//! carries none is seen to need no preparing for its provider (SPEC R5.5, R5.6) without looking
//! at every item. [`Items::push`] and [`Items::replace`] keep that answer; [`Items::to_mut`]
//! forgets it, and the next question counts again, once.
//!
//! A list keeps its [`Lineage`] while it is only appended to, so whoever hashed or encoded its
//! first items can tell that a later request still starts with them without comparing them.
//!
//! On the wire (serde) an [`Items`] is a JSON array of its items, exactly what a
//! `Vec<Item>` writes: the sharing is invisible to plugins, providers and replay files.

use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::{Item, ItemBody};

/// A model request's items, in order: one shared list (see the module's documentation).
#[derive(Clone, Default)]
pub struct Items(Arc<Shared>);

/// What [`Items`] shares: the items, how many of them carry images (known until an edit
/// through [`Items::to_mut`], then counted again when asked), and the list's lineage.
struct Shared {
    items: Vec<Arc<Item>>,
    images: OnceLock<ImageItems>,
    lineage: Lineage,
}

impl Shared {
    fn new(items: Vec<Arc<Item>>) -> Self {
        Self {
            items,
            images: OnceLock::new(),
            lineage: Lineage::fresh(),
        }
    }
}

impl Default for Shared {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl Clone for Shared {
    /// A copy (made to be edited, by copy on write) starts a lineage of its own.
    fn clone(&self) -> Self {
        Self {
            items: self.items.clone(),
            images: self.images.clone(),
            lineage: Lineage::fresh(),
        }
    }
}

/// Which append-only history a list is (see [`Items::lineage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lineage(u64);

impl Lineage {
    /// A lineage no list had before.
    fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// How many items of a list carry images, by what a provider does with them: what decides
/// whether preparing a request for its provider changes it (SPEC R5.5, R5.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageItems {
    /// System and assistant items with images: those images are sent as text (SPEC R5.5).
    pub as_text: usize,
    /// User and tool-result items with images: those are attached, or dropped when the request
    /// cannot carry images (SPEC R5.6).
    pub attached: usize,
}

impl ImageItems {
    /// The count for one item.
    pub(crate) fn of(item: &Item) -> Self {
        match &item.body {
            ItemBody::System { images, .. } | ItemBody::Assistant { images, .. } => Self {
                as_text: usize::from(!images.is_empty()),
                attached: 0,
            },
            ItemBody::User { images, .. } | ItemBody::ToolResult { images, .. } => Self {
                as_text: 0,
                attached: usize::from(!images.is_empty()),
            },
            ItemBody::ToolCall { .. } | ItemBody::Reasoning { .. } => Self::default(),
        }
    }

    /// The count of every item of `items`.
    fn count(items: &[Arc<Item>]) -> Self {
        items
            .iter()
            .fold(Self::default(), |sum, item| sum.plus(item))
    }

    fn plus(self, item: &Item) -> Self {
        let one = Self::of(item);
        Self {
            as_text: self.as_text + one.as_text,
            attached: self.attached + one.attached,
        }
    }

    fn minus(self, item: &Item) -> Self {
        let one = Self::of(item);
        Self {
            as_text: self.as_text.saturating_sub(one.as_text),
            attached: self.attached.saturating_sub(one.attached),
        }
    }

    /// Whether any item carries images.
    pub fn any(self) -> bool {
        self.as_text > 0 || self.attached > 0
    }

    /// Whether preparing these items for the provider changes any (SPEC R5.5: images on system
    /// and assistant items become text; R5.6: a request that cannot carry images carries none).
    pub fn need_preparing(self, accepts_images: bool) -> bool {
        self.as_text > 0 || (!accepts_images && self.attached > 0)
    }
}

impl Items {
    /// No items.
    pub fn new() -> Self {
        Self::default()
    }

    /// The items to edit, copied first if anything else shares them (copy on write); the
    /// items themselves stay shared, so edit one with [`Arc::make_mut`] to copy only it.
    /// Forgets which items carry images (counted again when next asked), and starts a new
    /// [`Lineage`].
    pub fn to_mut(&mut self) -> &mut Vec<Arc<Item>> {
        let shared = Arc::make_mut(&mut self.0);
        shared.images.take();
        shared.lineage = Lineage::fresh();
        &mut shared.items
    }

    /// Appends `item` (copying the list first if anything else shares it), keeping the count
    /// of items with images and, when nothing else shares the list, its [`Lineage`].
    pub fn push(&mut self, item: Arc<Item>) {
        let shared = Arc::make_mut(&mut self.0);
        if let Some(images) = shared.images.get_mut() {
            *images = images.plus(&item);
        }
        shared.items.push(item);
    }

    /// Puts `item` at `index` in place of the item there (copying the list first if anything
    /// else shares it), keeping the count of items with images; a new [`Lineage`] starts.
    /// Returns the item replaced, or `None` (and changes nothing) when `index` is out of range.
    pub fn replace(&mut self, index: usize, item: Arc<Item>) -> Option<Arc<Item>> {
        if index >= self.len() {
            return None;
        }
        let shared = Arc::make_mut(&mut self.0);
        shared.lineage = Lineage::fresh();
        let old = std::mem::replace(&mut shared.items[index], item);
        if let Some(images) = shared.images.get_mut() {
            *images = images.minus(&old).plus(&shared.items[index]);
        }
        Some(old)
    }

    /// How many items carry images, by kind: counted once per list and kept as it grows.
    pub fn images(&self) -> ImageItems {
        *self
            .0
            .images
            .get_or_init(|| ImageItems::count(&self.0.items))
    }

    /// The list's lineage. A list keeps it while it is only appended to ([`Items::push`],
    /// [`Extend`]); a copy, and any other edit, starts a new one, and no two lists ever have the
    /// same. So two requests whose lists have one lineage hold one list at two moments: the
    /// shorter's items are the longer's first items, the same allocations. A hash of a request's
    /// first items can be resumed on that alone (host/src/turn/digest.rs).
    pub fn lineage(&self) -> Lineage {
        self.0.lineage
    }

    /// Whether anything else holds this list: an edit would copy it first.
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }

    /// Whether `self` and `other` are the same shared list (not merely equal items).
    pub fn shares_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for Items {
    type Target = [Arc<Item>];

    fn deref(&self) -> &[Arc<Item>] {
        &self.0.items
    }
}

impl From<Vec<Arc<Item>>> for Items {
    fn from(items: Vec<Arc<Item>>) -> Self {
        Self(Arc::new(Shared::new(items)))
    }
}

impl FromIterator<Arc<Item>> for Items {
    fn from_iter<I: IntoIterator<Item = Arc<Item>>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl FromIterator<Item> for Items {
    fn from_iter<I: IntoIterator<Item = Item>>(iter: I) -> Self {
        iter.into_iter().map(Arc::new).collect()
    }
}

impl Extend<Arc<Item>> for Items {
    /// Appends each item as [`Items::push`] does.
    fn extend<I: IntoIterator<Item = Arc<Item>>>(&mut self, iter: I) {
        for item in iter {
            self.push(item);
        }
    }
}

impl<'a> IntoIterator for &'a Items {
    type Item = &'a Arc<Item>;
    type IntoIter = std::slice::Iter<'a, Arc<Item>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Items {
    fn eq(&self, other: &Self) -> bool {
        self.shares_with(other) || self.0.items == other.0.items
    }
}

impl Eq for Items {}

impl fmt::Debug for Items {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0.items, f)
    }
}

impl Serialize for Items {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.items.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Items {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Arc<Item>>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ImageRef, MediaType};

    fn user(id: &str, images: Vec<ImageRef>) -> Arc<Item> {
        Arc::new(Item::new(
            id,
            ItemBody::User {
                text: id.into(),
                images,
            },
        ))
    }

    fn png(number: u32) -> ImageRef {
        ImageRef {
            number,
            media_type: MediaType::Png,
        }
    }

    #[test]
    fn a_clone_shares_the_list_and_an_edit_copies_it() {
        let mut first: Items = vec![user("a", Vec::new()), user("b", Vec::new())].into();
        let second = first.clone();
        assert!(first.shares_with(&second));
        first.to_mut().pop();
        assert!(!first.shares_with(&second));
        assert_eq!((first.len(), second.len()), (1, 2));
        // The items themselves are still the same allocations.
        assert!(Arc::ptr_eq(&first[0], &second[0]));
    }

    #[test]
    fn a_list_nothing_else_shares_grows_in_place() {
        let mut items: Items = vec![user("a", Vec::new())].into();
        let before = Arc::as_ptr(&items.0);
        let request = items.clone();
        drop(request);
        items.push(user("b", Vec::new()));
        assert_eq!(Arc::as_ptr(&items.0), before);
    }

    #[test]
    fn a_lineage_lasts_while_the_list_is_only_appended_to() {
        let mut items: Items = vec![user("a", Vec::new())].into();
        let first = items.lineage();
        let request = items.clone();
        assert_eq!(request.lineage(), first);
        drop(request);
        items.push(user("b", Vec::new()));
        assert_eq!(items.lineage(), first, "appended in place");
        let held = items.clone();
        items.push(user("c", Vec::new()));
        assert_ne!(items.lineage(), first, "a copy starts its own");
        assert_eq!(held.lineage(), first);
        let second = items.lineage();
        items.replace(0, user("z", Vec::new()));
        assert_ne!(items.lineage(), second);
        let third = items.lineage();
        let _ = items.to_mut();
        assert_ne!(items.lineage(), third);
        assert_ne!(Items::new().lineage(), Items::new().lineage());
    }

    #[test]
    fn the_image_count_follows_pushes_replacements_and_edits() {
        let mut items: Items = vec![user("a", Vec::new())].into();
        assert!(!items.images().any());
        items.push(user("b", vec![png(1)]));
        assert_eq!(items.images().attached, 1);
        let shared = items.clone();
        items.replace(1, user("b", Vec::new()));
        assert!(!items.images().any());
        assert_eq!(
            shared.images().attached,
            1,
            "the other holder keeps its count"
        );
        if let ItemBody::User { images, .. } = &mut Arc::make_mut(&mut items.to_mut()[0]).body {
            images.push(png(2));
        }
        assert_eq!(items.images().attached, 1);
        assert_eq!(items.replace(5, user("c", Vec::new())), None);
    }

    #[test]
    fn the_wire_shape_is_a_list_of_items() {
        let items: Items = vec![user("a", vec![png(1)])].into();
        let plain: Vec<Item> = items.iter().map(|i| Item::clone(i)).collect();
        let json = serde_json::to_string(&items).ok();
        assert_eq!(json, serde_json::to_string(&plain).ok());
        let back: Option<Items> = json.and_then(|j| serde_json::from_str(&j).ok());
        assert_eq!(back, Some(items));
    }
}
