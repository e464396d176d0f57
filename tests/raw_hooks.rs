//! Raw hooks through the pipeline (SPEC R0 to R5, issue 3): the load note, each rule's exact
//! note at stage `model-items`, raw failures at every raw stage, load order, and which plugins
//! changed a request (what the raw-change note of R5.7 names).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

#[path = "../messages/tests/common/mod.rs"]
mod model;
mod scripted;

use std::sync::Arc;

use async_trait::async_trait;
use hookline::actors::plugin::{Dispatch, Plugin, PluginRegistration, RawHooks};
use hookline::actors::Pipeline;
use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::compaction::{CompactionPhase, CompactionText};
use hookline::messages::hook::{
    HookKind, HookSet, RebuildModel, RewriteApproval, RewriteCompaction, RewritePrompt,
};
use hookline::messages::model::{ItemBody, ModelRequest};
use hookline::messages::note::Note;
use hookline::messages::prompt::{PromptMode, SystemText};
use scripted::*;

// ---- R0.2: the load note ----

struct NoHooks(HookSet);

#[async_trait]
impl Plugin for NoHooks {
    fn hooks(&self) -> HookSet {
        self.0
    }
}

#[async_trait]
impl RawHooks for NoHooks {
    fn raw_hooks(&self) -> HookSet {
        self.0
    }
}

#[actix_rt::test]
async fn each_plugin_with_raw_hooks_gets_one_load_note_and_others_none() {
    let raw = HookSet::of(&[
        HookKind::RebuildModel,
        HookKind::RewritePrompt,
        HookKind::RewriteApproval,
    ]);
    let ordinary = HookSet::of(&[HookKind::OnPrompt]);
    let pipeline = Pipeline::builder()
        .plugin(PluginRegistration::new("Plain").with_hooks(Arc::new(NoHooks(ordinary))))
        .plugin(PluginRegistration::new("Acme").with_raw_hooks(Arc::new(NoHooks(raw))))
        .plugin(
            PluginRegistration::new("Both")
                .with_hooks(Arc::new(NoHooks(ordinary)))
                .with_raw_hooks(Arc::new(NoHooks(HookSet::of(&[
                    HookKind::RewriteCompaction,
                ])))),
        )
        // Raw hooks named on the ordinary interface are not raw hooks (SPEC R0.1).
        .plugin(PluginRegistration::new("Sneaky").with_hooks(Arc::new(NoHooks(raw))))
        // A raw interface that declares nothing registers no raw hook.
        .plugin(
            PluginRegistration::new("Empty").with_raw_hooks(Arc::new(NoHooks(HookSet::empty()))),
        )
        .plugin(PluginRegistration::new("Zed").with_raw_hooks(Arc::new(NoHooks(raw))))
        .start()
        .unwrap();
    let load: Vec<String> = pipeline
        .load_notes()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        load,
        [
            "Plugin 'Acme' registered a raw hook.",
            "Plugin 'Both' registered a raw hook.",
            "Plugin 'Zed' registered a raw hook.",
        ]
    );
    // Load notes are not repeated on calls.
    let outcome = pipeline
        .call::<RewriteApproval>(&session("s"), classification())
        .await
        .unwrap();
    assert!(outcome.notes.is_empty());
}

// ---- R1: each rule's exact note ----

fn text(request: &mut ModelRequest, id: &str, new: &str) {
    *model::text_mut(model::item_mut(request, id)) = new.into();
}

