//! In-place appends (issue 23): a value with a text that a hook may extend at its end
//! ([`AppendText`]).
//!
//! An append is undone by truncating the text to its length before, so the runtime keeps no copy
//! of the value before an appending hook: a refused, failed or panicked append is truncated away
//! (SPEC P1.4, P1.5), and the hook's rule for appends ([`Hook::admit_append`]) decides knowing only
//! that length.
//!
//! ```
//! use hookline_messages::edit::AppendText;
//! use hookline_messages::user::UserMessage;
//!
//! let mut message = UserMessage::new("fix the bug");
//! let before = message.text_len();
//! message.push_text(" in parser.rs");
//! assert_eq!(message.text, "fix the bug in parser.rs");
//! message.truncate_text(before);
//! assert_eq!(message, UserMessage::new("fix the bug"));
//! ```
//!
//! [`Hook::admit_append`]: crate::hook::Hook::admit_append

use crate::user::UserMessage;

/// A value with one text that may grow at its end, and shrink back to a length it had.
pub trait AppendText {
    /// The text's length in bytes.
    fn text_len(&self) -> usize;
    /// Appends `text` at the end of the text.
    fn push_text(&mut self, text: &str);
    /// Cuts the text back to `len` bytes, a length it had before an append. A length that is not
    /// a character boundary of the text (never one it had) leaves the text as it is.
    fn truncate_text(&mut self, len: usize);
}

/// What an `on_user_message` hook may append to: the message text (SPEC P2.3).
impl AppendText for UserMessage {
    #[inline]
    fn text_len(&self) -> usize {
        self.text.len()
    }

    #[inline]
    fn push_text(&mut self, text: &str) {
        self.text.push_str(text);
    }

    #[inline]
    fn truncate_text(&mut self, len: usize) {
        if self.text.is_char_boundary(len) {
            self.text.truncate(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_inside_a_character_leaves_the_text_as_it_is() {
        let mut message = UserMessage::new("é");
        message.truncate_text(1);
        assert_eq!(message.text, "é");
        message.truncate_text(0);
        assert_eq!(message.text, "");
    }
}
