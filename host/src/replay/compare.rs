//! Comparing a replay with its recording: archive entries (notes among them) turn by turn,
//! outbound model requests, and the stored records at the end. Entries are aligned first (a
//! longest common subsequence), so one extra note is one difference rather than a shifted tail;
//! an entry present on one side only is compared with `null`. Each difference names the hook
//! whose value it is and the plugins that changed that hook's value in the replayed turn.

use hookline_messages::hook::HookKind;
use hookline_messages::record::{ArchiveEntry, Record};
use serde::Serialize;
use serde_json::Value;

use crate::turn::TappedRequest;

/// One way the replay differs from the recording.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// The turn (1-based); `None` for the stored records compared at the end.
    pub turn: Option<usize>,
    /// What differs: an archive entry's kind (`tool-result`, `note`, ...), `model-request`, or
    /// a stored record's kind prefixed `record:` (`record:user`).
    pub what: String,
    /// Its position among the turn's compared entries (or requests, or the records) as
    /// recorded; as replayed when only the replay has it.
    pub index: usize,
    /// The hook whose value it is, when one hook makes it.
    pub hook: Option<HookKind>,
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
    turn: usize,
    recorded: &[ArchiveEntry],
    replayed: &[ArchiveEntry],
    changes: &Changes,
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
    values(Some(turn), "", &a, &b, changes)
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
    values(None, "record:", &a, &b, changes)
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
    turn: usize,
    recorded: &[RecordedRequest<'_>],
    replayed: &[TappedRequest],
    changes: &Changes,
) -> Vec<Difference> {
    let mut differences = Vec::new();
    let (hook, plugins) = blame("model-request", None, changes);
    let mut push = |index, patch: json_patch::Patch| {
        differences.push(Difference {
            turn: Some(turn),
            what: "model-request".into(),
            index,
            hook,
            plugins: plugins.clone(),
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
    changes: &Changes,
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
            let (hook, plugins) = blame(&what, Some(shown), changes);
            Difference {
                turn,
                what,
                index,
                hook,
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
        _ => &[],
    }
}

/// The hook a difference belongs to and the plugins that changed it in the replay: those whose
/// value the replayed one holds (a tool result's hook change for that call), else every change
/// of those hooks in the turn. A note names its plugin itself.
fn blame(what: &str, value: Option<&Value>, changes: &Changes) -> (Option<HookKind>, Vec<String>) {
    let candidates = hooks_of(what);
    let of_hooks: Vec<&Change> = changes
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
    if what == "note" {
        let note = value.and_then(|v| v.get("note"));
        let named = note.and_then(|n| n.get("plugin")).and_then(Value::as_str);
        plugins.extend(named.map(str::to_owned));
        let hook_named = note.and_then(|n| n.get("hook")).and_then(Value::as_str);
        hook = hook_named.and_then(|h| h.parse().ok());
    }
    (hook.or_else(|| candidates.first().copied()), plugins)
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
        let d = values(Some(1), "", &a, &b, &Vec::new());
        assert_eq!(d.len(), 2);
        let patch = serde_json::to_value(&d[0].patch).unwrap_or_default();
        assert_eq!(patch, json!([{"op": "replace", "path": "/v", "value": 3}]));
        assert!(align(&a, &a).is_empty());
    }
}
