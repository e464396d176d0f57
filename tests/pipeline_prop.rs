//! Property tests through a real pipeline (issue 2, "What must show"): for any replacement a
//! `transform_model` or `on_approval` plugin proposes, the outcome is either the replacement
//! (normalised as documented) or the previous value plus exactly one note; the plugin after it
//! sees exactly that value.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

#[path = "../messages/tests/common/mod.rs"]
mod model;
mod scripted;

use hookline::actors::plugin::Dispatch;
use hookline::actors::Outcome;
use hookline::messages::hook::{OnApproval, TransformModel};
use hookline::messages::note::Note;
use model::{arb, mutate};
use proptest::prelude::*;
use scripted::*;

/// Runs `H` through `keep`, `p` (proposing `proposed`) and `observer`, in a fresh actix system.
fn through_pipeline<H>(before: H::Value, proposed: H::Value) -> (Outcome<H::Value>, Vec<H::Value>)
where
    H: Dispatch<Context = ()>,
    H::Value: Sync,
{
    actix::System::new().block_on(async move {
        let (outcome, [_, _, observer]) = trio::<H>(
            (),
            before,
            [Act::Keep, replace(move |_| proposed.clone()), Act::Keep],
        )
        .await;
        (outcome, observer.seen())
    })
}

fn check<H>(before: H::Value, proposed: H::Value) -> Result<(), TestCaseError>
where
    H: Dispatch<Context = ()>,
    H::Value: Sync,
{
    let decided = H::admit(&(), &before, proposed.clone());
    let (outcome, observed) = through_pipeline::<H>(before.clone(), proposed);
    prop_assert_eq!(
        &observed,
        &vec![outcome.value.clone()],
        "the next plugin sees the outcome"
    );
    match decided {
        Ok(applied) => {
            prop_assert_eq!(&outcome.value, &applied.value);
            prop_assert!(outcome.notes.is_empty());
            let changed = applied.value != before;
            prop_assert_eq!(outcome.changed_by.len(), usize::from(changed));
        }
        Err(refusal) => {
            prop_assert_eq!(&outcome.value, &before, "the value before stands");
            prop_assert_eq!(
                outcome.notes,
                vec![Note::skipped("middle", H::KIND, refusal.into())]
            );
            prop_assert!(outcome.changed_by.is_empty());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_transform_model_replacement_is_the_outcome_or_one_note(
        before in arb::request(),
        allowed in prop::collection::vec(mutate::allowed(), 0..4),
        forbidden in proptest::option::of(mutate::forbidden()),
    ) {
        let mut proposed = before.clone();
        for edit in &allowed {
            mutate::apply_allowed(&before, &mut proposed, edit);
        }
        let expected = forbidden
            .as_ref()
            .and_then(|edit| mutate::apply_forbidden(&before, &mut proposed, edit));
        let normalised = mutate::normalised(&before, proposed.clone());
        let (outcome, _) = through_pipeline::<TransformModel>(before.clone(), proposed.clone());
        match expected {
            None => {
                prop_assert_eq!(&outcome.value, &normalised);
                prop_assert!(outcome.notes.is_empty());
            }
            Some(refusal) => {
                prop_assert_eq!(&outcome.value, &before);
                let note = format!("Plugin hook 'middle' model-request was skipped: {refusal}");
                prop_assert_eq!(notes(&outcome), vec![note]);
            }
        }
        check::<TransformModel>(before, proposed)?;
    }

    #[test]
    fn an_on_approval_replacement_is_the_outcome_or_one_note(
        before in arb::classification(),
        proposed in arb::classification(),
    ) {
        check::<OnApproval>(before, proposed)?;
    }
}
