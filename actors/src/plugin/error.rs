//! The error a hook method returns.

use std::fmt;

/// A hook's failure. Its message, trimmed, becomes the note's reason (SPEC P1.4); an empty
/// message renders as `it failed.`.
///
/// Any `std::error::Error` converts into it, so `?` works inside hook methods.
#[derive(Clone, PartialEq, Eq)]
pub struct HookError {
    message: String,
}

impl HookError {
    /// An error with this message.
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message as given.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<E: std::error::Error> From<E> for HookError {
    fn from(error: E) -> Self {
        Self::msg(error.to_string())
    }
}

impl fmt::Debug for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HookError").field(&self.message).finish()
    }
}

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
