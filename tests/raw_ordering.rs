//! Ordinary hooks then raw hooks, as the host chains them (SPEC R5.1, R5.8 to R5.10, P3.4):
//! OnPrompt then RewritePrompt, OnCompaction then RewriteCompaction, OnApproval then
//! RewriteApproval, RebuildModel then TransformModel.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

#[path = "../messages/tests/common/mod.rs"]
mod model;
mod scripted;

use hookline::actors::Pipeline;
use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::compaction::{Compaction, CompactionPhase, CompactionText};
use hookline::messages::hook::{
    HookKind, OnApproval, OnCompaction, OnPrompt, RebuildModel, RewriteApproval, RewriteCompaction,
    RewritePrompt, TransformModel,
};
use hookline::messages::model::ModelRequest;
use hookline::messages::prompt::{Prompt, PromptMode, SystemText};
use scripted::*;

#[actix_rt::test]
async fn rewrite_prompt_sees_on_prompts_appends_and_may_return_an_empty_string() {
    let ordinary = Scripted::build(
        HookKind::OnPrompt,
        replace(|p: Prompt| p.append("Use tabs.")),
        0,
    );
    let empties = Scripted::build(
        HookKind::RewritePrompt,
        replace(|t: SystemText| SystemText {
            text: String::new(),
            ..t
        }),
        0,
    );
    let after = Scripted::<SystemText>::build(HookKind::RewritePrompt, Act::Keep, 0);
    let pipeline = Pipeline::builder()
        .plugin(register("raw", &empties))
        .plugin(register("ordinary", &ordinary))
        .plugin(register("after", &after))
        .start()
        .unwrap();
    let s = session("s");
    let prompt = pipeline
        .call::<OnPrompt>(&s, Prompt::new(PromptMode::Work, "Base."))
        .await
        .unwrap();
    let composed = prompt.value.composed();
    assert_eq!(composed.text, "Base.\n\nUse tabs.");
    let rewritten = pipeline
        .call::<RewritePrompt>(&s, composed.clone())
        .await
        .unwrap();
    assert_eq!(empties.seen(), [composed]);
    assert_eq!(
        rewritten.value,
        SystemText {
            mode: PromptMode::Work,
            text: String::new()
        }
    );
    assert_eq!(
        after.seen(),
        vec![rewritten.value.clone()],
        "the next raw hook sees the empty text"
    );
    assert!(rewritten.notes.is_empty());
    assert_eq!(changed_by(&rewritten), ["raw"]);
}

#[actix_rt::test]
async fn rewrite_compaction_sees_on_compactions_appends_and_may_replace_everything() {
    let ordinary = Scripted::build(
        HookKind::OnCompaction,
        replace(|c: Compaction| c.append("Keep the TODO list.")),
        0,
    );
    let raw = Scripted::build(
        HookKind::RewriteCompaction,
        replace(|t: CompactionText| CompactionText {
            text: t.text.to_uppercase(),
            ..t
        }),
        0,
    );
    let pipeline = Pipeline::builder()
        .plugin(register("ordinary", &ordinary))
        .plugin(register("raw", &raw))
        .start()
        .unwrap();
    let s = session("s");
    let compaction = pipeline
        .call::<OnCompaction>(
            &s,
            Compaction::new(CompactionPhase::Summary, "We fixed the build."),
        )
        .await
        .unwrap();
    let rewritten = pipeline
        .call::<RewriteCompaction>(&s, compaction.value.composed())
        .await
        .unwrap();
    assert_eq!(
        raw.seen()[0].text,
        "We fixed the build.\n\nKeep the TODO list."
    );
    assert_eq!(
        rewritten.value.text,
        "WE FIXED THE BUILD.\n\nKEEP THE TODO LIST."
    );
    assert_eq!(rewritten.value.phase, CompactionPhase::Summary);
}

