//! Comparing a replay with its recording: archive entries (notes among them) turn by turn,
//! outbound model requests, and the stored records at the end. Entries are aligned first (a
//! longest common subsequence), so one extra note is one difference rather than a shifted tail;
//! an entry present on one side only is compared with `null`. Each difference names the hook
//! whose value it is (or the gateway event) and the plugins that changed that hook's value in
//! the replayed turn (or handled that event).

use hookline_actors::events::Subscribed;
use hookline_messages::event::{dispatch_order, EventKey, Subscription};
use hookline_messages::hook::HookKind;
use hookline_messages::record::{ArchiveEntry, Record};
use serde::Serialize;
use serde_json::Value;

use crate::turn::TappedRequest;

/// One way the replay differs from the recording.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// The turn (1-based; what happened between two turns counts with the turn after it);
    /// `None` for what happened after the last turn and for the stored records.
    pub turn: Option<usize>,
    /// What differs: an archive entry's kind (`tool-result`, `note`, ...), `model-request`, or
    /// a stored record's kind prefixed `record:` (`record:user`).
    pub what: String,
    /// Its position among the turn's compared entries (or requests, or the records) as
    /// recorded; as replayed when only the replay has it.
    pub index: usize,
    /// The hook whose value it is, when one hook makes it.
    pub hook: Option<HookKind>,
    /// The gateway event whose delivery it is (`command:new`, `agent:bootstrap`, ...), for a
    /// `gateway-event` entry and an event handler's note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The plugins that changed that hook's value in the replayed turn, in load order (empty
    /// when none did: the recording's change was not made again).
    pub plugins: Vec<String>,
    /// From the recorded value to the replayed one (`null` stands for an absent value).
    pub patch: json_patch::Patch,
}

/// One value a hook changed in a replayed turn: the hook, the plugins that changed it, and the
/// value it handed on.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    pub(crate) hook: HookKind,
    pub(crate) by: Vec<String>,
    pub(crate) after: Value,
}

/// The values hooks changed in a replayed turn, in order.
pub(crate) type Changes = Vec<Change>;

/// Compares the entries of one turn (model requests excluded: see [`requests`]; so are the
/// notes that the operator was asked, which hold the clock's time: the decision that follows is
/// compared).
pub(crate) fn entries(
    turn: Option<usize>,
    recorded: &[ArchiveEntry],
    replayed: &[ArchiveEntry],
    changes: &Changes,
    handlers: &[Subscribed],
) -> Vec<Difference> {
    let keep = |e: &&ArchiveEntry| {
        !matches!(
            e,
            ArchiveEntry::ModelRequest { .. } | ArchiveEntry::ApprovalAsked { .. }
        )
    };
    // The usual case, a turn reproduced: no JSON, no alignment.
    if recorded
        .iter()
        .filter(keep)
        .eq(replayed.iter().filter(keep))
    {
        return Vec::new();
    }
    let a: Vec<Value> = recorded.iter().filter(keep).map(to_value).collect();
    let b: Vec<Value> = replayed.iter().filter(keep).map(to_value).collect();
    values(turn, "", &a, &b, &Blame { changes, handlers })
}

/// Compares the stored records at the end of a session.
pub(crate) fn records(
    recorded: &[Record],
    replayed: &[Record],
    changes: &Changes,
) -> Vec<Difference> {
    if recorded == replayed {
        return Vec::new();
    }
    let a: Vec<Value> = recorded.iter().map(to_value).collect();
    let b: Vec<Value> = replayed.iter().map(to_value).collect();
    let blame = Blame {
        changes,
        handlers: &[],
    };
    values(None, "record:", &a, &b, &blame)
}

/// One recorded request as the archive keeps it.
pub(crate) struct RecordedRequest<'a> {
    sha256: &'a str,
    changes: Option<&'a json_patch::Patch>,
}

/// The requests a recorded turn keeps (none for recordings that predate them).
pub(crate) fn recorded_requests(entries: &[ArchiveEntry]) -> Vec<RecordedRequest<'_>> {
    entries
        .iter()
        .filter_map(|e| match e {
            ArchiveEntry::ModelRequest {
                sha256, changes, ..
            } => Some(RecordedRequest {
                sha256,
                changes: changes.as_ref(),
            }),
            _ => None,
        })
        .collect()
}

