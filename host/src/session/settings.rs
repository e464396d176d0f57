//! Commands with gateway events around them: compaction (`session:compact:before` / `:after`,
//! SPEC G5.6, G3.3), settings changes (`session:patch`, G5.5) and automatic resets
//! (`session:auto-reset`, G5.3).

use hookline_messages::event::{CompactBeforeContext, EventKey, ResetReason, SessionPatch};
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::Record;
use hookline_messages::session::ApprovalMode;
use hookline_messages::transition::Cause;

use super::{Conversation, HostError, HostEvent};
use crate::producers::{reset_due, AutoResetFacts, CompactionResult};
use crate::turn::compact;

impl Conversation {
    /// Compacts the active session. `before` is emitted once there is something to fold;
    /// `after` only when the summary replaced the history (SPEC G3.3). The host does not count
    /// tokens, so every token count is absent (G5.6).
    pub(crate) async fn compact_with_events(&mut self) -> Result<bool, HostError> {
        let session = self.session.as_ref().ok_or(HostError::NoSession)?;
        let original = session.records().len();
        let folded = session
            .records()
            .iter()
            .filter(|r| !matches!(r, Record::System { .. }))
            .count();
        if folded == 0 {
            // Nothing to fold: no compaction starts, so no `before` either.
            return compact(&mut self.turn()?).await;
        }
        let before = CompactBeforeContext {
            session_id: session.info.session_id.to_string(),
            missing_session_key: false,
            message_count: count(folded),
            token_count: None,
            message_count_original: count(original),
            token_count_original: None,
        };
        let (in_flight, delivery) = self.producers().compaction_started(before).await?;
        self.delivered(EventKey::SessionCompactBefore, Ok(delivery))?;
        let compacted = compact(&mut self.turn()?).await;
        if !matches!(compacted, Ok(true)) {
            in_flight.failed();
            return compacted;
        }
        let result = self.compaction_result(folded);
        let delivery = in_flight.completed(result).await;
        self.delivered(EventKey::SessionCompactAfter, delivery)?;
        Ok(true)
    }

    fn compaction_result(&self, folded: usize) -> CompactionResult {
        let records = self
            .session
            .as_ref()
            .map(|s| s.records())
            .unwrap_or_default();
        let summary = records.iter().rev().find_map(|r| match r {
            Record::Summary { text } => Some(count(text.chars().count())),
            _ => None,
        });
        CompactionResult {
            message_count: count(records.len()),
            compacted_count: count(folded),
            summary_length: summary,
            ..CompactionResult::default()
        }
    }

    /// `/model <name>`: the session's model, stored with its facts so a resume restores it;
    /// emits `session:patch` even when it already held.
    ///
    /// # Errors
    /// [`HostError::UnknownModel`] for a model the provider does not serve (issue 21); nothing
    /// changes then.
    pub(crate) async fn set_model(&mut self, name: String) -> Result<(), HostError> {
        if !self.shared.provider.serves_model(&name) {
            return Err(HostError::UnknownModel {
                configured: self.shared.provider.model_names(),
                name,
            });
        }
        self.wiring.model = Some(name.clone());
        self.store_choices().await?;
        self.patch_event(SessionPatch {
            model: Some(name),
            ..SessionPatch::default()
        });
        Ok(())
    }

    /// `/mode <work|plan>`: the session's default turn mode, stored with its facts; emits
    /// `session:patch`.
    pub(crate) async fn set_mode(&mut self, mode: PromptMode) -> Result<(), HostError> {
        self.wiring.mode = mode;
        self.store_choices().await?;
        self.patch_event(SessionPatch {
            mode: Some(mode.as_str().to_owned()),
            ..SessionPatch::default()
        });
        Ok(())
    }

    /// Writes the conversation's model and turn mode into the active session's facts.
    async fn store_choices(&mut self) -> Result<(), HostError> {
        let (model, mode) = (self.wiring.model.clone(), Some(self.wiring.mode));
        match self.session.as_mut() {
            Some(session) => session.set_choices(model, mode).await,
            None => Ok(()),
        }
    }

    /// `/approvals <mode>`: the active session's approval mode (and that of sessions opened
    /// later), stored with the session's facts; emits `session:patch`.
    pub(crate) async fn set_approval_mode(&mut self, mode: ApprovalMode) -> Result<(), HostError> {
        self.approval_mode = mode;
        let session = self.session.as_mut().ok_or(HostError::NoSession)?;
        session.set_approval_mode(mode).await?;
        self.patch_event(SessionPatch {
            approval_mode: Some(mode),
            ..SessionPatch::default()
        });
        Ok(())
    }

    /// The session's default turn mode (`/mode`).
    pub fn session_mode(&self) -> PromptMode {
        self.wiring.mode
    }

    /// Checked before each user turn: when the reset policy says the active session is due, a
    /// fresh session replaces it (like `/clear`) and `session:auto-reset` is emitted detached.
    pub(crate) async fn auto_reset_if_due(&mut self) -> Result<(), HostError> {
        let Some(info) = self.active().cloned() else {
            return Ok(());
        };
        let now = self.shared.settings.clock.now_ms();
        let last = *self.wiring.last_active_ms.get_or_insert(now);
        let Some(reason) = reset_due(&self.shared.settings.reset_policy, last, now) else {
            return Ok(());
        };
        let ended = self.entry(&info);
        let opened = self.fresh(self.workspace.clone(), &[]).await?;
        let next_id = opened.state.info.session_id.to_string();
        self.activate(Cause::Clear, opened).await?;
        self.engine.events.push(HostEvent::Info {
            text: format!(
                "Session {} was reset automatically ({}).",
                info.session_id,
                reason_name(reason)
            ),
        });
        let reset = AutoResetFacts {
            session_file: ended.session_file.clone(),
            session_entry: ended,
            reason: Some(reason),
            transcript_archived: None,
            next_session_id: Some(next_id),
            next_session_key: Some(self.session_key()),
        };
        let emitted = self.producers().auto_reset(reset);
        self.emitted(EventKey::SessionAutoReset, &emitted);
        Ok(())
    }

    /// The session was just used: the idle clock restarts.
    pub(crate) fn touch(&mut self) {
        self.wiring.last_active_ms = Some(self.shared.settings.clock.now_ms());
    }
}

fn reason_name(reason: ResetReason) -> &'static str {
    match reason {
        ResetReason::Daily => "daily",
        ResetReason::Idle => "idle",
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
