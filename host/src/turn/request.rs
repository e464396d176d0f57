//! Building an outbound request from the stored records. Item ids are the record's position
//! (`r<n>`) and `system` for the active system message, so they are unique in the request.

use hookline_messages::model::{Item, ItemBody, ModelRequest, Purpose};
use hookline_messages::record::Record;

use super::Turn;

/// The id of the trailing user item a side question or compaction prompt adds.
pub(crate) const EXTRA_ITEM_ID: &str = "extra";

impl Turn<'_> {
    /// A request for `purpose` over the stored records, ending with `extra` as a user message
    /// (a side question or the compaction prompt), with the active system text.
    pub(crate) fn request(&self, purpose: Purpose, extra: Option<String>) -> ModelRequest {
        let system = active_system(self.session.records()).unwrap_or_default();
        self.request_with_system(purpose, system, extra)
    }

    /// As [`Turn::request`], with a given system text (compaction uses its own).
    pub(crate) fn request_with_system(
        &self,
        purpose: Purpose,
        system: String,
        extra: Option<String>,
    ) -> ModelRequest {
        let accepts_images =
            ModelRequest::accepts_images_for(purpose, self.engine.provider.takes_images());
        let mut items = vec![Item::new(
            "system",
            ItemBody::System {
                text: system,
                images: Vec::new(),
            },
        )];
        items.extend(
            self.session
                .records()
                .iter()
                .enumerate()
                .filter_map(|(n, record)| {
                    item(record).map(|body| Item::new(format!("r{n}"), body))
                }),
        );
        if let Some(text) = extra {
            items.push(Item::new(
                EXTRA_ITEM_ID,
                ItemBody::User {
                    text,
                    images: Vec::new(),
                },
            ));
        }
        ModelRequest {
            purpose,
            accepts_images,
            items,
        }
    }
}

/// The latest stored work or plan text.
pub(crate) fn active_system(records: &[Record]) -> Option<String> {
    records.iter().rev().find_map(|r| match r {
        Record::System { text, .. } => Some(text.clone()),
        _ => None,
    })
}

/// The item a stored record becomes; system records are not items (the active one is the
/// request's system item).
fn item(record: &Record) -> Option<ItemBody> {
    Some(match record.clone() {
        Record::System { .. } => return None,
        Record::User { text, images } => ItemBody::User { text, images },
        Record::Assistant { text } => ItemBody::Assistant {
            text,
            images: Vec::new(),
        },
        Record::Reasoning { text } => ItemBody::Reasoning {
            text,
            provider_state: None,
        },
        Record::ToolCall {
            call_id,
            name,
            arguments,
        } => ItemBody::ToolCall {
            call_id,
            name,
            arguments,
        },
        Record::ToolResult {
            call_id,
            name,
            text,
            images,
            success,
        } => ItemBody::ToolResult {
            call_id,
            name,
            text,
            images,
            success,
        },
        // The summary stands in for the folded history, as a user message the model reads.
        Record::Summary { text } => ItemBody::User {
            text,
            images: Vec::new(),
        },
        // A cut-off turn's marker tells the model what happened, as a user message (issue 22).
        Record::CutOff { at } => ItemBody::User {
            text: at.to_string(),
            images: Vec::new(),
        },
    })
}
