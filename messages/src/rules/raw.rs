//! The text and approval raw hooks: any value the host can represent is accepted
//! (SPEC R0.4, R2, R3, R4, R5.8 to R5.10).

use crate::approval::Classification;
use crate::compaction::CompactionText;
use crate::note::Refusal;
use crate::prompt::SystemText;

/// Admits a `rewrite_prompt` replacement: any text, empty included, for the same mode.
///
/// # Errors
/// [`Refusal::ChangedPromptMode`]: the text was composed for one mode and cannot move to another.
pub fn rewrite_prompt(before: &SystemText, proposed: SystemText) -> Result<SystemText, Refusal> {
    if proposed.mode != before.mode {
        return Err(Refusal::ChangedPromptMode);
    }
    Ok(proposed)
}

/// Admits a `rewrite_compaction` replacement: any text, empty included, for the same phase.
///
/// # Errors
/// [`Refusal::ChangedCompactionPhase`]: choosing which text is replaced is the host's.
pub fn rewrite_compaction(
    before: &CompactionText,
    proposed: CompactionText,
) -> Result<CompactionText, Refusal> {
    if proposed.phase != before.phase {
        return Err(Refusal::ChangedCompactionPhase);
    }
    Ok(proposed)
}

/// Admits a `rewrite_approval` replacement: any risk, authority, summary and prompt requirement.
/// The approval policy still decides on the result (SPEC R4: it cannot skip the policy).
///
/// # Errors
/// Never; the signature matches the other rules.
pub fn rewrite_approval(
    _before: &Classification,
    proposed: Classification,
) -> Result<Classification, Refusal> {
    Ok(proposed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{Authority, Risk};
    use crate::compaction::CompactionPhase;
    use crate::prompt::PromptMode;

    #[test]
    fn an_empty_prompt_is_used_as_returned() {
        let before = SystemText {
            mode: PromptMode::Work,
            text: "long text".into(),
        };
        let empty = SystemText {
            mode: PromptMode::Work,
            text: String::new(),
        };
        assert_eq!(rewrite_prompt(&before, empty.clone()), Ok(empty));
        let moved = SystemText {
            mode: PromptMode::Plan,
            text: String::new(),
        };
        assert_eq!(
            rewrite_prompt(&before, moved),
            Err(Refusal::ChangedPromptMode)
        );
    }

    #[test]
    fn an_empty_summary_is_kept() {
        let before = CompactionText {
            phase: CompactionPhase::Summary,
            text: "sum".into(),
        };
        let empty = CompactionText {
            phase: CompactionPhase::Summary,
            text: String::new(),
        };
        assert_eq!(rewrite_compaction(&before, empty.clone()), Ok(empty));
    }

    #[test]
    fn approval_may_be_lowered_and_the_prompt_cleared() {
        let before = Classification {
            risk: Risk::Critical,
            authority: Authority::Host,
            summary: "run rm".into(),
            requires_prompt: true,
        };
        let after = Classification {
            risk: Risk::Read,
            authority: Authority::Workspace,
            summary: "harmless".into(),
            requires_prompt: false,
        };
        assert_eq!(rewrite_approval(&before, after.clone()), Ok(after));
    }
}
