//! A conversation's messages encoded once (issue 47): each call of a session sends the whole
//! history, and encoding it again at every call made a turn's cost grow with the conversation
//! (serde's string escaping was the largest user-space cost of a served turn at turn 3,000).
//!
//! A request's items are shared (`Arc<Item>`, docs/performance.md "Long conversations"): the
//! items a call sends again are the very allocations the previous call sent. [`PrefixCache`]
//! keeps, per conversation, the encoded messages of the items up to the last place where a new
//! message must start, and the items themselves as [`Weak`] references; the next call whose items
//! begin with the same allocations reuses those bytes and encodes only what follows.
//!
//! Why an address is enough: a kept `Weak` keeps its allocation, so no other item can be made at
//! that address while the entry lives; and an item cannot change in place while a `Weak` to it
//! exists (`Arc::get_mut` refuses, `Arc::make_mut` moves the value to a new allocation), so a
//! hook's edit is always a new address. The system item may be another at any call (a new active
//! system text, compaction's own): it is encoded each time and never cached (entries start at
//! the second item, whose address is the conversation's key).

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use hookline_messages::model::Item;
use lru::LruCache;
use serde::Serialize;

use hookline_host::provider::ProviderError;

/// Conversations kept at most.
const CONVERSATIONS: NonZeroUsize = match NonZeroUsize::new(1024) {
    Some(n) => n,
    None => unreachable!(),
};
/// Encoded bytes kept at most, over every conversation; the least recently used go first.
const BUDGET_BYTES: usize = 64 * 1024 * 1024;
/// Histories shorter than this are encoded whole: the look-up would cost what it saves.
const MIN_ITEMS: usize = 8;
/// Room reserved after the kept bytes for the messages encoded anew.
const TAIL_ROOM: usize = 16 * 1024;
/// A kept entry's spare room, as a fraction of what it holds (1/`SLACK`): its buffers grow by at
/// least that much when they must, and by no more (issue 49). Doubling, the vector's own growth,
/// left a buffer between one and two times its bytes, and a fresh process that rebuilt every
/// conversation's entry within two calls held them all at twice: a server's successor then held
/// several percent more memory than the server it replaced for the same sessions.
const SLACK: usize = 16;

/// How a wire family encodes messages, for [`PrefixCache::encode`].
pub(crate) trait Messages {
    /// Whether `items[at]` starts a new message of its own after the items before it (whatever
    /// comes after it), so the messages of `items[..at]` are final: encoding `items[..at]` and
    /// `items[at..]` apart gives the messages of `items` whole. A family whose messages merge
    /// with their neighbours (Anthropic's roles) looks back; one whose items start messages by
    /// kind alone (chat completions) looks at `items[at]` only. `false` is always safe: it only
    /// keeps less.
    fn starts_message(&self, items: &[Arc<Item>], at: usize) -> bool;
    /// The messages of `items` (which begin where a message starts), as JSON objects separated
    /// by commas, appended to `out`.
    fn encode(&self, items: &[Arc<Item>], out: &mut Vec<u8>) -> Result<(), ProviderError>;
}

/// One conversation's encoded prefix.
struct Entry {
    /// Items 1.. of the request that made it, up to (not including) the cut.
    items: Vec<Weak<Item>>,
    /// Their messages, encoded.
    encoded: Vec<u8>,
}

impl Entry {
    /// The memory the entry holds, as [`BUDGET_BYTES`] counts it: its buffers' capacity.
    fn size(&self) -> usize {
        self.encoded.capacity() + self.items.capacity() * std::mem::size_of::<Weak<Item>>()
    }

    /// Whether `items` (a whole request) begins with this entry's items, and a message starts
    /// right after them (or nothing follows), so the encoded bytes are the same for it.
    fn fits<M: Messages + ?Sized>(&self, items: &[Arc<Item>], messages: &M) -> bool {
        let cut = self.items.len() + 1;
        cut <= items.len()
            && self
                .items
                .iter()
                .zip(&items[1..cut])
                .all(|(kept, item)| std::ptr::eq(kept.as_ptr(), Arc::as_ptr(item)))
            && (cut == items.len() || messages.starts_message(items, cut))
    }
}

/// Encoded message prefixes of recent conversations (see the module's documentation).
pub(crate) struct PrefixCache {
    state: Mutex<State>,
    /// Items whose encoded messages were reused, over every call (tests).
    #[cfg(test)]
    reused: std::sync::atomic::AtomicUsize,
}

struct State {
    entries: LruCache<usize, Entry>,
    bytes: usize,
}

