//! Which session ids may name a directory: the store's one rule against path traversal.

use std::fmt;

/// The longest session id the store accepts, in bytes.
pub const MAX_SESSION_ID_BYTES: usize = 128;

/// Why a session id cannot name a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidSessionId {
    /// The id is empty.
    Empty,
    /// The id is longer than [`MAX_SESSION_ID_BYTES`].
    TooLong,
    /// The id starts with a dot (`.`, `..` and hidden names are refused).
    LeadingDot,
    /// The id holds a character outside `A-Z a-z 0-9 - _ .` (a `/`, for example).
    BadCharacter(char),
}

impl fmt::Display for InvalidSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("it is empty"),
            Self::TooLong => write!(f, "it is longer than {MAX_SESSION_ID_BYTES} bytes"),
            Self::LeadingDot => f.write_str("it starts with a dot"),
            Self::BadCharacter(c) => write!(f, "it contains {c:?}"),
        }
    }
}

/// Checks that `id` is a safe file name: 1 to 128 bytes of ASCII letters, digits, `-`, `_` and
/// `.`, not starting with a dot. Such a name can never climb out of the sessions directory
/// (no separators, never `.` or `..`) and means the same on every file system.
///
/// # Errors
/// Returns why the id is refused.
pub fn validate_session_id(id: &str) -> Result<(), InvalidSessionId> {
    if id.is_empty() {
        return Err(InvalidSessionId::Empty);
    }
    if id.len() > MAX_SESSION_ID_BYTES {
        return Err(InvalidSessionId::TooLong);
    }
    if id.starts_with('.') {
        return Err(InvalidSessionId::LeadingDot);
    }
    match id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        Some(c) => Err(InvalidSessionId::BadCharacter(c)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_ids_are_accepted() {
        for id in ["s1", "2024-05-01T10.00_abc", "A-b_c.d"] {
            assert_eq!(validate_session_id(id), Ok(()), "{id}");
        }
    }

    #[test]
    fn traversal_and_separators_are_refused() {
        assert_eq!(validate_session_id(""), Err(InvalidSessionId::Empty));
        assert_eq!(validate_session_id("."), Err(InvalidSessionId::LeadingDot));
        assert_eq!(validate_session_id(".."), Err(InvalidSessionId::LeadingDot));
        assert_eq!(
            validate_session_id("../x"),
            Err(InvalidSessionId::LeadingDot)
        );
        assert_eq!(
            validate_session_id("a/../../x"),
            Err(InvalidSessionId::BadCharacter('/'))
        );
        assert_eq!(
            validate_session_id("/etc"),
            Err(InvalidSessionId::BadCharacter('/'))
        );
        assert_eq!(
            validate_session_id("a\\b"),
            Err(InvalidSessionId::BadCharacter('\\'))
        );
        assert_eq!(
            validate_session_id("a\0b"),
            Err(InvalidSessionId::BadCharacter('\0'))
        );
        assert_eq!(
            validate_session_id("é"),
            Err(InvalidSessionId::BadCharacter('é'))
        );
        let long = "a".repeat(MAX_SESSION_ID_BYTES + 1);
        assert_eq!(validate_session_id(&long), Err(InvalidSessionId::TooLong));
        assert_eq!(validate_session_id(&long[1..]), Ok(()));
    }
}