#[actix_rt::test]
async fn rewrite_approval_runs_after_on_approval_and_may_lower_what_it_could_not() {
    let raises = Scripted::build(
        HookKind::OnApproval,
        replace(|c: Classification| Classification {
            risk: Risk::Critical,
            requires_prompt: true,
            ..c
        }),
        0,
    );
    let lowers = |_: Classification| Classification {
        risk: Risk::Read,
        authority: Authority::Workspace,
        summary: "reads a file".into(),
        requires_prompt: false,
    };
    let tries_to_lower = Scripted::build(HookKind::OnApproval, replace(lowers), 0);
    let raw = Scripted::build(HookKind::RewriteApproval, replace(lowers), 0);
    let pipeline = Pipeline::builder()
        .plugin(register("raises", &raises))
        .plugin(register("tries", &tries_to_lower))
        .plugin(register("raw", &raw))
        .start()
        .unwrap();
    let s = session("s");
    let ordinary = pipeline
        .call::<OnApproval>(
            &s,
            Classification {
                authority: Authority::Host,
                ..classification()
            },
        )
        .await
        .unwrap();
    assert_eq!(ordinary.value.risk, Risk::Critical);
    assert_eq!(
        notes(&ordinary),
        ["Plugin hook 'tries' approval was skipped: it tried to lower risk."]
    );
    let rewritten = pipeline
        .call::<RewriteApproval>(&s, ordinary.value.clone())
        .await
        .unwrap();
    assert_eq!(raw.seen(), [ordinary.value]);
    assert_eq!(
        rewritten.value,
        Classification {
            risk: Risk::Read,
            authority: Authority::Workspace,
            summary: "reads a file".into(),
            requires_prompt: false
        }
    );
    assert!(rewritten.notes.is_empty());
}

#[actix_rt::test]
async fn transform_model_sees_the_items_rebuild_model_added() {
    let rebuild = Scripted::build(
        HookKind::RebuildModel,
        replace(|mut r: ModelRequest| {
            r.items
                .to_mut()
                .insert(1, model::system("sys2", "Extra rules.").into());
            r.items
                .push(model::user("u2", "added by raw", &[model::GIF3]).into());
            r
        }),
        0,
    );
    let transform = Scripted::build(
        HookKind::TransformModel,
        replace(|mut r: ModelRequest| {
            *model::text_mut(model::item_mut(&mut r, "u2")) = "changed by transform".into();
            r
        }),
        0,
    );
    let drops = Scripted::build(
        HookKind::TransformModel,
        replace(|mut r: ModelRequest| {
            r.items.to_mut().retain(|i| i.id.0 != "sys2");
            r
        }),
        0,
    );
    // Load order puts the transform plugin first; the host still runs raw hooks first (P3.4).
    let pipeline = Pipeline::builder()
        .plugin(register("transform", &transform))
        .plugin(register("drops", &drops))
        .plugin(register("rebuild", &rebuild))
        .start()
        .unwrap();
    let s = session("s");
    let rebuilt = pipeline
        .call_with::<RebuildModel>(&s, model::held(), model::work_request())
        .await
        .unwrap();
    let transformed = pipeline
        .call::<TransformModel>(&s, rebuilt.value.clone())
        .await
        .unwrap();
    let seen = transform.seen();
    let ids: Vec<&str> = seen[0].items.iter().map(|i| i.id.0.as_str()).collect();
    assert_eq!(
        ids,
        ["sys", "sys2", "u1", "r1", "a1", "call1", "res1", "u2"]
    );
    assert_eq!(
        model::item(&transformed.value, "u2"),
        &model::user("u2", "changed by transform", &[model::GIF3])
    );
    assert_eq!(
        notes(&transformed),
        ["Plugin hook 'drops' model-request was skipped: it dropped an item."]
    );
    assert_eq!(changed_by(&rebuilt), ["rebuild"]);
    assert_eq!(changed_by(&transformed), ["transform"]);
}