impl Default for PrefixCache {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                entries: LruCache::new(CONVERSATIONS),
                bytes: 0,
            }),
            #[cfg(test)]
            reused: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl PrefixCache {
    /// The messages of `items` (a whole request, the system item first) as JSON objects
    /// separated by commas: byte for byte what `messages.encode(items)` writes.
    #[cfg(test)]
    pub(crate) fn encode<M: Messages + ?Sized>(
        &self,
        items: &[Arc<Item>],
        messages: &M,
    ) -> Result<Vec<u8>, ProviderError> {
        let mut out = Vec::new();
        self.encode_into(items, messages, &mut out)?;
        Ok(out)
    }

    /// [`Self::encode`], appended to `out` (a body being assembled): the kept bytes are copied
    /// once, straight into the body.
    pub(crate) fn encode_into<M: Messages + ?Sized>(
        &self,
        items: &[Arc<Item>],
        messages: &M,
        out: &mut Vec<u8>,
    ) -> Result<(), ProviderError> {
        // The system item may be another at any call, so the prefix kept starts after it: only
        // where the second item starts a message of its own.
        if items.len() < MIN_ITEMS || !messages.starts_message(items, 1) {
            return messages.encode(items, out);
        }
        let from = out.len();
        messages.encode(&items[..1], out)?;
        let key = Arc::as_ptr(&items[1]) as usize;
        let (mut kept, mut encoded) = match self.take(key) {
            Some(entry) if entry.fits(items, messages) => (entry.items, entry.encoded),
            _ => (Vec::new(), Vec::new()),
        };
        #[cfg(test)]
        self.reused
            .fetch_add(kept.len(), std::sync::atomic::Ordering::Relaxed);
        let start = kept.len() + 1;
        // The last place a message starts: what comes before it is final, what comes after may
        // still grow (an assistant message gains the tool calls that follow it).
        let cut = (start + 1..items.len())
            .rev()
            .find(|&i| messages.starts_message(items, i))
            .unwrap_or(start);
        append(&mut encoded, &items[start..cut], messages)?;
        grow(&mut kept, cut - start);
        kept.extend(items[start..cut].iter().map(Arc::downgrade));
        // Room for the kept bytes and a usual last message, so the body is not moved again.
        out.reserve(encoded.len() + TAIL_ROOM);
        if !encoded.is_empty() {
            if out.len() > from {
                out.push(b',');
            }
            out.extend_from_slice(&encoded);
        }
        let before = out.len();
        if before > from {
            out.push(b',');
        }
        let mark = out.len();
        messages.encode(&items[cut..], out)?;
        if out.len() == mark {
            // The last items sent nothing: no comma for them either.
            out.truncate(before);
        }
        self.keep(
            key,
            Entry {
                items: kept,
                encoded,
            },
        );
        Ok(())
    }

    /// A request body: `head`'s fields, then `"messages"` (the kept prefix and what is new),
    /// then `tail`'s fields, byte for byte what one struct with those fields in that order
    /// serialises to. `head` and `tail` must serialise to objects of at least one field.
    pub(crate) fn body<M: Messages + ?Sized>(
        &self,
        head: &impl Serialize,
        items: &[Arc<Item>],
        messages: &M,
        tail: &impl Serialize,
    ) -> Result<Vec<u8>, ProviderError> {
        let head = serde_json::to_vec(head).map_err(unsendable)?;
        let tail = serde_json::to_vec(tail).map_err(unsendable)?;
        let mut body = Vec::with_capacity(head.len() + tail.len() + 16);
        // The head without its `}`, the tail without its `{`.
        body.extend_from_slice(head.strip_suffix(b"}").unwrap_or(&head));
        body.extend_from_slice(b",\"messages\":[");
        self.encode_into(items, messages, &mut body)?;
        body.extend_from_slice(b"],");
        body.extend_from_slice(tail.get(1..).unwrap_or_default());
        Ok(body)
    }

    fn take(&self, key: usize) -> Option<Entry> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = state.entries.pop(&key)?;
        state.bytes -= entry.size();
        Some(entry)
    }

    fn keep(&self, key: usize, entry: Entry) {
        let size = entry.size();
        if entry.items.is_empty() || size > BUDGET_BYTES / 4 {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.bytes += size;
        if let Some((_, old)) = state.entries.push(key, entry) {
            state.bytes -= old.size();
        }
        while state.bytes > BUDGET_BYTES {
            match state.entries.pop_lru() {
                Some((_, old)) => state.bytes -= old.size(),
                None => break,
            }
        }
    }

    /// Items whose encoded messages were reused so far (tests).
    #[cfg(test)]
    pub(crate) fn reused(&self) -> usize {
        self.reused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Conversations kept (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .len()
    }
}

/// The error of a request body that cannot be encoded (both families).
pub(crate) fn unsendable(e: serde_json::Error) -> ProviderError {
    ProviderError::Unsendable(format!("the request cannot be encoded ({e})"))
}

/// Each of `messages` as JSON, separated by commas, appended to `out`: what a family's
/// [`Messages::encode`] writes for the wire messages its mapping made.
pub(crate) fn write_messages<T: Serialize>(
    messages: &[T],
    out: &mut Vec<u8>,
) -> Result<(), ProviderError> {
    for (n, message) in messages.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, message).map_err(unsendable)?;
    }
    Ok(())
}

