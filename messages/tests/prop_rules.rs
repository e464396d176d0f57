//! Property tests over the rules (issue 2 and 3, "What must show"):
//! - `transform_model` and `on_approval`: any proposal is either handed on (normalised as
//!   documented) or refused with the one reason the spec names, and the value before stands;
//! - `rebuild_model`: any sequence of raw replacements, each admitted or refused, leaves a
//!   request with unique ids, no empty reasoning (unless the original had it), only images the
//!   session holds, and no image added to a request that cannot carry images;
//! - both raw and ordinary request rules decide a proposal the same whether it shares its
//!   untouched items with the request (an in-process hook) or not (a plugin process).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::rebuild_edit::{
    apply_rebuild_edit, check_new_results_named_by_their_call, check_representable, rebuild_edit,
};
use common::{arb, mutate};
use common::{GIF3, JPEG2, PNG1};
use hookline_messages::approval::Classification;
use hookline_messages::hook::{Hook, OnApproval, RebuildModel, TransformModel};
use hookline_messages::model::{HeldImages, Item, ModelRequest};
use hookline_messages::note::Refusal;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn transform_model_hands_on_the_replacement_or_refuses_with_the_named_reason(
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
        let snapshot = before.clone();
        let result = TransformModel::admit(&(), &before, proposed.clone());
        prop_assert_eq!(&before, &snapshot);
        // A proposal that shares no item with the request (one read back from a plugin
        // process) is decided the same as one that shares the items it left alone.
        prop_assert_eq!(&TransformModel::admit(&(), &before, unshared(&proposed)), &result);
        match (expected, result) {
            (None, Ok(applied)) => {
                prop_assert_eq!(applied.notice, None);
                prop_assert_eq!(applied.value, mutate::normalised(&before, proposed));
            }
            (Some(refusal), Err(got)) => prop_assert_eq!(got, refusal),
            (expected, got) => prop_assert!(false, "expected {:?}, got {:?}", expected, got),
        }
    }

    #[test]
    fn on_approval_hands_on_the_replacement_iff_it_only_raises(
        before in arb::classification(),
        proposed in arb::classification(),
    ) {
        let violations = violations(&before, &proposed);
        match OnApproval::admit(&(), &before, proposed.clone()) {
            Ok(applied) => {
                prop_assert!(violations.is_empty(), "accepted despite {:?}", violations);
                prop_assert_eq!(applied.notice, None);
                prop_assert_eq!(applied.value, proposed);
            }
            Err(refusal) => prop_assert!(
                violations.contains(&refusal),
                "refused with {:?}, but the violations were {:?}", refusal, violations
            ),
        }
    }

    #[test]
    fn any_sequence_of_raw_rebuilds_keeps_the_request_representable(
        original in arb::request(),
        steps in prop::collection::vec(prop::collection::vec(rebuild_edit(), 0..5), 1..6),
    ) {
        let held: HeldImages = [PNG1, JPEG2, GIF3].into_iter().collect();
        let mut value = original.clone();
        for edits in &steps {
            let mut proposed = value.clone();
            for edit in edits {
                apply_rebuild_edit(&mut proposed, edit);
            }
            let result = RebuildModel::admit(&held, &value, proposed.clone());
            prop_assert_eq!(&RebuildModel::admit(&held, &value, unshared(&proposed)), &result);
            if let Ok(applied) = result {
                check_new_results_named_by_their_call(&value, &proposed, &applied.value)?;
                value = applied.value;
            }
            check_representable(&held, &original, &value)?;
        }
    }
}

/// `request` with every item copied: nothing shared with any other request.
fn unshared(request: &ModelRequest) -> ModelRequest {
    ModelRequest::new(
        request.purpose,
        request.accepts_images,
        request.items.iter().map(|item| Item::clone(item)),
    )
}

fn violations(before: &Classification, proposed: &Classification) -> Vec<Refusal> {
    let mut found = Vec::new();
    if proposed.risk < before.risk {
        found.push(Refusal::LoweredRisk);
    }
    if proposed.authority < before.authority {
        found.push(Refusal::LoweredAuthority);
    }
    if before.requires_prompt && !proposed.requires_prompt {
        found.push(Refusal::ClearedPromptRequirement);
    }
    if proposed.summary != before.summary {
        found.push(Refusal::ChangedSummary);
    }
    found
}
