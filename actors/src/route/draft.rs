//! [`Draft`]: the value an in-place hook edits through `&mut`, with the value before it kept
//! only once the hook writes, and not at all when it only appends.
//!
//! A refused, failed or panicking hook must leave the value as it was (SPEC P1.4, P1.5), and the
//! rule decides against the value before the hook. Two ways to keep it:
//! - **An append** ([`Draft::append`], for values with an [`AppendText`] text) records the text's
//!   length before the first append and nothing else: an append is undone by truncating, and the
//!   hook's rule for appends (`Hook::admit_append`) decides on the value as it is. An appender
//!   costs its own append.
//! - **Any other write** (through `DerefMut`) first copies the value into the batch's spare
//!   buffer, which travels with the batch from one plugin to the next (no allocation once it
//!   exists when the value's `clone_from` reuses it, as `UserMessage`'s does).

use std::ops::{Deref, DerefMut};

use hookline_messages::edit::AppendText;

/// The value an in-place hook edits (register it with `PluginRegistration::edit`). Read it
/// through `Deref`; append with [`Draft::append`] (no copy); write anything else through
/// `DerefMut` (the value before is copied first).
///
/// ```
/// use hookline_actors::plugin::PluginRegistration;
/// use hookline_messages::hook::OnUserMessage;
///
/// // Appends in place: no new message is built, no copy is kept, and the rule still checks the
/// // result.
/// let tag = PluginRegistration::new("tag").edit(OnUserMessage, |_, message| {
///     message.append(" [tagged]");
///     Ok(())
/// });
/// # let _ = tag;
/// ```
pub struct Draft<'a, T: Clone> {
    value: &'a mut T,
    spare: &'a mut Option<T>,
    written: Written<T>,
}

/// How a draft was written, as the runtime needs to know to check and undo it.
pub(crate) enum Written<T> {
    /// Not at all.
    No,
    /// Only appended to.
    Appended(Appended<T>),
    /// Written through `DerefMut`: the value before it is in the spare.
    Saved,
}

/// What an append-only edit needs to be checked and undone.
pub(crate) struct Appended<T> {
    /// The text's length before the first append.
    pub(crate) len: usize,
    /// Truncates the text back to a length it had.
    pub(crate) undo: fn(&mut T, usize),
    /// Whether any append added a byte.
    pub(crate) grew: bool,
}

impl<T> Clone for Appended<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Appended<T> {}

impl<T> Clone for Written<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Written<T> {}

impl<'a, T: Clone> Draft<'a, T> {
    /// A draft of `value`; a write through `DerefMut` saves the value before it into `spare`.
    pub(crate) fn new(value: &'a mut T, spare: &'a mut Option<T>) -> Self {
        Self {
            value,
            spare,
            written: Written::No,
        }
    }

    /// Whether the hook wrote through the draft (appended or otherwise).
    pub fn written(&self) -> bool {
        !matches!(self.written, Written::No)
    }

    /// How the hook wrote.
    pub(crate) fn how(&self) -> Written<T> {
        self.written
    }
}

impl<T: Clone + AppendText> Draft<'_, T> {
    /// Appends `text` to the value's text in place. Nothing is copied: a refused, failed or
    /// panicked hook's appends are cut off again.
    pub fn append(&mut self, text: &str) {
        match &mut self.written {
            Written::No => {
                self.written = Written::Appended(Appended {
                    len: self.value.text_len(),
                    undo: T::truncate_text,
                    grew: !text.is_empty(),
                });
            }
            Written::Appended(appended) => appended.grew |= !text.is_empty(),
            Written::Saved => {}
        }
        self.value.push_text(text);
    }
}

impl<T: Clone> Deref for Draft<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: Clone> DerefMut for Draft<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        match self.written {
            Written::Saved => {}
            Written::No => {
                save(self.value, self.spare);
                self.written = Written::Saved;
            }
            // The value before the appends is the value now, cut back.
            Written::Appended(Appended { len, undo, .. }) => {
                save(self.value, self.spare);
                if let Some(spare) = self.spare.as_mut() {
                    undo(spare, len);
                }
                self.written = Written::Saved;
            }
        }
        self.value
    }
}

/// Copies `value` into `spare`, reusing its buffers when it has some.
pub(crate) fn save<T: Clone>(value: &T, spare: &mut Option<T>) {
    match spare {
        Some(spare) => spare.clone_from(value),
        None => *spare = Some(value.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookline_messages::user::UserMessage;

    #[test]
    fn reading_saves_nothing_and_the_first_write_saves_the_value_before() {
        let (mut value, mut spare) = (String::from("before"), None);
        let mut draft = Draft::new(&mut value, &mut spare);
        assert_eq!(draft.len(), 6);
        assert!(!draft.written());
        draft.push_str(" and after");
        draft.push('!');
        assert!(draft.written());
        assert_eq!(value, "before and after!");
        assert_eq!(spare.as_deref(), Some("before"));
    }

    #[test]
    fn appending_saves_nothing_and_a_later_write_saves_the_value_before_the_appends() {
        let (mut value, mut spare) = (UserMessage::new("hi"), None);
        let mut draft = Draft::new(&mut value, &mut spare);
        draft.append(" #1");
        assert!(matches!(
            draft.how(),
            Written::Appended(Appended {
                len: 2,
                grew: true,
                ..
            })
        ));
        draft.text.push('!');
        assert!(matches!(draft.how(), Written::Saved));
        assert_eq!(value.text, "hi #1!");
        assert_eq!(spare, Some(UserMessage::new("hi")));
    }
}
