//! `on_prompt` may only append to the instruction block (SPEC P2.2).

use super::append::appended_parts;
use crate::note::Refusal;
use crate::prompt::Prompt;

/// Admits an `on_prompt` replacement: same mode, same composed text, earlier parts kept; new parts
/// trimmed, blank ones ignored.
///
/// # Errors
/// [`Refusal::ChangedPromptMode`], [`Refusal::ReplacedPromptText`] or
/// [`Refusal::RemovedAppendedText`].
pub fn on_prompt(before: &Prompt, proposed: Prompt) -> Result<Prompt, Refusal> {
    if proposed.mode != before.mode {
        return Err(Refusal::ChangedPromptMode);
    }
    if proposed.text != before.text {
        return Err(Refusal::ReplacedPromptText { mode: before.mode });
    }
    let appended = appended_parts(&before.appended, proposed.appended)?;
    Ok(Prompt {
        appended,
        ..proposed
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::PromptMode;

    fn base() -> Prompt {
        Prompt::new(PromptMode::Work, "You are a coding agent.")
    }

    #[test]
    fn appended_parts_are_trimmed_blank_ones_ignored_and_joined_by_blank_lines() {
        let first = on_prompt(&base(), base().append("  Use tabs. \n").append("   "));
        let first = first.unwrap_or_else(|r| panic!("refused: {r}"));
        let second = on_prompt(&first, first.clone().append("Be brief."));
        let second = second.unwrap_or_else(|r| panic!("refused: {r}"));
        assert_eq!(second.appended, ["Use tabs.", "Be brief."]);
        assert_eq!(
            second.composed().text,
            "You are a coding agent.\n\nUse tabs.\n\nBe brief."
        );
    }

    #[test]
    fn replacing_the_work_text_is_refused() {
        let mut proposed = base();
        proposed.text = "You are a pirate.".into();
        assert_eq!(
            on_prompt(&base(), proposed),
            Err(Refusal::ReplacedPromptText {
                mode: PromptMode::Work
            })
        );
        assert_eq!(
            Refusal::ReplacedPromptText {
                mode: PromptMode::Plan
            }
            .to_string(),
            "it replaced the plan text."
        );
    }

    #[test]
    fn removing_an_earlier_part_or_changing_the_mode_is_refused() {
        let before = base().append("Use tabs.");
        assert_eq!(
            on_prompt(&before, base()),
            Err(Refusal::RemovedAppendedText)
        );
        let mut proposed = before.clone();
        proposed.mode = PromptMode::Review;
        assert_eq!(
            on_prompt(&before, proposed),
            Err(Refusal::ChangedPromptMode)
        );
    }
}
