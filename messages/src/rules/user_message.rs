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
    not_blank(&proposed)?;
    Ok(proposed)
}

/// Admits an `on_user_message` edit that only appended to the text (issue 23's in-place appends,
/// [`crate::edit::AppendText`]): an append cannot change the side-question flag, so only the
/// blank check applies, on the text as it is now.
///
/// # Errors
/// [`Refusal::EmptyUserMessage`] for a blank text.
#[inline]
pub fn on_user_message_append(after: &UserMessage) -> Result<(), Refusal> {
    not_blank(after)
}

#[inline]
fn not_blank(message: &UserMessage) -> Result<(), Refusal> {
    // Blank: no character but whitespace (stops at the first other one, at the start of nearly
    // every text).
    if message.text.chars().all(char::is_whitespace) {
        return Err(Refusal::EmptyUserMessage);
    }
    Ok(())
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

    #[test]
    fn an_append_is_refused_only_when_the_text_stays_blank() {
        assert_eq!(on_user_message_append(&UserMessage::new("hi #1")), Ok(()));
        assert_eq!(
            on_user_message_append(&UserMessage::new(" \n")),
            Err(Refusal::EmptyUserMessage)
        );
    }
}
