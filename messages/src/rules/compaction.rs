//! `on_compaction` may only append facts to the summary prompt or body (SPEC P2.10).

use super::append::appended_parts;
use crate::compaction::Compaction;
use crate::note::Refusal;

/// Admits an `on_compaction` replacement: same phase and text, earlier facts kept; new facts
/// trimmed, blank ones ignored.
///
/// # Errors
/// [`Refusal::ChangedCompactionPhase`], [`Refusal::ReplacedCompactionText`] or
/// [`Refusal::RemovedAppendedText`].
pub fn on_compaction(before: &Compaction, proposed: Compaction) -> Result<Compaction, Refusal> {
    if proposed.phase != before.phase {
        return Err(Refusal::ChangedCompactionPhase);
    }
    if proposed.text != before.text {
        return Err(Refusal::ReplacedCompactionText);
    }
    let appended = appended_parts(&before.appended, proposed.appended)?;
    Ok(Compaction {
        appended,
        ..proposed
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::CompactionPhase;

    #[test]
    fn facts_are_appended_and_replacing_the_summary_is_refused() {
        let before = Compaction::new(CompactionPhase::Summary, "The user fixed the build.");
        let applied = on_compaction(&before, before.clone().append(" Tests pass. "));
        assert_eq!(
            applied.map(|c| c.composed().text),
            Ok("The user fixed the build.\n\nTests pass.".to_owned())
        );
        let mut replaced = before.clone();
        replaced.text = String::new();
        assert_eq!(
            on_compaction(&before, replaced),
            Err(Refusal::ReplacedCompactionText)
        );
    }
}
