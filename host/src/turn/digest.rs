//! The SHA-256 of each request as sent (what the archive keeps, issue 25), without serialising
//! the whole conversation at every call (issue 22).
//!
//! The digest is over serde_json's bytes of the request, `{"purpose":..,"acceptsImages":..,
//! "items":[item,item,...]}`: a stream, so the hasher's state after the items a conversation
//! keeps sending (its stored prefix, shared with the transcript) is kept, and the next call of
//! the same purpose hashes only the items after it. A request that is the kept one's list grown
//! (the same [`Lineage`], the transcript's list appended in place) resumes without comparing
//! the kept items (issue 47). The bytes are exactly
//! [`request_digest`](super::request_digest)'s: a test compares the two.

use std::sync::Arc;

use hookline_messages::model::{Item, Items, Lineage, ModelRequest, Purpose};
use sha2::{Digest, Sha256};

/// The hasher's state after a request's stable prefix, per purpose (one conversation's).
#[derive(Default)]
pub(crate) struct RequestDigests {
    prefixes: Vec<Prefix>,
}

/// A request's header and first items, hashed.
struct Prefix {
    purpose: Purpose,
    accepts_images: bool,
    /// The items hashed (shared with the requests, so this holds pointers only).
    items: Vec<Arc<Item>>,
    /// The lineage of the list they were the first items of.
    lineage: Lineage,
    /// The state after the header and those items (and the commas between them).
    state: Sha256,
}

impl RequestDigests {
    /// The digest of `request` in lowercase hex. Its first `stable` items are the ones the
    /// next call is expected to send again (those the hooks left as built): the state after
    /// them is kept for it.
    ///
    /// Only work and plan calls keep a state: a compaction's request is sent once, and keeping
    /// its items would hold the conversation it folded until the next compaction.
    pub(crate) fn digest(&mut self, request: &ModelRequest, stable: usize) -> String {
        if !request.purpose.is_turn_call() {
            return super::request_digest(request);
        }
        let stable = stable.min(request.items.len());
        let at = self.prefixes.iter().position(|p| {
            p.purpose == request.purpose && p.accepts_images == request.accepts_images
        });
        // The kept prefix is used when the request starts with the same items: known at once
        // when its list is the one they came from, grown by appends only (the same lineage);
        // else compared (shared, or equal: the system item is made anew for each new system
        // record, whose text may be the same).
        let lineage = request.items.lineage();
        let resumed = at.map(|at| &self.prefixes[at]).filter(|p| {
            p.items.len() <= request.items.len()
                && (p.lineage == lineage || p.items.iter().zip(&request.items).all(|(a, b)| a == b))
        });
        let (mut hasher, from) = match resumed {
            Some(p) => (p.state.clone(), p.items.len()),
            None => (header(request), 0),
        };
        let mut kept = None;
        for (n, item) in request.items.iter().enumerate().skip(from) {
            if n == stable && n > from {
                kept = Some(hasher.clone());
            }
            if n > 0 {
                hasher.update(b",");
            }
            hasher.update(serde_json::to_vec(item).unwrap_or_default());
        }
        if stable == request.items.len() && stable > from {
            kept = Some(hasher.clone());
        }
        if let Some(state) = kept {
            let items = &request.items[..stable];
            match at.map(|at| &mut self.prefixes[at]) {
                Some(p) if resumed_from(p, from) => {
                    p.items.extend_from_slice(&items[from..]);
                    p.lineage = lineage;
                    p.state = state;
                }
                Some(p) => {
                    p.items = items.to_vec();
                    p.lineage = lineage;
                    p.state = state;
                }
                None => self.prefixes.push(Prefix {
                    purpose: request.purpose,
                    accepts_images: request.accepts_images,
                    items: items.to_vec(),
                    lineage,
                    state,
                }),
            }
        }
        hasher.update(b"]}");
        hex(&hasher.finalize())
    }
}

/// Whether the digest just made resumed from `p` (which covers `from` items).
fn resumed_from(p: &Prefix, from: usize) -> bool {
    from > 0 && p.items.len() == from
}

/// The hasher after the request's bytes up to its first item: the request with no items,
/// without its closing `]}`.
fn header(request: &ModelRequest) -> Sha256 {
    let empty = ModelRequest {
        purpose: request.purpose,
        accepts_images: request.accepts_images,
        items: Items::new(),
    };
    let bytes = serde_json::to_vec(&empty).unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(bytes.strip_suffix(b"]}").unwrap_or(&bytes));
    hasher
}

/// Bytes in lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::request_digest;
    use hookline_messages::model::ItemBody;

    fn user(id: &str, text: &str) -> Arc<Item> {
        Arc::new(Item::new(
            id,
            ItemBody::User {
                text: text.into(),
                images: Vec::new(),
            },
        ))
    }

    fn request(purpose: Purpose, items: &[Arc<Item>]) -> ModelRequest {
        ModelRequest {
            purpose,
            accepts_images: purpose == Purpose::Work,
            items: items.to_vec().into(),
        }
    }

    #[test]
    fn every_digest_is_the_whole_requests_digest() {
        let mut digests = RequestDigests::default();
        let mut items: Vec<Arc<Item>> = vec![user("system", "be kind")];
        for turn in 0..6 {
            items.push(user(&format!("r{turn}"), &format!("message {turn}")));
            // The last item edited for this call only (a hook's copy), then an added one.
            let mut sent = items.clone();
            let last = sent.len() - 1;
            sent[last] = user(&format!("r{turn}"), "edited");
            sent.push(user("reminder", "cite file names"));
            for purpose in [Purpose::Work, Purpose::Compaction, Purpose::Work] {
                let sent = request(purpose, &sent);
                assert_eq!(
                    digests.digest(&sent, last),
                    request_digest(&sent),
                    "turn {turn}, {purpose:?}"
                );
            }
            // Nothing changed by a hook: all of it is stable.
            let whole = request(Purpose::Work, &items);
            assert_eq!(
                digests.digest(&whole, whole.items.len()),
                request_digest(&whole)
            );
        }
        // A request that no longer starts with the kept items (compacted) starts over.
        let compacted = request(
            Purpose::Work,
            &[user("system", "be kind"), user("s", "sum")],
        );
        assert_eq!(digests.digest(&compacted, 2), request_digest(&compacted));
        let empty = request(Purpose::Work, &[]);
        assert_eq!(digests.digest(&empty, 0), request_digest(&empty));
    }

    #[test]
    fn a_list_grown_in_place_resumes_and_an_edited_one_is_hashed_again() {
        // The request holds the list itself (a clone is the same list, its lineage with it).
        fn digest_is_whole(digests: &mut RequestDigests, list: &Items) {
            let sent = ModelRequest {
                purpose: Purpose::Work,
                accepts_images: false,
                items: list.clone(),
            };
            assert_eq!(
                digests.digest(&sent, sent.items.len()),
                request_digest(&sent)
            );
        }
        let mut digests = RequestDigests::default();
        let mut list: Items = vec![user("system", "be kind")].into();
        let lineage = list.lineage();
        for turn in 0..4 {
            list.push(user(&format!("r{turn}"), &format!("message {turn}")));
            digest_is_whole(&mut digests, &list);
        }
        assert_eq!(list.lineage(), lineage, "grown in place");
        // An item the kept state covers, edited in place (nothing else holds the list): a new
        // lineage, so the kept state is not taken on trust.
        if let ItemBody::User { text, .. } = &mut Arc::make_mut(&mut list.to_mut()[1]).body {
            *text = "rewritten".into();
        }
        digest_is_whole(&mut digests, &list);
    }
}
