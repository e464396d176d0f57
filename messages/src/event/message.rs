//! Message event contexts (SPEC G5.8, G5.9, G5.11) and the rule that picks `content`.

use serde::{Deserialize, Serialize};

use super::entry::Config;
use super::media::MediaFact;

/// `message:received` (SPEC G5.8).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageReceivedContext {
    /// The sender, as the channel names them.
    pub from: String,
    /// The text, picked by [`received_content`].
    pub content: String,
    /// The channel (`telegram`, `slack`, ...).
    pub channel_id: String,
    /// When it was sent, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
    /// The channel account that received it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The message's id on the channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Local attachments in source order; withheld while staging is pending (SPEC G5.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<Vec<MediaFact>>,
    /// The original (remote) attachments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_media: Option<Vec<MediaFact>>,
    /// `true` while staging is pending; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_staging_pending: Option<bool>,
    /// Routing and legacy fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ReceivedMetadata>,
}

/// The received event's `metadata` (SPEC G5.8). Structured media arrays on the context are
/// preferred over the legacy aliases here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // Each field is named as in SPEC G5.8; all are optional.
pub struct ReceivedMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_e164: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guild_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_urls: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_types: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_remote_host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_staging_pending: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_media_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_media_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_media_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_media_urls: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_media_types: Option<Vec<String>>,
}

/// The fields `message:transcribed` and `message:preprocessed` share (SPEC G5.9). Neither
/// carries `accountId` nor the received event's `metadata`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // Each optional field is named as in SPEC G5.9.
pub struct MessageStage {
    /// The channel.
    pub channel_id: String,
    /// The gateway configuration.
    pub cfg: Config,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The enriched body prepared for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_for_agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<Vec<MediaFact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_media: Option<Vec<MediaFact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_staging_pending: Option<bool>,
    /// Deprecated: the first attachment's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_path: Option<String>,
    /// Deprecated: the first attachment's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

/// `message:transcribed` (SPEC G5.9): the shared fields plus a required transcript.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageTranscribedContext {
    /// The shared fields.
    #[serde(flatten)]
    pub stage: MessageStage,
    /// The transcript text.
    pub transcript: String,
}

/// `message:preprocessed` (SPEC G5.9): the stage passed, not that every attachment or link was
/// understood (G3.2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagePreprocessedContext {
    /// The shared fields.
    #[serde(flatten)]
    pub stage: MessageStage,
    /// The transcript, when there was audio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// Whether the conversation is a group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_group: Option<bool>,
    /// The group's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
}

/// `message:sent` (SPEC G5.11). `success: false` reports a failure on a path that produced a
/// result; a missing event proves nothing. Never resend blindly: part may be delivered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSentContext {
    /// The recipient.
    pub to: String,
    /// The logical payload's text.
    pub content: String,
    /// Whether delivery succeeded.
    pub success: bool,
    /// The channel.
    pub channel_id: String,
    /// The failure, when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The sending account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The sent message's id (on a partial failure, of a part that was sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Whether the conversation is a group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_group: Option<bool>,
    /// The group's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
}

/// SPEC G5.8: `content` is the non-empty command body, else the non-empty raw body, else the
/// generic body. The agent's enriched body (`BodyForAgent`) is never a candidate, so it is not a
/// parameter.
pub fn received_content(
    command_body: Option<&str>,
    raw_body: Option<&str>,
    body: Option<&str>,
) -> String {
    [command_body, raw_body]
        .into_iter()
        .flatten()
        .find(|text| !text.is_empty())
        .or(body)
        .unwrap_or_default()
        .to_owned()
}

impl ReceivedMetadata {
    /// Fills the legacy attachment aliases from the structured facts, so both agree (SPEC G5.8).
    /// While staging is pending the local aliases stay absent, like `media` (SPEC G5.10), and the
    /// `originalMedia*` aliases describe the originals.
    #[must_use]
    pub fn with_media_aliases(mut self, media: &super::media::InboundMedia) -> Self {
        let view = media.view();
        if let Some(facts) = &view.media {
            let (path, url, kind, paths, urls, kinds) = aliases(facts);
            (self.media_path, self.media_url, self.media_type) = (path, url, kind);
            (self.media_paths, self.media_urls, self.media_types) = (paths, urls, kinds);
        }
        if let Some(facts) = &view.original_media {
            let (path, url, kind, paths, urls, kinds) = aliases(facts);
            (
                self.original_media_path,
                self.original_media_url,
                self.original_media_type,
            ) = (path, url, kind);
            (
                self.original_media_paths,
                self.original_media_urls,
                self.original_media_types,
            ) = (paths, urls, kinds);
            self.media_remote_host.clone_from(&media.remote_host);
        }
        self.media_staging_pending = view.media_staging_pending;
        self
    }
}

type Aliases = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<Vec<String>>,
    Option<Vec<String>>,
    Option<Vec<String>>,
);

/// First-attachment and all-attachment aliases; a list is absent when no fact has that field.
fn aliases(facts: &[MediaFact]) -> Aliases {
    let all = |field: fn(&MediaFact) -> Option<&String>| {
        let values: Vec<String> = facts.iter().filter_map(field).cloned().collect();
        (!values.is_empty()).then_some(values)
    };
    let first = facts.first();
    (
        first.and_then(|f| f.path.clone()),
        first.and_then(|f| f.url.clone()),
        first.and_then(|f| f.content_type.clone()),
        all(|f| f.path.as_ref()),
        all(|f| f.url.as_ref()),
        all(|f| f.content_type.as_ref()),
    )
}

impl MessageStage {
    /// Fills the structured media fields from `media` (SPEC G5.10) and the deprecated
    /// first-attachment aliases `mediaPath`/`mediaType` from the facts shown (G5.9).
    #[must_use]
    pub fn with_media(mut self, media: &super::media::InboundMedia) -> Self {
        let view = media.view();
        let first = view.media.as_ref().and_then(|facts| facts.first());
        self.media_path = first.and_then(|fact| fact.path.clone());
        self.media_type = first.and_then(|fact| fact.content_type.clone());
        self.media = view.media;
        self.original_media = view.original_media;
        self.media_staging_pending = view.media_staging_pending;
        self
    }
}
