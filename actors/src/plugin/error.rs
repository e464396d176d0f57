//! The error a hook method returns.

use std::fmt;

use hookline_messages::note::SkipReason;

/// A hook's failure. Its message, trimmed, becomes the note's reason (SPEC P1.4); an empty
/// message renders as `it failed.`. An error made with [`HookError::skip`] carries a typed
/// [`SkipReason`] instead, which the note keeps as it is (an external plugin's protocol faults).
///
/// Any `std::error::Error` converts into it, so `?` works inside hook methods.
#[derive(Clone, PartialEq, Eq)]
pub struct HookError {
    message: String,
    reason: Option<SkipReason>,
}

impl HookError {
    /// An error with this message.
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            reason: None,
        }
    }

    /// An error that skips the hook for a typed `reason` (a timeout, a protocol fault, ...);
    /// the note carries `reason` itself, not its text.
    pub fn skip(reason: SkipReason) -> Self {
        Self {
            message: reason.to_string(),
            reason: Some(reason),
        }
    }

    /// The message as given (for [`HookError::skip`], the reason's sentence).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Why the hook is skipped: the typed reason, or [`SkipReason::Failed`] with the message.
    pub fn into_skip_reason(self) -> SkipReason {
        self.reason
            .unwrap_or_else(|| SkipReason::failed(&self.message))
    }
}

impl<E: std::error::Error> From<E> for HookError {
    fn from(error: E) -> Self {
        Self::msg(error.to_string())
    }
}

impl fmt::Debug for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            Some(reason) => f.debug_tuple("HookError").field(reason).finish(),
            None => f.debug_tuple("HookError").field(&self.message).finish(),
        }
    }
}

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_a_failure_and_a_skip_keeps_its_typed_reason() {
        assert_eq!(
            HookError::msg("  boom ").into_skip_reason(),
            SkipReason::Failed("boom".into())
        );
        assert_eq!(
            HookError::skip(SkipReason::NotProtocol).into_skip_reason(),
            SkipReason::NotProtocol
        );
        assert_eq!(
            HookError::skip(SkipReason::Exited).message(),
            "it exited before it replied."
        );
    }
}
