//! Subscriptions and the dispatch order (SPEC G1.2 to G1.4, G4.1, G4.2).
//!
//! A plugin subscribes with strings. Each parses to an exact key, a family, or an unknown string
//! kept as written. Unknown subscriptions stay registered (G4.1): the core never emits them, but a
//! custom emit of the same text reaches them (G4.2).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::key::{EventKey, Family};

/// One subscription, as parsed from what a plugin wrote.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Subscription {
    /// An exact known key (`command:new`).
    Exact(EventKey),
    /// A family name alone (`command`): every action of the family (SPEC G1.2).
    Family(Family),
    /// Anything else, kept as written (`command:nwe`, `session:compact`, `COMMAND:NEW`, `""`).
    /// The gateway never emits it; it matches only a custom emit of the same text (SPEC G4.2).
    Unknown(String),
}

impl Subscription {
    /// Parses what a plugin wrote. Exact and case-sensitive; never fails.
    pub fn parse(text: &str) -> Self {
        if let Some(key) = EventKey::parse_known(text) {
            Self::Exact(key)
        } else if let Some(family) = Family::parse(text) {
            Self::Family(family)
        } else {
            Self::Unknown(text.to_owned())
        }
    }

    /// Whether the gateway emits anything this subscription receives. `false` means the loader
    /// warns ([`crate::note::Note::UnknownSubscription`]) and `hooks info` lists it (SPEC G4.1).
    pub fn is_known(&self) -> bool {
        !matches!(self, Self::Unknown(_))
    }

    /// The subscription as written.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Exact(key) => key.as_str(),
            Self::Family(family) => family.as_str(),
            Self::Unknown(text) => text,
        }
    }

    /// Whether this is the family of `key` (the first dispatch group, SPEC G1.3).
    pub fn is_family_of(&self, key: &EventKey) -> bool {
        matches!(self, Self::Family(family) if key.family() == Some(*family))
    }

    /// Whether this names exactly `key` (the second dispatch group). A custom key matches an
    /// unknown subscription spelled the same (SPEC G4.2); nothing matches `session:compact`
    /// because no key is spelled so (SPEC G1.4).
    pub fn is_exactly(&self, key: &EventKey) -> bool {
        match (self, key) {
            (Self::Exact(mine), key) => mine == key,
            (Self::Unknown(text), EventKey::Custom(custom)) => text == custom.as_str(),
            _ => false,
        }
    }
}

impl fmt::Display for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for Subscription {
    fn from(text: String) -> Self {
        Self::parse(&text)
    }
}

impl From<Subscription> for String {
    fn from(subscription: Subscription) -> Self {
        subscription.as_str().to_owned()
    }
}

/// Parses a plugin's subscriptions, keeping their order and dropping repeats of the same
/// string (a plugin that writes `command` twice is still one family subscriber).
pub fn parse_subscriptions<S: AsRef<str>>(texts: &[S]) -> Vec<Subscription> {
    let mut parsed: Vec<Subscription> = Vec::with_capacity(texts.len());
    for text in texts {
        let subscription = Subscription::parse(text.as_ref());
        if !parsed.contains(&subscription) {
            parsed.push(subscription);
        }
    }
    parsed
}

/// The subscriptions of a plugin the gateway never emits anything for, in the order written
/// (what the load warning and `hooks info` report, SPEC G4.1).
pub fn unknown_subscriptions(subscriptions: &[Subscription]) -> Vec<&Subscription> {
    subscriptions.iter().filter(|s| !s.is_known()).collect()
}

/// Whether any of `subscribers` receives an event of `key`: [`dispatch_order`] is not empty.
pub fn subscribed_to<S: AsRef<[Subscription]>>(subscribers: &[S], key: &EventKey) -> bool {
    subscribers.iter().any(|subs| {
        subs.as_ref()
            .iter()
            .any(|s| s.is_family_of(key) || s.is_exactly(key))
    })
}

/// The calls one event makes, as indexes into `subscribers` (which are in load order).
///
/// SPEC G1.3: first every family subscriber, then every exact subscriber, each group in load
/// order; a subscriber in both groups appears twice (that is the defined behaviour).
pub fn dispatch_order<S: AsRef<[Subscription]>>(subscribers: &[S], key: &EventKey) -> Vec<usize> {
    let in_group = |test: fn(&Subscription, &EventKey) -> bool| {
        subscribers
            .iter()
            .enumerate()
            .filter(move |(_, subs)| subs.as_ref().iter().any(|s| test(s, key)))
            .map(|(index, _)| index)
    };
    in_group(Subscription::is_family_of)
        .chain(in_group(Subscription::is_exactly))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::key::Family;

    /// `subscribed_to` says yes exactly when `dispatch_order` has a call, for every known key
    /// and every plugin set made of family, exact and unknown subscriptions.
    #[test]
    fn subscribed_to_is_a_non_empty_dispatch_order() {
        let texts: Vec<String> = Family::ALL
            .iter()
            .map(|family| family.as_str().to_owned())
            .chain(EventKey::KNOWN.iter().map(ToString::to_string))
            .chain(["custom:thing".to_owned(), "nonsense".to_owned()])
            .collect();
        let sets: Vec<Vec<Subscription>> = std::iter::once(Vec::new())
            .chain(texts.iter().map(|text| parse_subscriptions(&[text])))
            .chain(texts.windows(2).map(parse_subscriptions))
            .collect();
        for key in EventKey::KNOWN {
            for subscribers in [&sets[..1], &sets[1..], &sets[..]] {
                for set in subscribers {
                    let one = std::slice::from_ref(set);
                    assert_eq!(
                        subscribed_to(one, &key),
                        !dispatch_order(one, &key).is_empty(),
                        "{key} with {set:?}"
                    );
                }
                assert_eq!(
                    subscribed_to(subscribers, &key),
                    !dispatch_order(subscribers, &key).is_empty(),
                    "{key}"
                );
            }
        }
    }
}
