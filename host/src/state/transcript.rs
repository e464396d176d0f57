//! [`Transcript`]: the stored records as model request items, kept up to date as records are
//! stored, so a model call does not rebuild the conversation from every record (issue 22). Item
//! ids are the record's position (`r<n>`), so they are unique in a request and stable across
//! calls; the active system record (the latest work or plan text) is tracked, not searched for.
//!
//! It also keeps the images the records hold, so a call does not gather them from every record.
//!
//! Each item is made once and shared (`Arc`), and so is the list (an [`Items`], issue 47): the
//! list starts with the active system item, so a request for the active system text is the
//! transcript's list itself, one pointer, whatever the conversation's length. Once the call's
//! request is dropped nothing else holds the list, and the next records are appended in place.

use std::sync::Arc;

use hookline_messages::model::{HeldImages, Item, ItemBody, Items, ModelRequest, Purpose};
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::Record;

/// The id of a request's system item.
const SYSTEM_ITEM_ID: &str = "system";

/// The request items of a session's stored records, in order.
#[derive(Debug)]
pub(crate) struct Transcript {
    /// The active system item (empty text when no system record is stored), then the items of
    /// the records.
    items: Items,
    /// How many records the items stand for.
    records: usize,
    /// The latest system record's mode.
    mode: Option<PromptMode>,
    /// Every image on a stored record.
    held: HeldImages,
    /// The highest image number on a stored record.
    highest_image: Option<u32>,
}

impl Default for Transcript {
    fn default() -> Self {
        Self {
            items: Items::from(vec![system_item(String::new())]),
            records: 0,
            mode: None,
            held: HeldImages::default(),
            highest_image: None,
        }
    }
}

impl Transcript {
    /// The transcript of `records`.
    pub(crate) fn of(records: &[Record]) -> Self {
        let mut transcript = Self::default();
        transcript.extend(records);
        transcript
    }

    /// Adds `records`, stored after the ones it already stands for. In place when no request
    /// built from the transcript is still alive; else the list is copied once (copy on write).
    pub(crate) fn extend(&mut self, records: &[Record]) {
        for record in records {
            let n = self.records;
            self.records += 1;
            for image in record.images() {
                self.held.insert(image.number, image.media_type);
                self.highest_image = self.highest_image.max(Some(image.number));
            }
            if let Record::System { mode, text } = record {
                self.mode = Some(*mode);
                self.items.replace(0, system_item(text.clone()));
            }
            if let Some(body) = item(record) {
                self.items.push(Arc::new(Item::new(format!("r{n}"), body)));
            }
        }
    }

    /// The items a request sends with the system text `system` (`None`: the active one) first,
    /// then every record's item (system records are not items: the active one is the system
    /// item). For the active system text this is the transcript's own list, shared; another
    /// text (compaction's) copies the list's pointers once.
    pub(crate) fn request_items(&self, system: Option<String>) -> Items {
        let mut items = self.items.clone();
        match system {
            Some(text) if !is_system_text(&items[0], &text) => {
                items.replace(0, system_item(text));
            }
            _ => {}
        }
        items
    }

    /// The items of the stored records, in order, without the system item.
    #[cfg(test)]
    pub(crate) fn record_items(&self) -> &[Arc<Item>] {
        &self.items[1..]
    }

    /// The images the stored records hold.
    pub(crate) fn held_images(&self) -> &HeldImages {
        &self.held
    }

    /// The highest image number on a stored record.
    pub(crate) fn highest_image(&self) -> Option<u32> {
        self.highest_image
    }

    /// The latest stored work or plan text, with its mode.
    pub(crate) fn active_system(&self) -> Option<(PromptMode, &str)> {
        let mode = self.mode?;
        match &self.items[0].body {
            ItemBody::System { text, .. } => Some((mode, text.as_str())),
            _ => None,
        }
    }
}

/// A request's system item (id `system`) of `text`.
fn system_item(text: String) -> Arc<Item> {
    Arc::new(Item::new(
        SYSTEM_ITEM_ID,
        ItemBody::System {
            text,
            images: Vec::new(),
        },
    ))
}

/// Whether `item` is the system item of `text`.
fn is_system_text(item: &Item, text: &str) -> bool {
    matches!(&item.body, ItemBody::System { text: t, images } if t == text && images.is_empty())
}