/// Appends the messages of `items` to `encoded`, a comma between the two when both have some.
fn append<M: Messages + ?Sized>(
    encoded: &mut Vec<u8>,
    items: &[Arc<Item>],
    messages: &M,
) -> Result<(), ProviderError> {
    if items.is_empty() {
        return Ok(());
    }
    let mut more = Vec::new();
    messages.encode(items, &mut more)?;
    join(encoded, &more);
    Ok(())
}

/// `out` then `more`, with a comma between them when both are non-empty.
fn join(out: &mut Vec<u8>, more: &[u8]) {
    if more.is_empty() {
        return;
    }
    grow(out, more.len() + 1);
    if !out.is_empty() {
        out.push(b',');
    }
    out.extend_from_slice(more);
}

/// Makes room in a kept entry's buffer for `more` elements: when it has too little, room for
/// them and 1/[`SLACK`] of the whole, so its capacity stays within that of its length.
fn grow<T>(buffer: &mut Vec<T>, more: usize) {
    if buffer.capacity() - buffer.len() < more {
        let needed = buffer.len() + more;
        buffer.reserve_exact(needed + needed / SLACK - buffer.len());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use hookline_messages::model::ItemBody;
    use proptest::prelude::*;

    /// A family where every item but a tool call starts a message, and a tool call joins the
    /// message before it: the shape of chat completions, small enough to check by eye.
    struct Joined;

    impl Messages for Joined {
        fn starts_message(&self, items: &[Arc<Item>], at: usize) -> bool {
            !matches!(items[at].body, ItemBody::ToolCall { .. })
        }
        fn encode(&self, items: &[Arc<Item>], out: &mut Vec<u8>) -> Result<(), ProviderError> {
            let mut messages: Vec<String> = Vec::new();
            for item in items {
                match (&item.body, messages.last_mut()) {
                    (ItemBody::ToolCall { name, .. }, Some(last)) => {
                        last.push('+');
                        last.push_str(name);
                    }
                    _ => messages.push(item.id.0.clone()),
                }
            }
            let json = serde_json::to_string(&messages)
                .map_err(|e| ProviderError::Unsendable(e.to_string()))?;
            out.extend_from_slice(&json.as_bytes()[1..json.len() - 1]);
            Ok(())
        }
    }

    /// A family where neighbours of one role share a message (tool calls one role, the rest the
    /// other): the shape of the Anthropic Messages API, where whether an item starts a message
    /// depends on the item before it.
    struct Merged;

    fn is_call(item: &Item) -> bool {
        matches!(item.body, ItemBody::ToolCall { .. })
    }

    impl Messages for Merged {
        fn starts_message(&self, items: &[Arc<Item>], at: usize) -> bool {
            at == 0 || is_call(&items[at - 1]) != is_call(&items[at])
        }
        fn encode(&self, items: &[Arc<Item>], out: &mut Vec<u8>) -> Result<(), ProviderError> {
            let mut messages: Vec<String> = Vec::new();
            for (n, item) in items.iter().enumerate() {
                match messages.last_mut() {
                    Some(last) if is_call(&items[n - 1]) == is_call(item) => {
                        last.push('+');
                        last.push_str(&item.id.0);
                    }
                    _ => messages.push(item.id.0.clone()),
                }
            }
            let json = serde_json::to_string(&messages)
                .map_err(|e| ProviderError::Unsendable(e.to_string()))?;
            out.extend_from_slice(&json.as_bytes()[1..json.len() - 1]);
            Ok(())
        }
    }

    fn item(n: usize, call: bool) -> Arc<Item> {
        let body = if call {
            ItemBody::ToolCall {
                call_id: format!("c{n}"),
                name: format!("t{n}"),
                arguments: serde_json::json!({}),
            }
        } else {
            ItemBody::User {
                text: format!("u{n}"),
                images: Vec::new(),
            }
        };
        Arc::new(Item::new(format!("i{n}"), body))
    }

    fn whole(items: &[Arc<Item>]) -> Vec<u8> {
        whole_in(items, &Joined)
    }

    fn whole_in<M: Messages>(items: &[Arc<Item>], messages: &M) -> Vec<u8> {
        let mut out = Vec::new();
        messages.encode(items, &mut out).unwrap();
        out
    }

    proptest! {
        /// A conversation grown call by call (in both families), each call with a new system item, some calls
        /// editing an earlier item (a new allocation, as a hook's edit is) or dropping the tail
        /// (compaction): every call's bytes equal encoding the whole request.
        #[test]
        fn reused_bytes_equal_encoding_everything(
            steps in proptest::collection::vec((0usize..4, proptest::bool::ANY, 0usize..40), 1..40)
        ) {
            let cache = PrefixCache::default();
            let merged = PrefixCache::default();
            let mut history: Vec<Arc<Item>> = Vec::new();
            let mut n = 0;
            for (grow, call, edit) in steps {
                for _ in 0..grow {
                    n += 1;
                    history.push(item(n, call && n % 2 == 0));
                }
                if edit % 3 == 0 && !history.is_empty() {
                    // An edit, sometimes into an item that joins the message before it.
                    let at = edit % history.len();
                    n += 1;
                    history[at] = item(n, call);
                } else if edit % 11 == 0 {
                    history.truncate(history.len() / 2);
                }
                n += 1;
                let mut request = vec![item(n, false)];
                request.extend(history.iter().cloned());
                prop_assert_eq!(cache.encode(&request, &Joined).unwrap(), whole(&request));
                prop_assert_eq!(
                    merged.encode(&request, &Merged).unwrap(),
                    whole_in(&request, &Merged)
                );
            }
        }
    }

    #[test]
    fn a_long_conversation_is_kept_and_a_short_one_is_not() {
        let cache = PrefixCache::default();
        let short: Vec<_> = (0..MIN_ITEMS - 1).map(|n| item(n, false)).collect();
        assert_eq!(cache.encode(&short, &Joined).unwrap(), whole(&short));
        assert_eq!(cache.len(), 0);
        let long: Vec<_> = (0..MIN_ITEMS * 2).map(|n| item(n, n % 3 == 0)).collect();
        assert_eq!(cache.encode(&long, &Joined).unwrap(), whole(&long));
        assert_eq!(cache.len(), 1);
    }

    /// What the cache holds is counted by capacity, and a conversation's entry, grown call by
    /// call or made whole at once (as a fresh process makes it), holds at most 1/`SLACK` more than
    /// its bytes (issue 49: vector doubling let it hold up to twice, and a fresh one twice).
    #[test]
    fn an_entry_holds_little_more_than_its_bytes_however_it_grew() {
        // One more item to `history`, a call with it through `cache`, and the entry it keeps
        // checked: counted by capacity, at most 1/SLACK over its bytes.
        let call = |cache: &PrefixCache, history: &mut Vec<Arc<Item>>, n: usize| {
            history.push(item(n, false));
            let mut request = vec![item(0, false)];
            request.extend(history.iter().cloned());
            cache.encode(&request, &Joined).unwrap();
            let state = cache.state.lock().unwrap();
            let (_, entry) = state.entries.peek_lru().unwrap();
            assert_eq!(state.bytes, entry.size());
            let (len, capacity) = (entry.encoded.len(), entry.encoded.capacity());
            assert!(
                capacity <= len + len / SLACK + 16,
                "{len} bytes in {capacity}"
            );
        };
        let grown = PrefixCache::default();
        let mut history: Vec<Arc<Item>> = (1..MIN_ITEMS).map(|n| item(n, false)).collect();
        for n in 0..2_000 {
            call(&grown, &mut history, MIN_ITEMS + n);
        }
        // A fresh cache given the same conversation twice, one item more the second time.
        let fresh = PrefixCache::default();
        for more in [0, 1] {
            call(&fresh, &mut history, 10_000 + more);
        }
    }

    #[test]
    fn an_item_changed_in_place_is_never_read_from_the_cache() {
        let cache = PrefixCache::default();
        let mut request: Vec<_> = (0..MIN_ITEMS * 2).map(|n| item(n, false)).collect();
        cache.encode(&request, &Joined).unwrap();
        // The cache holds only `Weak`s: an edit through `make_mut` must move the item.
        let before = Arc::as_ptr(&request[3]);
        Arc::make_mut(&mut request[3]).id = "edited".into();
        assert!(!std::ptr::eq(before, Arc::as_ptr(&request[3])));
        let bytes = cache.encode(&request, &Joined).unwrap();
        assert_eq!(bytes, whole(&request));
        assert!(String::from_utf8(bytes).unwrap().contains("edited"));
    }
}
