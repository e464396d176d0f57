//! Structured media facts (SPEC G5.10) and the staging rule that decides which of them a message
//! event shows.

use serde::{Deserialize, Serialize};

/// One attachment, as the channel reported it. Every field may be absent; facts keep the order
/// the source gave them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaFact {
    /// A local path. For original (remote) media this is a path on the remote host, never a
    /// local file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The kind (`image`, `audio`, `video`, `document`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Whether the attachment was transcribed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcribed: Option<bool>,
    /// The message that carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The workspace it was staged into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_dir: Option<String>,
}

/// What a channel knows about a message's attachments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InboundMedia {
    /// Attachments available locally, in source order.
    pub staged: Vec<MediaFact>,
    /// The original attachments as they are on the remote host, in source order.
    pub original: Vec<MediaFact>,
    /// Whether staging from the remote host is still under way.
    pub staging_pending: bool,
    /// The remote host the originals are on.
    pub remote_host: Option<String>,
}

/// The media fields one message event shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediaView {
    /// `media`: absent while staging is pending, or when there are none.
    pub media: Option<Vec<MediaFact>>,
    /// `originalMedia`: absent when there are none.
    pub original_media: Option<Vec<MediaFact>>,
    /// `mediaStagingPending`: present (and `true`) only while staging is pending.
    pub media_staging_pending: Option<bool>,
}

impl InboundMedia {
    /// SPEC G5.10: while staging is pending, `media` is withheld and `originalMedia` describes the
    /// original attachments. Order is kept as given.
    pub fn view(&self) -> MediaView {
        let non_empty = |facts: &Vec<MediaFact>| (!facts.is_empty()).then(|| facts.clone());
        MediaView {
            media: if self.staging_pending {
                None
            } else {
                non_empty(&self.staged)
            },
            original_media: non_empty(&self.original),
            media_staging_pending: self.staging_pending.then_some(true),
        }
    }
}
