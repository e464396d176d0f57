//! Building an outbound request from the session's transcript (its stored records as items,
//! kept up to date as records are stored: nothing is rebuilt per call). Item ids are the
//! record's position (`r<n>`) and `system` for the active system message, so they are unique in
//! the request. The transcript's items are shared with the request, not copied (issue 22), and
//! so is their list (issue 47): building a request costs a pointer, not one per item.

use std::sync::Arc;

use hookline_messages::model::{Item, ItemBody, ModelRequest, Purpose};

use super::Turn;

/// The id of the trailing user item a side question or compaction prompt adds.
pub(crate) const EXTRA_ITEM_ID: &str = "extra";

impl Turn<'_> {
    /// A request for `purpose` over the stored records, ending with `extra` as a user message
    /// (a side question or the compaction prompt), with the active system text.
    pub(crate) fn request(&self, purpose: Purpose, extra: Option<String>) -> ModelRequest {
        self.request_with_system(purpose, None, extra)
    }

    /// As [`Turn::request`], with a given system text (`None`: the active one; compaction uses
    /// its own).
    pub(crate) fn request_with_system(
        &self,
        purpose: Purpose,
        system: Option<String>,
        extra: Option<String>,
    ) -> ModelRequest {
        // SPEC R5.6: the session's model, which may not be the provider's default (issue 34).
        let takes_images = (self.engine.provider).takes_images_for(self.session.model.as_deref());
        let accepts_images = ModelRequest::accepts_images_for(purpose, takes_images);
        let mut items = self.session.request_items(system);
        if let Some(text) = extra {
            items.push(Arc::new(Item::new(
                EXTRA_ITEM_ID,
                ItemBody::User {
                    text,
                    images: Vec::new(),
                },
            )));
        }
        ModelRequest {
            purpose,
            accepts_images,
            items,
        }
    }
}
