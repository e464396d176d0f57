//! The shared "append only" rule of `on_prompt` and `on_compaction` (SPEC P2.2, P2.10).

use crate::note::Refusal;

/// Checks that `proposed` keeps every earlier part unchanged and only adds parts at the end.
/// New parts are trimmed; blank ones are dropped.
pub(super) fn appended_parts(
    before: &[String],
    mut proposed: Vec<String>,
) -> Result<Vec<String>, Refusal> {
    if proposed.len() < before.len() || proposed[..before.len()] != *before {
        return Err(Refusal::RemovedAppendedText);
    }
    let added = proposed.split_off(before.len());
    proposed.extend(
        added
            .into_iter()
            .map(|part| part.trim().to_owned())
            .filter(|part| !part.is_empty()),
    );
    Ok(proposed)
}
