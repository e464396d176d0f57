//! Composing a mode's system text: the host's text, `on_prompt` appends, then `rewrite_prompt`
//! replaces the whole text with any string, empty included (SPEC P2.2, R2, R5.8).

use hookline_messages::hook::{OnPrompt, RewritePrompt};
use hookline_messages::prompt::{Prompt, PromptMode};
use hookline_messages::record::{ArchiveEntry, Record};

use super::Turn;
use crate::state::{HostError, HostEvent};

/// The host's own text for each mode, before hooks.
pub(crate) fn base_text(mode: PromptMode) -> &'static str {
    match mode {
        PromptMode::Work => {
            "You are a coding agent. Work in the workspace with the tools you are given."
        }
        PromptMode::Plan => {
            "You are a coding agent. Plan the change step by step; do not edit files."
        }
        PromptMode::Review => "You review one tool call. Say whether it is safe to run.",
        PromptMode::Compaction => {
            "You summarize a conversation so that later turns can continue it."
        }
    }
}

impl Turn<'_> {
    /// The system text for `mode` after `on_prompt` and `rewrite_prompt`.
    pub(crate) async fn compose(&mut self, mode: PromptMode) -> Result<String, HostError> {
        let mut base = base_text(mode).to_owned();
        // SPEC G5.4: the session's bootstrap files end the host's work and plan text.
        if let (PromptMode::Work | PromptMode::Plan, Some(files)) =
            (mode, self.session.bootstrap_text())
        {
            base.push_str(files);
        }
        let prompt = self.hook::<OnPrompt>(Prompt::new(mode, base)).await?;
        let text = self.hook::<RewritePrompt>(prompt.composed()).await?.text;
        self.engine.events.push(HostEvent::SystemText {
            mode,
            text: text.clone(),
        });
        Ok(text)
    }

    /// Composes a turn's work or plan text; it becomes the active system message, stored and
    /// archived as used (SPEC R2, R5.8).
    pub(crate) async fn compose_turn_prompt(&mut self, mode: PromptMode) -> Result<(), HostError> {
        let text = self.compose(mode).await?;
        if self.session.active_system() != Some((mode, text.as_str())) {
            self.session.store(&[Record::System {
                mode,
                text: text.clone(),
            }])?;
        }
        self.session
            .archive(&ArchiveEntry::SystemText { mode, text })
    }
}
