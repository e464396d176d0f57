//! Property test through a real pipeline (issue 3, "What must show"): any sequence of raw
//! `rebuild_model` hooks, each editing the request it is given, yields what the rule decides
//! step by step, one note per refused hook, `changed_by` naming exactly the hooks that changed
//! the request, and a request with unique ids, no new empty reasoning and only held images.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

#[path = "../messages/tests/common/mod.rs"]
mod model;
mod scripted;

use hookline::actors::Pipeline;
use hookline::messages::hook::{Hook, RebuildModel};
use hookline::messages::model::{HeldImages, ModelRequest};
use hookline::messages::note::Note;
use model::arb;
use model::rebuild_edit::{apply_rebuild_edit, check_representable, rebuild_edit, RebuildEdit};
use proptest::prelude::*;
use scripted::*;

fn edited(mut request: ModelRequest, edits: &[RebuildEdit]) -> ModelRequest {
    for edit in edits {
        apply_rebuild_edit(&mut request, edit);
    }
    request
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn raw_rebuilds_in_load_order_keep_the_request_representable(
        original in arb::request(),
        scripts in prop::collection::vec(prop::collection::vec(rebuild_edit(), 0..4), 1..5),
    ) {
        let held: HeldImages = [model::PNG1, model::JPEG2, model::GIF3].into_iter().collect();
        // What the rule decides, hook after hook.
        let mut expected = original.clone();
        let mut expected_notes = Vec::new();
        let mut expected_changed = Vec::new();
        for (n, edits) in scripts.iter().enumerate() {
            match RebuildModel::admit(&held, &expected, edited(expected.clone(), edits)) {
                Ok(applied) if applied.value != expected => {
                    expected_changed.push(format!("raw{n}"));
                    expected = applied.value;
                }
                Ok(_) => {}
                Err(refusal) => expected_notes.push(Note::skipped(format!("raw{n}"), RebuildModel::KIND, refusal.into())),
            }
        }
        let outcome = actix::System::new().block_on({
            let (original, held, scripts) = (original.clone(), held.clone(), scripts.clone());
            async move {
                let plugins: Vec<_> = scripts
                    .into_iter()
                    .map(|edits| {
                        let act: Act<ModelRequest> = replace(move |r| edited(r, &edits));
                        Scripted::new::<RebuildModel>(act)
                    })
                    .collect();
                let pipeline = Pipeline::builder()
                    .plugins(plugins.iter().enumerate().map(|(n, p)| register(&format!("raw{n}"), p)))
                    .start()
                    .unwrap();
                pipeline.call_with::<RebuildModel>(&session("s"), held, original).await.unwrap()
            }
        });
        prop_assert_eq!(&outcome.value, &expected);
        prop_assert_eq!(&outcome.notes, &expected_notes);
        prop_assert_eq!(changed_by(&outcome), expected_changed);
        check_representable(&held, &original, &outcome.value)?;
    }
}
