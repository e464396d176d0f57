//! Model requests and responses as hooks see them (SPEC P2.5, P2.6, P3.3 to P3.9, R1, R5).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use crate::items::{ImageItems, Items, Lineage};

/// Why an outbound model call is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    /// A working turn.
    Work,
    /// A planning turn.
    Plan,
    /// A side question: answered, never stored.
    Side,
    /// A compaction call.
    Compaction,
}

impl Purpose {
    /// Whether a failure of this call can earn the raw-change note (SPEC R5.7: work or plan only).
    pub fn is_turn_call(self) -> bool {
        matches!(self, Self::Work | Self::Plan)
    }
}

/// An image media type. Exactly these four exist (SPEC P3.3).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum MediaType {
    /// `image/png`
    #[serde(rename = "image/png")]
    Png,
    /// `image/jpeg`
    #[serde(rename = "image/jpeg")]
    Jpeg,
    /// `image/gif`
    #[serde(rename = "image/gif")]
    Gif,
    /// `image/webp`
    #[serde(rename = "image/webp")]
    Webp,
}

impl MediaType {
    /// The MIME string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// Parses one of the four MIME strings, exactly (case-sensitive, no parameters).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "image/png" => Some(Self::Png),
            "image/jpeg" => Some(Self::Jpeg),
            "image/gif" => Some(Self::Gif),
            "image/webp" => Some(Self::Webp),
            _ => None,
        }
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A marker for an image the session holds. Plugins see markers, never bytes (SPEC R5.4).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ImageRef {
    /// The session's number for the image.
    pub number: u32,
    /// Its media type.
    pub media_type: MediaType,
}

/// The images a session holds, by number: what a raw hook may name (SPEC R1, R5.4).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HeldImages(BTreeMap<u32, MediaType>);

impl HeldImages {
    /// Records that the session holds image `number` of type `media_type`.
    pub fn insert(&mut self, number: u32, media_type: MediaType) {
        self.0.insert(number, media_type);
    }

    /// Whether the session holds exactly this image (number and media type).
    pub fn holds(&self, image: &ImageRef) -> bool {
        self.0.get(&image.number) == Some(&image.media_type)
    }
}

impl FromIterator<ImageRef> for HeldImages {
    fn from_iter<I: IntoIterator<Item = ImageRef>>(iter: I) -> Self {
        Self(iter.into_iter().map(|i| (i.number, i.media_type)).collect())
    }
}

/// An item's id within one request. The host assigns them; hooks keep them (SPEC R5.2).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ItemId(pub String);

impl fmt::Debug for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl From<&str> for ItemId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

/// One item of a model request or response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    /// The item's id.
    pub id: ItemId,
    /// What the item is.
    #[serde(flatten)]
    pub body: ItemBody,
}

impl Item {
    /// An item with the given id and body.
    pub fn new(id: impl Into<String>, body: ItemBody) -> Self {
        Self {
            id: ItemId(id.into()),
            body,
        }
    }

    /// The item's kind.
    pub fn kind(&self) -> ItemKind {
        self.body.kind()
    }
}

/// The kinds of item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ItemKind {
    /// The system message.
    System,
    /// A user message.
    User,
    /// An assistant message.
    Assistant,
    /// A tool call the model made.
    ToolCall,
    /// A tool's result.
    ToolResult,
    /// Model reasoning.
    Reasoning,
}

impl ItemKind {
    /// Whether this kind is a chat message with a role (system, user, assistant).
    pub fn is_message(self) -> bool {
        matches!(self, Self::System | Self::User | Self::Assistant)
    }
}

/// An item's content, tagged by kind on the wire (`"kind": "user"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ItemBody {
    /// The system message.
    System {
        /// Its text.
        text: String,
        /// Images; sent to the model as plain text (SPEC R5.5).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// A user message.
    User {
        /// Its text.
        text: String,
        /// Attached images.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// An assistant message.
    Assistant {
        /// Its text.
        text: String,
        /// Images; sent to the model as plain text (SPEC R5.5).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// A tool call.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The arguments.
        arguments: serde_json::Value,
    },
    /// A tool result.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// The id of the call it answers.
        call_id: String,
        /// The tool name (for new results, derived from the call: SPEC R5.3).
        name: String,
        /// The result text.
        text: String,
        /// Attached images.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
        /// Whether the tool succeeded.
        success: bool,
    },
    /// Model reasoning.
    #[serde(rename_all = "camelCase")]
    Reasoning {
        /// The reasoning text.
        text: String,
        /// Opaque provider state. Never sent to plugins; dropped when a hook rewrites the
        /// text or adds reasoning (SPEC R5.3).
        #[serde(skip)]
        provider_state: Option<String>,
    },
}