#[actix_rt::test]
async fn rebuild_model_refusals_are_skipped_with_their_exact_notes() {
    type Edit = fn(&mut ModelRequest);
    let cases: [(fn() -> ModelRequest, Edit, &str); 6] = [
        (
            model::work_request,
            |r| r.items.push(model::user("u1", "again", &[]).into()),
            "it repeated an item.",
        ),
        (
            model::work_request,
            |r| text(r, "r1", ""),
            "it returned empty reasoning text.",
        ),
        (
            model::work_request,
            |r| r.items.push(model::reasoning("r2", "", None).into()),
            "it returned empty reasoning text.",
        ),
        (
            model::work_request,
            |r| model::images_mut(model::item_mut(r, "a1")).push(model::WEBP4),
            "it added an image.",
        ),
        (
            model::side_request,
            |r| model::images_mut(model::item_mut(r, "a1")).push(model::GIF3),
            "it added an image to a request that cannot carry images.",
        ),
        (
            model::side_request,
            |r| r.accepts_images = true,
            "it changed the request's purpose.",
        ),
    ];
    for (request, cannot, reason) in cases {
        let before = request();
        let (outcome, [_, _, last]) = trio::<RebuildModel>(
            model::held(),
            before.clone(),
            [
                replace(|mut r: ModelRequest| {
                    r.items.to_mut().remove(0);
                    r
                }),
                replace(move |mut r: ModelRequest| {
                    cannot(&mut r);
                    r
                }),
                replace(|mut r: ModelRequest| {
                    r.items
                        .push(model::assistant("a9", "appended by last", &[]).into());
                    r
                }),
            ],
        )
        .await;
        let mut expected = before.clone();
        expected.items.to_mut().remove(0);
        assert_eq!(last.seen(), [expected.clone()], "{reason}");
        expected
            .items
            .push(model::assistant("a9", "appended by last", &[]).into());
        assert_eq!(outcome.value, expected);
        assert_eq!(
            notes(&outcome),
            [format!(
                "Raw hook 'middle' model-items was skipped: {reason}"
            )]
        );
        assert_eq!(changed_by(&outcome), ["first", "last"]);
    }
}

#[actix_rt::test]
async fn rebuild_model_can_split_rewrite_and_add_without_a_note() {
    let (outcome, _) = trio::<RebuildModel>(
        model::held(),
        model::work_request(),
        [
            // Split the call from its result, and move the image to the result.
            replace(|mut r: ModelRequest| {
                let result = r.items.to_mut().remove(5);
                r.items.to_mut().insert(1, result);
                model::images_mut(model::item_mut(&mut r, "u1")).clear();
                model::images_mut(model::item_mut(&mut r, "res1")).push(model::PNG1);
                r
            }),
            // Rewrite the system prompt and a role.
            replace(|mut r: ModelRequest| {
                text(&mut r, "sys", "You are terse.");
                model::item_mut(&mut r, "a1").body =
                    model::user("a1", "Reading the file.", &[]).body;
                r
            }),
            // Add a tool result with a forged name and reasoning with forged state.
            replace(|mut r: ModelRequest| {
                r.items
                    .push(model::tool_result("res2", "c1", "forged", "more", &[]).into());
                r.items
                    .push(model::reasoning("r2", "new thought", Some("forged")).into());
                r
            }),
        ],
    )
    .await;
    assert!(outcome.notes.is_empty(), "{:?}", notes(&outcome));
    let ids: Vec<&str> = outcome
        .value
        .items
        .iter()
        .map(|i| i.id.0.as_str())
        .collect();
    assert_eq!(
        ids,
        ["sys", "res1", "u1", "r1", "a1", "call1", "res2", "r2"]
    );
    assert_eq!(
        model::item(&outcome.value, "sys"),
        &model::system("sys", "You are terse.")
    );
    assert_eq!(
        model::item(&outcome.value, "a1"),
        &model::user("a1", "Reading the file.", &[])
    );
    assert_eq!(
        model::item(&outcome.value, "res1").body.images(),
        [model::JPEG2, model::PNG1]
    );
    assert_eq!(
        model::item(&outcome.value, "res2"),
        &model::tool_result("res2", "c1", "read_file", "more", &[])
    );
    assert_eq!(
        model::item(&outcome.value, "r2"),
        &model::reasoning("r2", "new thought", None)
    );
    assert_eq!(
        model::item(&outcome.value, "r1"),
        &model::reasoning("r1", "the user wants a look", Some("sig-1")),
        "untouched reasoning keeps its provider state"
    );
    assert_eq!(changed_by(&outcome), ["first", "middle", "last"]);
}

// ---- R0.3: raw failures at every raw stage ----

async fn raw_failure_notes<H>(
    context: H::Context,
    before: H::Value,
    change: fn(H::Value) -> H::Value,
) where
    H: Dispatch,
    H::Value: Sync,
{
    let stage = H::KIND.stage();
    let failures: [(fn() -> Act<H::Value>, &str); 4] = [
        (|| Act::Fail("raw trouble ".into()), "raw trouble"),
        (|| Act::Fail(String::new()), "it failed."),
        (|| Act::Panic, "it panicked."),
        (|| Act::Hang, "it timed out after 10 s."),
    ];
    for (failing, reason) in failures {
        for position in 0..3 {
            let acts = [0, 1, 2].map(|n| {
                if n == position {
                    failing()
                } else {
                    replace(change)
                }
            });
            let (outcome, plugins) = trio::<H>(context.clone(), before.clone(), acts).await;
            let name = ["first", "middle", "last"][position];
            assert_eq!(
                notes(&outcome),
                [format!("Raw hook '{name}' {stage} was skipped: {reason}")]
            );
            assert_eq!(
                outcome.value,
                change(change(before.clone())),
                "{stage} {reason} at {position}"
            );
            let healthy: Vec<&str> = ["first", "middle", "last"]
                .into_iter()
                .filter(|n| *n != name)
                .collect();
            assert_eq!(changed_by(&outcome), healthy);
            assert_eq!(plugins.iter().map(|p| p.calls()).sum::<usize>(), 3);
        }
    }
}

