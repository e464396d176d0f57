//! The interpreters a manifest may name (SPEC L3): the allowlist the entry point is checked
//! against and the refusal names. Its own file so the entry check and the problems both read it
//! without importing each other.

/// Interpreters a manifest may name. Each is looked up on the host's `PATH`.
pub const ALLOWED_INTERPRETERS: &[&str] = &["python3", "node"];