impl ItemBody {
    /// The body's kind.
    pub fn kind(&self) -> ItemKind {
        match self {
            Self::System { .. } => ItemKind::System,
            Self::User { .. } => ItemKind::User,
            Self::Assistant { .. } => ItemKind::Assistant,
            Self::ToolCall { .. } => ItemKind::ToolCall,
            Self::ToolResult { .. } => ItemKind::ToolResult,
            Self::Reasoning { .. } => ItemKind::Reasoning,
        }
    }

    /// The images this item names (empty for kinds that carry none).
    pub fn images(&self) -> &[ImageRef] {
        match self {
            Self::System { images, .. }
            | Self::User { images, .. }
            | Self::Assistant { images, .. }
            | Self::ToolResult { images, .. } => images,
            Self::ToolCall { .. } | Self::Reasoning { .. } => &[],
        }
    }
}

/// One outbound model request, as `rebuild_model` and `transform_model` see it.
///
/// Its items are shared, not copied (issues 22 and 47): the list is an [`Items`], so cloning a
/// request (or building one from the session's transcript, which keeps its items the same way)
/// costs one pointer, and each item is reference-counted, so the conversation's stored prefix is
/// the same allocation in the transcript, in every hook's copy and in the request sent. A hook
/// edits an item with [`ModelRequest::item_mut`], which copies the list's pointers and that item
/// only. On the wire (serde) the items are written as themselves: the sharing is invisible to
/// plugins and providers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest {
    /// Why the call is made.
    pub purpose: Purpose,
    /// True only for work or plan calls on an image-capable model (SPEC R5.6).
    pub accepts_images: bool,
    /// The items, in the order they are sent.
    pub items: Items,
}

impl ModelRequest {
    /// A request of `items` (each put behind its own reference count).
    pub fn new(
        purpose: Purpose,
        accepts_images: bool,
        items: impl IntoIterator<Item = Item>,
    ) -> Self {
        Self {
            purpose,
            accepts_images,
            items: items.into_iter().collect(),
        }
    }

    /// The item at `index` to edit: copied first if anything else shares it (copy on write),
    /// so the stored conversation and other copies of the request keep their item.
    pub fn item_mut(&mut self, index: usize) -> Option<&mut Item> {
        if index >= self.items.len() {
            return None;
        }
        self.items.to_mut().get_mut(index).map(Arc::make_mut)
    }

    /// Whether a request of `purpose` on a model that does (or does not) take images may carry
    /// images (SPEC R5.6).
    pub fn accepts_images_for(purpose: Purpose, model_takes_images: bool) -> bool {
        model_takes_images && purpose.is_turn_call()
    }

    /// The request as the provider receives it: images on assistant and system messages become
    /// plain text (SPEC R5.5), and a request that cannot carry images carries none (SPEC R5.6).
    ///
    /// A request that needs no preparing is returned as it is, without looking at its items
    /// (their image count is kept with the list); otherwise only an item that changes is copied,
    /// the others stay shared.
    #[must_use]
    pub fn prepared_for_provider(mut self) -> Self {
        if !self.needs_preparing() {
            return self;
        }
        let accepts = self.accepts_images;
        for item in self.items.to_mut() {
            if !needs_preparing(item, accepts) {
                continue;
            }
            match &mut Arc::make_mut(item).body {
                ItemBody::System { text, images } | ItemBody::Assistant { text, images } => {
                    images_to_text(text, images)
                }
                ItemBody::User { images, .. } | ItemBody::ToolResult { images, .. } => {
                    images.clear()
                }
                _ => {}
            }
        }
        self
    }

    /// Whether [`ModelRequest::prepared_for_provider`] would change anything: answered from the
    /// items' image count, not by looking at each item.
    pub fn needs_preparing(&self) -> bool {
        self.items.images().need_preparing(self.accepts_images)
    }
}

/// Whether preparing the item for the provider changes it (SPEC R5.5, R5.6).
fn needs_preparing(item: &Item, accepts_images: bool) -> bool {
    ImageItems::of(item).need_preparing(accepts_images)
}

fn images_to_text(text: &mut String, images: &mut Vec<ImageRef>) {
    for image in images.drain(..) {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[image {}: {}]", image.number, image.media_type));
    }
}

/// Why a model call finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The model asked for tool calls.
    ToolCalls,
    /// The output limit was reached.
    Length,
    /// The provider filtered the answer.
    ContentFilter,
}