#[actix_rt::test]
async fn raw_failures_are_skipped_with_raw_notes_at_every_raw_stage() {
    tokio::time::pause();
    raw_failure_notes::<RebuildModel>(model::held(), model::work_request(), |mut r| {
        r.items.to_mut().pop();
        r
    })
    .await;
    let prompt = SystemText {
        mode: PromptMode::Review,
        text: "Review.".into(),
    };
    raw_failure_notes::<RewritePrompt>((), prompt, |t| SystemText {
        text: format!("{}+", t.text),
        ..t
    })
    .await;
    let compaction = CompactionText {
        phase: CompactionPhase::Prompt,
        text: "Fold.".into(),
    };
    raw_failure_notes::<RewriteCompaction>((), compaction, |t| CompactionText {
        text: format!("{}+", t.text),
        ..t
    })
    .await;
    raw_failure_notes::<RewriteApproval>((), classification(), |c| Classification {
        summary: format!("{}+", c.summary),
        ..c
    })
    .await;
}

#[actix_rt::test]
async fn raw_text_hooks_refuse_only_a_changed_mode_or_phase() {
    let (outcome, _) = trio::<RewritePrompt>(
        (),
        SystemText {
            mode: PromptMode::Work,
            text: "Base.".into(),
        },
        [
            replace(|t: SystemText| SystemText {
                text: "One.".into(),
                ..t
            }),
            replace(|t: SystemText| SystemText {
                mode: PromptMode::Plan,
                ..t
            }),
            replace(|t: SystemText| SystemText {
                text: format!("{} Two.", t.text),
                ..t
            }),
        ],
    )
    .await;
    assert_eq!(outcome.value.text, "One. Two.");
    assert_eq!(
        notes(&outcome),
        ["Raw hook 'middle' prompt was skipped: it changed the prompt mode."]
    );
    let (outcome, _) = trio::<RewriteCompaction>(
        (),
        CompactionText {
            phase: CompactionPhase::Summary,
            text: "Sum.".into(),
        },
        [
            Act::Keep,
            replace(|t: CompactionText| CompactionText {
                phase: CompactionPhase::Prompt,
                ..t
            }),
            replace(|t: CompactionText| CompactionText {
                text: String::new(),
                ..t
            }),
        ],
    )
    .await;
    assert_eq!(outcome.value.text, "", "an empty summary is kept");
    assert_eq!(
        notes(&outcome),
        ["Raw hook 'middle' compaction was skipped: it changed the compaction phase."]
    );
}

// ---- R0.3: load order, each seeing the previous replacement ----

#[actix_rt::test]
async fn raw_hooks_run_in_load_order_each_seeing_the_previous_replacement() {
    let before = SystemText {
        mode: PromptMode::Plan,
        text: "Base.".into(),
    };
    let (outcome, [first, middle, last]) = trio::<RewritePrompt>(
        (),
        before.clone(),
        [
            replace(|t: SystemText| SystemText {
                text: format!("{}|1", t.text),
                ..t
            }),
            replace(|t: SystemText| SystemText {
                text: format!("{}|2", t.text),
                ..t
            }),
            replace(|t: SystemText| SystemText {
                text: format!("{}|3", t.text),
                ..t
            }),
        ],
    )
    .await;
    assert_eq!(first.seen(), vec![before.clone()]);
    assert_eq!(middle.seen()[0].text, "Base.|1");
    assert_eq!(last.seen()[0].text, "Base.|1|2");
    assert_eq!(outcome.value.text, "Base.|1|2|3");
    let approval = classification();
    let (outcome, [_, middle, _]) = trio::<RewriteApproval>(
        (),
        Classification {
            risk: Risk::Critical,
            requires_prompt: true,
            ..approval.clone()
        },
        [
            replace(|c: Classification| Classification {
                risk: Risk::Read,
                ..c
            }),
            replace(|c: Classification| Classification {
                requires_prompt: false,
                authority: Authority::Host,
                ..c
            }),
            replace(|c: Classification| Classification {
                summary: "harmless".into(),
                ..c
            }),
        ],
    )
    .await;
    assert_eq!(middle.seen()[0].risk, Risk::Read);
    assert_eq!(
        outcome.value,
        Classification {
            risk: Risk::Read,
            authority: Authority::Host,
            summary: "harmless".into(),
            requires_prompt: false
        }
    );
    assert!(outcome.notes.is_empty());
}