/// The work request a turn would send over `records` (a stored session's): the active system
/// text, then every record as an item, as `docs/turn.md` builds it, for a text-only model.
/// `hookline bench --from-store` takes a recorded conversation's model request with it.
pub fn work_request(records: &[Record]) -> ModelRequest {
    ModelRequest {
        purpose: Purpose::Work,
        accepts_images: false,
        items: Transcript::of(records).request_items(None),
    }
}

/// The item a stored record becomes; system records are not items.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Record {
        Record::User {
            text: text.into(),
            images: Vec::new(),
        }
    }

    fn system(text: &str) -> Record {
        Record::System {
            mode: PromptMode::Work,
            text: text.into(),
        }
    }

    #[test]
    fn extending_gives_what_building_from_every_record_gives() {
        let records = vec![
            system("one"),
            user("a"),
            Record::Assistant { text: "b".into() },
            system("two"),
            user("c"),
        ];
        let mut grown = Transcript::of(&records[..2]);
        grown.extend(&records[2..4]);
        grown.extend(&records[4..]);
        let whole = Transcript::of(&records);
        assert_eq!(grown.request_items(None), whole.request_items(None));
        let ids: Vec<&str> = whole
            .record_items()
            .iter()
            .map(|i| i.id.0.as_str())
            .collect();
        assert_eq!(ids, ["r1", "r2", "r4"]);
        assert_eq!(grown.active_system(), Some((PromptMode::Work, "two")));
        assert_eq!(Transcript::of(&[user("x")]).active_system(), None);
    }

    #[test]
    fn images_are_kept_as_records_come() {
        use hookline_messages::model::{ImageRef, MediaType};
        let image = |number, media_type| ImageRef { number, media_type };
        let records = vec![
            Record::User {
                text: "look".into(),
                images: vec![image(2, MediaType::Png)],
            },
            Record::ToolResult {
                call_id: "c1".into(),
                name: "shot".into(),
                text: "done".into(),
                images: vec![image(1, MediaType::Jpeg)],
                success: true,
            },
        ];
        let mut grown = Transcript::of(&[]);
        assert_eq!(grown.highest_image(), None);
        grown.extend(&records);
        assert_eq!(grown.highest_image(), Some(2));
        assert!(grown.held_images().holds(&image(1, MediaType::Jpeg)));
        assert!(grown.held_images().holds(&image(2, MediaType::Png)));
        assert!(!grown.held_images().holds(&image(2, MediaType::Jpeg)));
    }

    #[test]
    fn a_request_shares_the_transcripts_list_and_an_edit_copies_it() {
        let mut transcript = Transcript::of(&[system("be brief"), user("a")]);
        let mut request = transcript.request_items(None);
        assert!(request.shares_with(&transcript.items));
        assert!(transcript.items.is_shared());
        // A hook's edit copies the list and the item it edits; the transcript keeps its own.
        if let ItemBody::User { text, .. } = &mut Arc::make_mut(&mut request.to_mut()[1]).body {
            *text = "edited".into();
        }
        assert!(!request.shares_with(&transcript.items));
        assert_eq!(
            Some(transcript.request_items(None)[1].body.clone()),
            item(&user("a"))
        );
        drop(request);
        // Once the request is dropped, nothing else holds the list: the next records are
        // appended to it in place.
        assert!(!transcript.items.is_shared());
        transcript.extend(&[Record::Assistant { text: "b".into() }]);
        let next = transcript.request_items(None);
        assert_eq!(next.len(), 3);
        assert!(next.shares_with(&transcript.items));
    }

    #[test]
    fn another_system_text_is_the_requests_own_and_a_new_one_is_the_transcripts() {
        let mut transcript = Transcript::of(&[user("a")]);
        let blank = transcript.request_items(Some(String::new()));
        assert!(
            blank.shares_with(&transcript.items),
            "no system record: blank"
        );
        let compaction = transcript.request_items(Some("summarize".into()));
        assert!(!compaction.shares_with(&transcript.items));
        assert!(is_system_text(&compaction[0], "summarize"));
        assert!(Arc::ptr_eq(&compaction[1], &transcript.items[1]));
        drop((blank, compaction));
        transcript.extend(&[system("two")]);
        assert_eq!(transcript.active_system(), Some((PromptMode::Work, "two")));
        let request = transcript.request_items(Some("two".into()));
        assert!(request.shares_with(&transcript.items));
        assert!(is_system_text(&request[0], "two"));
        assert_eq!(request.len(), 2);
    }
}
