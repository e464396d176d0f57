//! The spec's rules, one function per hook: each takes the value before a hook and the hook's
//! proposed replacement, and returns the value to hand on or the [`Refusal`] that skips it.
//!
//! Every "cannot" of SPEC P2 and R1 to R4 (and P3.5, P3.9) lives here and only here. The functions
//! are pure: no I/O, no runtime, so they are tested directly and by property tests.
//!
//! [`Refusal`]: crate::note::Refusal

pub mod approval;
pub mod compaction;
pub mod prompt;
pub mod raw;
pub mod rebuild;
pub mod tool;
pub mod transform;
pub mod user_message;

mod append;

use crate::note::Note;

/// A replacement that a rule accepted, possibly with a host note about what was left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied<T> {
    /// The value the next hook sees.
    pub value: T,
    /// A host note about part of the replacement that was ignored (SPEC P3.2).
    pub notice: Option<Note>,
}

impl<T> Applied<T> {
    /// An accepted value with no note.
    pub fn plain(value: T) -> Self {
        Self {
            value,
            notice: None,
        }
    }
}
