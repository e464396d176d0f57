//! The channel interface: the embedding program (or the scenario runner) feeds chat messages in
//! and delivery results out, and each becomes a `message:*` event (SPEC G5.8 to G5.11).
//!
//! Every method is synchronous and never waits: events go on the bus's bounded queue, or are
//! dropped and counted when it is full (SPEC G3.1: events cannot block message handling).

use hookline_actors::events::{Emitted, EventBus};
use hookline_messages::event::{
    received_content, Config, Event, InboundMedia, MessagePreprocessedContext,
    MessageReceivedContext, MessageSentContext, MessageStage, MessageTranscribedContext,
    ReceivedMetadata,
};

/// One inbound chat message, as the channel delivered it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InboundMessage {
    /// The sender.
    pub from: String,
    /// The channel (`telegram`, ...).
    pub channel_id: String,
    /// The command body, when the text is a command.
    pub command_body: Option<String>,
    /// The raw body.
    pub raw_body: Option<String>,
    /// The generic body.
    pub body: Option<String>,
    /// When it was sent (ms since the epoch).
    pub timestamp: Option<u64>,
    /// The receiving account.
    pub account_id: Option<String>,
    /// The conversation.
    pub conversation_id: Option<String>,
    /// The message id.
    pub message_id: Option<String>,
    /// Its attachments.
    pub media: InboundMedia,
    /// Routing metadata (`to`, `provider`, sender fields, ...); the media aliases are filled in.
    pub metadata: ReceivedMetadata,
}

/// Feeds chat messages into `message:*` events. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MessageChannel {
    bus: EventBus,
    cfg: Config,
}

impl MessageChannel {
    pub(crate) fn new(bus: EventBus, cfg: Config) -> Self {
        Self { bus, cfg }
    }

    /// An inbound message: `message:received` (SPEC G5.8).
    pub fn received(&self, message: InboundMessage) -> Emitted {
        self.bus
            .enqueue(Event::MessageReceived(received_context(message)))
    }

    /// A transcription finished: `message:transcribed` (SPEC G5.9). `stage.cfg` is set here.
    pub fn transcribed(
        &self,
        stage: MessageStage,
        media: &InboundMedia,
        transcript: String,
    ) -> Emitted {
        let context = MessageTranscribedContext {
            stage: self.stage(stage, media),
            transcript,
        };
        self.bus.enqueue(Event::MessageTranscribed(context))
    }

    /// Preprocessing passed: `message:preprocessed` (SPEC G5.9, G3.2). `context.stage.cfg` is
    /// set here.
    pub fn preprocessed(
        &self,
        mut context: MessagePreprocessedContext,
        media: &InboundMedia,
    ) -> Emitted {
        context.stage = self.stage(context.stage, media);
        self.bus.enqueue(Event::MessagePreprocessed(context))
    }

    /// A delivery result: `message:sent` (SPEC G5.11), one per logical payload.
    pub fn sent(&self, result: MessageSentContext) -> Emitted {
        self.bus.enqueue(Event::MessageSent(result))
    }

    fn stage(&self, stage: MessageStage, media: &InboundMedia) -> MessageStage {
        MessageStage {
            cfg: self.cfg.clone(),
            ..stage
        }
        .with_media(media)
    }
}

/// The `message:received` context for `message` (SPEC G5.8, G5.10).
pub(crate) fn received_context(message: InboundMessage) -> MessageReceivedContext {
    let content = received_content(
        message.command_body.as_deref(),
        message.raw_body.as_deref(),
        message.body.as_deref(),
    );
    let view = message.media.view();
    let metadata = message.metadata.with_media_aliases(&message.media);
    MessageReceivedContext {
        from: message.from,
        content,
        channel_id: message.channel_id,
        timestamp: message.timestamp,
        account_id: message.account_id,
        conversation_id: message.conversation_id,
        message_id: message.message_id,
        media: view.media,
        original_media: view.original_media,
        media_staging_pending: view.media_staging_pending,
        metadata: (metadata != ReceivedMetadata::default()).then_some(metadata),
    }
}