/// Token usage of one call, as the provider reported it: a count the provider did not report is
/// `None` (absent on the wire), never a made-up zero (issue 21).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Tokens sent, if reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Tokens received, if reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

impl Usage {
    /// Usage with both counts reported.
    #[must_use]
    pub const fn reported(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens: Some(input_tokens),
            output_tokens: Some(output_tokens),
        }
    }

    /// Whether the provider reported anything.
    #[must_use]
    pub const fn is_reported(&self) -> bool {
        self.input_tokens.is_some() || self.output_tokens.is_some()
    }
}

/// Token usage summed over a session's model calls (issue 21): what the session status, a
/// turn's answer and the metrics report. A count no call reported stays `None` (absent on the
/// wire), never a made-up zero.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// Input tokens over the calls that reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens over the calls that reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Model calls answered.
    pub model_calls: u64,
}

impl UsageTotals {
    /// Adds one answered call's usage.
    pub fn add(&mut self, usage: &Usage) {
        fn sum(total: &mut Option<u64>, more: Option<u64>) {
            if let Some(more) = more {
                *total = Some(total.unwrap_or(0).saturating_add(more));
            }
        }
        sum(&mut self.input_tokens, usage.input_tokens);
        sum(&mut self.output_tokens, usage.output_tokens);
        self.model_calls += 1;
    }

    /// What was added since `earlier` (totals of the same session taken before).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        let minus = |now: Option<u64>, then: Option<u64>| {
            now.map(|now| now.saturating_sub(then.unwrap_or(0)))
                .filter(|_| now != then)
        };
        Self {
            input_tokens: minus(self.input_tokens, earlier.input_tokens),
            output_tokens: minus(self.output_tokens, earlier.output_tokens),
            model_calls: self.model_calls.saturating_sub(earlier.model_calls),
        }
    }

    /// The totals when any call reported usage; `None` when none did (the provider reports
    /// none, or no call was answered).
    #[must_use]
    pub fn reported(self) -> Option<Self> {
        (self.input_tokens.is_some() || self.output_tokens.is_some()).then_some(self)
    }
}

/// Token usage per model that answered (issue 34 item 5): a session's turns, side questions and
/// compactions, each under the model that answered it. Sums to the session's [`UsageTotals`]
/// over the answers that name their model (archives written before they did name none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct UsageByModel(pub BTreeMap<String, UsageTotals>);

impl UsageByModel {
    /// Adds one answered call's usage to `model`'s totals.
    pub fn add(&mut self, model: &str, usage: &Usage) {
        match self.0.get_mut(model) {
            Some(totals) => totals.add(usage),
            None => {
                let mut totals = UsageTotals::default();
                totals.add(usage);
                self.0.insert(model.to_owned(), totals);
            }
        }
    }

    /// The models whose calls reported usage, with their totals; `None` when none did.
    #[must_use]
    pub fn reported(&self) -> Option<Self> {
        let reported: BTreeMap<String, UsageTotals> = self
            .0
            .iter()
            .filter_map(|(model, totals)| Some((model.clone(), totals.reported()?)))
            .collect();
        (!reported.is_empty()).then_some(Self(reported))
    }
}

/// A finished model call, as `on_model_response` reads it (SPEC P2.6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelResponse {
    /// Why the call was made.
    pub purpose: Purpose,
    /// Why it finished.
    pub finish_reason: FinishReason,
    /// The returned items.
    pub items: Vec<Item>,
    /// Token usage.
    pub usage: Usage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_what_was_reported_and_leaves_the_rest_absent() {
        let mut totals = UsageTotals::default();
        totals.add(&Usage::default());
        assert_eq!(totals.reported(), None);
        assert_eq!(totals.model_calls, 1);
        totals.add(&Usage::reported(10, 2));
        totals.add(&Usage {
            input_tokens: Some(5),
            output_tokens: None,
        });
        let reported = totals.reported();
        assert_eq!(
            reported,
            Some(UsageTotals {
                input_tokens: Some(15),
                output_tokens: Some(2),
                model_calls: 3
            })
        );
        let before = UsageTotals {
            input_tokens: Some(10),
            output_tokens: Some(2),
            model_calls: 2,
        };
        assert_eq!(
            totals.since(&before),
            UsageTotals {
                input_tokens: Some(5),
                output_tokens: None,
                model_calls: 1
            }
        );
        let json = serde_json::to_value(UsageTotals {
            output_tokens: None,
            ..totals
        });
        assert_eq!(
            json.ok(),
            Some(serde_json::json!({"inputTokens": 15, "modelCalls": 3}))
        );
    }
}