/// Compares a turn's requests, by position: each replayed request (built, sent) with the
/// recorded one, rebuilt from the replay's built request and the recorded hook changes.
pub(crate) fn requests(
    turn: Option<usize>,
    recorded: &[RecordedRequest<'_>],
    replayed: &[TappedRequest],
    changes: &Changes,
) -> Vec<Difference> {
    let mut differences = Vec::new();
    let blamed = Blame {
        changes,
        handlers: &[],
    }
    .of("model-request", None);
    let mut push = |index, patch: json_patch::Patch| {
        differences.push(Difference {
            turn,
            what: "model-request".into(),
            index,
            hook: blamed.hook,
            event: None,
            plugins: blamed.plugins.clone(),
            patch,
        });
    };
    for index in 0..recorded.len().max(replayed.len()) {
        match (recorded.get(index), replayed.get(index)) {
            (
                Some(was),
                Some(TappedRequest {
                    built,
                    sent,
                    sha256,
                }),
            ) => {
                if *sha256 == was.sha256 {
                    continue;
                }
                let built = built.as_ref().unwrap_or(sent);
                let mut then = serde_json::to_value(built).unwrap_or_default();
                if let Some(patch) = was.changes {
                    // A patch that no longer applies leaves the request as built.
                    let _ = json_patch::patch(&mut then, patch);
                }
                let now = serde_json::to_value(sent).unwrap_or_default();
                push(index, json_patch::diff(&then, &now));
            }
            (None, Some(TappedRequest { sent, .. })) => {
                let now = serde_json::to_value(sent).unwrap_or_default();
                push(index, json_patch::diff(&Value::Null, &now));
            }
            (Some(_), None) => {
                let was = serde_json::json!({"request": "as recorded"});
                push(index, json_patch::diff(&was, &Value::Null));
            }
            (None, None) => {}
        }
    }
    differences
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// The `kind` tag of an entry or record.
fn kind(value: &Value) -> &str {
    value.get("kind").and_then(Value::as_str).unwrap_or("")
}

fn values(
    turn: Option<usize>,
    prefix: &str,
    a: &[Value],
    b: &[Value],
    blame: &Blame<'_>,
) -> Vec<Difference> {
    align(a, b)
        .into_iter()
        .map(|pair| {
            let (index, was, now) = match pair {
                Pair::Changed(i, j) => (i, &a[i], &b[j]),
                Pair::Removed(i) => (i, &a[i], &Value::Null),
                Pair::Added(j) => (j, &Value::Null, &b[j]),
            };
            let shown = if was.is_null() { now } else { was };
            let what = format!("{prefix}{}", kind(shown));
            let Blamed {
                hook,
                event,
                plugins,
            } = blame.of(&what, Some(shown));
            Difference {
                turn,
                what,
                index,
                hook,
                event,
                plugins,
                patch: json_patch::diff(was, now),
            }
        })
        .collect()
}

/// The hooks whose values an entry or record of kind `what` holds.
fn hooks_of(what: &str) -> &'static [HookKind] {
    use HookKind::*;
    match what {
        "user-message" | "record:user" => &[OnUserMessage],
        "system-text" | "record:system" => &[OnPrompt, RewritePrompt],
        "tool-call" => &[OnToolCall],
        "approval" => &[OnApproval, RewriteApproval],
        "tool-result" | "tool-output" | "record:tool-result" => &[OnToolResult],
        "compaction" | "record:summary" => &[OnCompaction, RewriteCompaction],
        "model-request" => &[RebuildModel, TransformModel],
        "session-started" => &[OnSessionStarted],
        "session-ended" => &[OnSessionEnded],
        _ => &[],
    }
}

/// What a difference is blamed on: the hooks' changes in the replayed turn, and the plugins
/// that handle each gateway event in the replay.
struct Blame<'a> {
    changes: &'a Changes,
    handlers: &'a [Subscribed],
}

/// The hook (or event) a difference belongs to, and the plugins it names.
struct Blamed {
    hook: Option<HookKind>,
    event: Option<String>,
    plugins: Vec<String>,
}

