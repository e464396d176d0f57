//! Which event subscriptions the gateway can ever deliver. The gateway's typed key parser will
//! replace [`is_known_event_key`]; until then this is the one place that knows the keys.

/// The keys of SPEC G1.1.
pub const EVENT_KEYS: &[&str] = &[
    "command:new",
    "command:reset",
    "command:stop",
    "session:auto-reset",
    "session:patch",
    "session:compact:before",
    "session:compact:after",
    "agent:bootstrap",
    "gateway:startup",
    "gateway:shutdown",
    "gateway:pre-restart",
    "message:received",
    "message:transcribed",
    "message:preprocessed",
    "message:sent",
];

/// The family names a handler may subscribe to alone (SPEC G1.2).
pub const EVENT_FAMILIES: &[&str] = &["command", "session", "agent", "gateway", "message"];

/// Whether the gateway ever emits `key`: one of the fifteen keys or a family name. Anything else
/// (`command:nwe`, and `session:compact`, which is neither a family nor a wildcard: SPEC G1.4) is
/// still registered, with a warning (SPEC G4.1).
pub fn is_known_event_key(key: &str) -> bool {
    EVENT_KEYS.contains(&key) || EVENT_FAMILIES.contains(&key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_families_are_known_and_near_misses_are_not() {
        assert!(is_known_event_key("command:new"));
        assert!(is_known_event_key("message"));
        assert!(!is_known_event_key("command:nwe"));
        assert!(!is_known_event_key("session:compact"));
        assert!(!is_known_event_key("Command:new"));
    }
}
