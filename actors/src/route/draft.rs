//! [`Draft`]: the value an in-place hook edits through `&mut`, with the value before it kept
//! only once the hook writes.
//!
//! A refused, failed or panicking hook must leave the value as it was (SPEC P1.4, P1.5), and the
//! rule decides against the value before the hook. So the first write through a draft copies the
//! value into the call's spare buffer, which the call keeps from one plugin to the next: a hook
//! that only reads costs nothing, and a hook that writes costs its own edit and a copy into a
//! buffer that already exists (no allocation when the value's `clone_from` reuses it, as
//! `UserMessage`'s does).

use std::ops::{Deref, DerefMut};

/// The value an in-place hook edits (register it with `PluginRegistration::edit`). Read it
/// through `Deref`; write through `DerefMut`.
///
/// ```
/// use hookline_actors::plugin::PluginRegistration;
/// use hookline_messages::hook::OnUserMessage;
///
/// // Appends in place: no new message is built, and the rule still checks the result.
/// let tag = PluginRegistration::new("tag").edit(OnUserMessage, |_, message| {
///     message.text.push_str(" [tagged]");
///     Ok(())
/// });
/// # let _ = tag;
/// ```
pub struct Draft<'a, T: Clone> {
    value: &'a mut T,
    spare: &'a mut Option<T>,
    saved: bool,
}

impl<'a, T: Clone> Draft<'a, T> {
    /// A draft of `value`; the first write saves the value before it into `spare`.
    pub(crate) fn new(value: &'a mut T, spare: &'a mut Option<T>) -> Self {
        Self {
            value,
            spare,
            saved: false,
        }
    }

    /// Whether the hook wrote through the draft (the value before it is then in the spare).
    pub fn written(&self) -> bool {
        self.saved
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
        if !self.saved {
            match self.spare {
                Some(spare) => spare.clone_from(self.value),
                None => *self.spare = Some(self.value.clone()),
            }
            self.saved = true;
        }
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
