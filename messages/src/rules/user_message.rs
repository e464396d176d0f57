//! `on_user_message` replaces the message before it is stored, never with a blank one (SPEC P2.3).

use crate::note::Refusal;
use crate::user::UserMessage;

/// Admits an `on_user_message` replacement.
///
/// The hook never runs for side questions; the host does not call it for them (SPEC P2.3).
///
/// # Errors
/// [`Refusal::EmptyUserMessage`] for a blank text, [`Refusal::ChangedSideQuestion`] when the flag
/// changed.
pub fn on_user_message(
    before: &UserMessage,
    proposed: UserMessage,
) -> Result<UserMessage, Refusal> {
    if proposed.side_question != before.side_question {
        return Err(Refusal::ChangedSideQuestion);
    }
    if proposed.text.trim().is_empty() {
        return Err(Refusal::EmptyUserMessage);
    }
    Ok(proposed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_text_applies_and_a_blank_one_is_refused() {
        let before = UserMessage::new("fix the bug");
        assert_eq!(
            on_user_message(&before, UserMessage::new("fix the bug in parser.rs")),
            Ok(UserMessage::new("fix the bug in parser.rs"))
        );
        assert_eq!(
            on_user_message(&before, UserMessage::new(" \n\t")),
            Err(Refusal::EmptyUserMessage)
        );
    }
}