impl Blame<'_> {
    /// The hook a difference belongs to and the plugins that changed it in the replay: those
    /// whose value the replayed one holds (a tool result's hook change for that call), else
    /// every change of those hooks in the turn. A note names its plugin (and its hook or event)
    /// itself; a gateway event's difference names the plugins that handle that event.
    fn of(&self, what: &str, value: Option<&Value>) -> Blamed {
        let candidates = hooks_of(what);
        let of_hooks: Vec<&Change> = self
            .changes
            .iter()
            .filter(|c| candidates.contains(&c.hook))
            .collect();
        let holding: Vec<&Change> = of_hooks
            .iter()
            .copied()
            .filter(|c| value.is_some_and(|v| holds(v, &c.after)))
            .collect();
        let chosen = if holding.is_empty() {
            of_hooks
        } else {
            holding
        };
        let mut hook = None;
        let mut plugins: Vec<String> = Vec::new();
        for change in chosen {
            hook.get_or_insert(change.hook);
            for plugin in &change.by {
                if !plugins.contains(plugin) {
                    plugins.push(plugin.clone());
                }
            }
        }
        let mut event = None;
        if what == "note" {
            let note = value.and_then(|v| v.get("note"));
            let named = |field| note.and_then(|n| n.get(field)).and_then(Value::as_str);
            plugins.extend(named("plugin").map(str::to_owned));
            hook = named("hook").and_then(|h| h.parse().ok());
            event = named("event").map(str::to_owned);
        }
        if what == "gateway-event" {
            let key = value
                .and_then(|v| v.pointer("/event/key"))
                .and_then(Value::as_str);
            event = key.map(str::to_owned);
            plugins = key.map(|k| self.handling(k)).unwrap_or_default();
        }
        Blamed {
            hook: hook.or_else(|| candidates.first().copied()),
            event,
            plugins,
        }
    }

    /// The plugins that handle `key` in the replay, in delivery order (SPEC G1.3), each once.
    fn handling(&self, key: &str) -> Vec<String> {
        let Ok(key) = serde_json::from_value::<EventKey>(Value::String(key.to_owned())) else {
            return Vec::new();
        };
        let lists: Vec<&[Subscription]> = self.handlers.iter().map(|h| &*h.subscriptions).collect();
        let mut plugins: Vec<String> = Vec::new();
        for index in dispatch_order(&lists, &key) {
            let name = self.handlers[index].plugin.to_string();
            if !plugins.contains(&name) {
                plugins.push(name);
            }
        }
        plugins
    }
}

/// Whether `entry` holds `value`: each of its fields, as `entry`'s field of that name (an empty
/// list and an absent field alike).
fn holds(entry: &Value, value: &Value) -> bool {
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(_) => false,
    };
    match value.as_object() {
        Some(fields) => fields.iter().all(|(key, field)| {
            let other = entry.get(key);
            other == Some(field) || (empty(other) && empty(Some(field)))
        }),
        None => false,
    }
}

/// How two aligned sequences differ.
#[derive(Debug, PartialEq, Eq)]
enum Pair {
    /// The same kind of value at `.0` (recorded) and `.1` (replayed), changed.
    Changed(usize, usize),
    /// Recorded only.
    Removed(usize),
    /// Replayed only.
    Added(usize),
}

/// Aligns `a` with `b` on their longest common subsequence; between two common values, removed
/// and added values of the same kind pair up as changed.
fn align(a: &[Value], b: &[Value]) -> Vec<Pair> {
    if a == b {
        return Vec::new();
    }
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut pairs = Vec::new();
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            gap(a, b, &mut removed, &mut added, &mut pairs);
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            added.push(j);
            j += 1;
        } else {
            removed.push(i);
            i += 1;
        }
    }
    gap(a, b, &mut removed, &mut added, &mut pairs);
    pairs
}

/// Pairs the values removed and added between two common ones.
fn gap(
    a: &[Value],
    b: &[Value],
    removed: &mut Vec<usize>,
    added: &mut Vec<usize>,
    pairs: &mut Vec<Pair>,
) {
    for i in removed.drain(..) {
        match added.iter().position(|&j| kind(&a[i]) == kind(&b[j])) {
            Some(k) => pairs.push(Pair::Changed(i, added.remove(k))),
            None => pairs.push(Pair::Removed(i)),
        }
    }
    pairs.extend(added.drain(..).map(Pair::Added));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_extra_entry_is_one_difference_and_a_changed_one_is_patched() {
        let a = vec![json!({"kind": "x", "v": 1}), json!({"kind": "y", "v": 2})];
        let b = vec![
            json!({"kind": "x", "v": 1}),
            json!({"kind": "note", "v": 0}),
            json!({"kind": "y", "v": 3}),
        ];
        assert_eq!(align(&a, &b), vec![Pair::Changed(1, 2), Pair::Added(1)]);
        let blame = Blame {
            changes: &Vec::new(),
            handlers: &[],
        };
        let d = values(Some(1), "", &a, &b, &blame);
        assert_eq!(d.len(), 2);
        let patch = serde_json::to_value(&d[0].patch).unwrap_or_default();
        assert_eq!(patch, json!([{"op": "replace", "path": "/v", "value": 3}]));
        assert!(align(&a, &a).is_empty());
    }
}
