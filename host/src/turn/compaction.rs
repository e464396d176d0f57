//! Compaction (SPEC P2.10, R3, R5.9, P3.4): `on_compaction` appends to the summary prompt,
//! `rewrite_compaction` may replace it; a compaction call (whose `transform_model` sees the
//! earlier turns about to be summarized); `on_compaction` appends to the summary body,
//! `rewrite_compaction` may replace it; then the summary replaces the folded history.

use hookline_messages::compaction::{Compaction, CompactionPhase};
use hookline_messages::hook::{OnCompaction, RewriteCompaction};
use hookline_messages::model::Purpose;
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::{ArchiveEntry, Record};

use super::{assistant_text, Turn};
use crate::state::{HostError, HostEvent};

/// The host's compaction prompt, before hooks.
pub(crate) const COMPACTION_PROMPT: &str =
    "Summarize the conversation so far: the goal, what was done, and what is left.";

/// Compacts the session's stored records. Returns whether the history was replaced; a failed
/// compaction call leaves the records as they were.
pub(crate) async fn compact(turn: &mut Turn<'_>) -> Result<bool, HostError> {
    let folded: Vec<Record> = turn
        .session
        .records()
        .iter()
        .filter(|r| !matches!(r, Record::System { .. }))
        .cloned()
        .collect();
    if folded.is_empty() {
        turn.engine.events.push(HostEvent::Info {
            text: "There is nothing to compact.".into(),
        });
        return Ok(false);
    }
    let prompt = turn
        .text(CompactionPhase::Prompt, COMPACTION_PROMPT.into())
        .await?;
    let system = turn.compose(PromptMode::Compaction).await?;
    let request = turn.request_with_system(Purpose::Compaction, Some(system), Some(prompt));
    let response = match turn.model_call(request).await? {
        Ok(response) => response,
        Err(_) => return Ok(false),
    };
    // Issue 25: the answer is archived like a turn's, so replay can answer the call again.
    turn.archive_response(&response)?;
    let summary = turn
        .text(CompactionPhase::Summary, assistant_text(&response))
        .await?;
    // The active system message stays; everything else is folded into the summary.
    let mut kept: Vec<Record> = turn
        .session
        .records()
        .iter()
        .rev()
        .find(|r| matches!(r, Record::System { .. }))
        .cloned()
        .into_iter()
        .collect();
    kept.push(Record::Summary {
        text: summary.clone(),
    });
    turn.session.replace_records(kept)?;
    turn.session.archive(&ArchiveEntry::Compaction {
        folded: folded.len(),
        summary: summary.clone(),
    })?;
    turn.engine.events.push(HostEvent::Compacted {
        folded: folded.len(),
        summary,
    });
    Ok(true)
}

impl Turn<'_> {
    /// One compaction text after `on_compaction` and `rewrite_compaction`.
    async fn text(&mut self, phase: CompactionPhase, text: String) -> Result<String, HostError> {
        let appended = self
            .hook::<OnCompaction>(Compaction::new(phase, text))
            .await?;
        Ok(self
            .hook::<RewriteCompaction>(appended.composed())
            .await?
            .text)
    }
}