// ---- R5.7: who changed the request ----

#[actix_rt::test]
async fn changed_by_names_exactly_the_raw_hooks_that_changed_the_request() {
    let plugins = [
        (
            "same",
            Scripted::build(HookKind::RebuildModel, replace(|r: ModelRequest| r), 0),
        ),
        (
            "keeps",
            Scripted::build(HookKind::RebuildModel, Act::Keep, 0),
        ),
        // Forged provider state on unchanged reasoning is normalised away: no change.
        (
            "forges",
            Scripted::build(
                HookKind::RebuildModel,
                replace(|mut r: ModelRequest| {
                    if let ItemBody::Reasoning { provider_state, .. } =
                        &mut model::item_mut(&mut r, "r1").body
                    {
                        *provider_state = Some("forged".into());
                    }
                    r
                }),
                0,
            ),
        ),
        (
            "Acme",
            Scripted::build(
                HookKind::RebuildModel,
                replace(|mut r: ModelRequest| {
                    r.items.to_mut().pop();
                    r
                }),
                0,
            ),
        ),
        (
            "refused",
            Scripted::build(
                HookKind::RebuildModel,
                replace(|mut r: ModelRequest| {
                    r.items.push(model::user("u1", "dup", &[]).into());
                    r
                }),
                0,
            ),
        ),
        (
            "fails",
            Scripted::build(HookKind::RebuildModel, Act::Fail("x".into()), 0),
        ),
        (
            "Beta",
            Scripted::build(
                HookKind::RebuildModel,
                replace(|mut r: ModelRequest| {
                    text(&mut r, "sys", "Other.");
                    r
                }),
                0,
            ),
        ),
        // Puts the system text back: it changed the value it was given, so it is named.
        (
            "Undo",
            Scripted::build(
                HookKind::RebuildModel,
                replace(|mut r: ModelRequest| {
                    text(&mut r, "sys", "You are a coding agent.");
                    r
                }),
                0,
            ),
        ),
    ];
    let pipeline = Pipeline::builder()
        .plugins(plugins.iter().map(|(name, p)| register(name, p)))
        .start()
        .unwrap();
    let outcome = pipeline
        .call_with::<RebuildModel>(&session("s"), model::held(), model::work_request())
        .await
        .unwrap();
    assert_eq!(changed_by(&outcome), ["Acme", "Beta", "Undo"]);
    let mut expected = model::work_request();
    expected.items.to_mut().pop();
    assert_eq!(outcome.value, expected);
    // The host renders R5.7's note from this list.
    let note = Note::RawChangeFailure {
        plugins: changed_by(&outcome),
    };
    assert_eq!(
        note.to_string(),
        "Raw hooks 'Acme', 'Beta', 'Undo' changed this model request. The failure may be related."
    );
    let unchanged = Pipeline::builder()
        .plugin(register("same", &plugins[0].1))
        .plugin(register("keeps", &plugins[1].1))
        .start()
        .unwrap();
    let outcome = unchanged
        .call_with::<RebuildModel>(&session("s"), model::held(), model::work_request())
        .await
        .unwrap();
    assert!(
        outcome.changed_by.is_empty(),
        "a raw hook returning the request unchanged is not named"
    );
}

#[actix_rt::test]
async fn changed_by_names_one_plugin_for_the_singular_note() {
    let acme = Scripted::build(
        HookKind::RebuildModel,
        replace(|mut r: ModelRequest| {
            r.items.to_mut().clear();
            r
        }),
        0,
    );
    let pipeline = Pipeline::builder()
        .plugin(register("Acme", &acme))
        .start()
        .unwrap();
    let outcome = pipeline
        .call_with::<RebuildModel>(&session("s"), model::held(), model::work_request())
        .await
        .unwrap();
    let note = Note::RawChangeFailure {
        plugins: changed_by(&outcome),
    };
    assert_eq!(
        note.to_string(),
        "Raw hook 'Acme' changed this model request. The failure may be related."
    );
}
