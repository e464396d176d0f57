//! Every row of SPEC P2 through a real pipeline of three plugins: the first applies a "can", the
//! middle one tries a "cannot" and is skipped with its exact note, the value before it stands,
//! and the last plugin still runs on that value (SPEC P1.2, P1.5).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

#[path = "../messages/tests/common/mod.rs"]
mod model;
mod scripted;

use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::compaction::{Compaction, CompactionPhase};
use hookline::messages::hook::{
    OnApproval, OnCompaction, OnPrompt, OnToolCall, OnToolResult, OnUserMessage, ToolResultContext,
    TransformModel,
};
use hookline::messages::model::{ItemBody, ModelRequest};
use hookline::messages::prompt::{Prompt, PromptMode};
use hookline::messages::tool::{ApprovalState, ToolResult};
use hookline::messages::user::UserMessage;
use scripted::*;

fn skipped(stage: &str, reason: &str) -> Vec<String> {
    vec![format!(
        "Plugin hook 'middle' {stage} was skipped: {reason}"
    )]
}

// ---- P2.2 on_prompt ----

#[actix_rt::test]
async fn on_prompt_appends_in_load_order_and_refuses_replacing_the_text() {
    let cases: [(fn(Prompt) -> Prompt, &str); 3] = [
        (
            |p| Prompt {
                text: "You are a pirate.".into(),
                ..p
            },
            "it replaced the work text.",
        ),
        (
            |p| Prompt {
                mode: PromptMode::Plan,
                ..p
            },
            "it changed the prompt mode.",
        ),
        (
            |p| Prompt {
                appended: vec![],
                ..p
            },
            "it removed appended text.",
        ),
    ];
    for (cannot, reason) in cases {
        let before = Prompt::new(PromptMode::Work, "Base.");
        let (outcome, [_, _, last]) = trio::<OnPrompt>(
            (),
            before.clone(),
            [
                replace(|p: Prompt| p.append("  First. ")),
                replace(cannot),
                replace(|p: Prompt| p.append("Last.")),
            ],
        )
        .await;
        assert_eq!(outcome.value.composed().text, "Base.\n\nFirst.\n\nLast.");
        assert_eq!(notes(&outcome), skipped("prompt", reason));
        assert_eq!(last.seen(), [before.append("First.")]);
        assert_eq!(changed_by(&outcome), ["first", "last"]);
    }
}

#[actix_rt::test]
async fn on_prompt_ignores_blank_parts_and_refuses_replacing_plan_and_review_text() {
    for (mode, reason) in [
        (PromptMode::Plan, "it replaced the plan text."),
        (PromptMode::Review, "it replaced the review text."),
    ] {
        let (outcome, _) = trio::<OnPrompt>(
            (),
            Prompt::new(mode, "Base."),
            [
                replace(|p: Prompt| p.append(" \n ")),
                replace(|p: Prompt| Prompt {
                    text: String::new(),
                    ..p
                }),
                Act::Keep,
            ],
        )
        .await;
        assert_eq!(outcome.value, Prompt::new(mode, "Base."));
        assert_eq!(notes(&outcome), skipped("prompt", reason));
        assert!(
            outcome.changed_by.is_empty(),
            "a blank part changes nothing"
        );
    }
}

// ---- P2.3 on_user_message ----

#[actix_rt::test]
async fn on_user_message_replacements_chain_and_a_blank_one_is_refused() {
    let cases: [(fn(UserMessage) -> UserMessage, &str); 3] = [
        (|_| UserMessage::new(""), "it returned an empty message."),
        (
            |_| UserMessage::new(" \n\t"),
            "it returned an empty message.",
        ),
        (
            |m| UserMessage {
                side_question: true,
                ..m
            },
            "it changed the side-question flag.",
        ),
    ];
    for (cannot, reason) in cases {
        let (outcome, [_, middle, last]) = trio::<OnUserMessage>(
            (),
            UserMessage::new("fix it"),
            [
                replace(|m: UserMessage| UserMessage::new(format!("{} now", m.text))),
                replace(cannot),
                replace(|m: UserMessage| UserMessage::new(format!("{}!", m.text))),
            ],
        )
        .await;
        assert_eq!(outcome.value, UserMessage::new("fix it now!"));
        assert_eq!(notes(&outcome), skipped("user-message", reason));
        assert_eq!(middle.seen(), [UserMessage::new("fix it now")]);
        assert_eq!(last.seen(), [UserMessage::new("fix it now")]);
    }
}

// ---- P2.5 transform_model ----

fn set_text(request: &mut ModelRequest, id: &str, new: &str) {
    *model::text_mut(model::item_mut(request, id)) = new.into();
}

#[actix_rt::test]
async fn transform_model_text_changes_chain_and_every_structural_change_is_refused() {
    type Edit = fn(&mut ModelRequest);
    let cases: [(Edit, &str); 14] = [
        (|r| r.items.to_mut().swap(1, 2), "it reordered items."),
        (
            |r| r.items.push(model::user("u9", "extra", &[]).into()),
            "it added an item.",
        ),
        (|r| drop(r.items.to_mut().remove(3)), "it dropped an item."),
        (
            |r| set_text(r, "sys", "You are a pirate."),
            "it edited the system message.",
        ),
        (
            |r| model::images_mut(model::item_mut(r, "a1")).push(model::PNG1),
            "it added an image.",
        ),
        (
            |r| model::item_mut(r, "u1").body = model::assistant("u1", "x", &[]).body,
            "it changed a message role.",
        ),
        (
            |r| model::item_mut(r, "call1").body = model::tool_call("call1", "c1", "rm").body,
            "it changed a tool call.",
        ),
        (
            |r| {
                model::item_mut(r, "res1").body =
                    model::tool_result("res1", "c2", "read_file", "x", &[]).body
            },
            "it changed a tool result's call id.",
        ),
        (
            |r| {
                model::item_mut(r, "res1").body =
                    model::tool_result("res1", "c1", "cat", "x", &[]).body
            },
            "it changed a tool result's name.",
        ),
        (
            |r| {
                if let ItemBody::ToolResult { success, .. } = &mut model::item_mut(r, "res1").body {
                    *success = false
                }
            },
            "it changed a tool result's success.",
        ),
        (
            |r| set_text(r, "r1", ""),
            "it returned empty reasoning text.",
        ),
        (
            |r| model::item_mut(r, "a1").id = "a9".into(),
            "it changed an item id.",
        ),
        (
            |r| model::item_mut(r, "call1").body = model::user("call1", "x", &[]).body,
            "it changed an item's kind.",
        ),
        (
            |r| r.accepts_images = false,
            "it changed the request's purpose.",
        ),
    ];
    for (cannot, reason) in cases {
        let (outcome, [_, _, last]) = trio::<TransformModel>(
            (),
            model::work_request(),
            [
                replace(|mut r: ModelRequest| {
                    set_text(&mut r, "u1", "first");
                    r
                }),
                replace(move |mut r: ModelRequest| {
                    cannot(&mut r);
                    r
                }),
                replace(|mut r: ModelRequest| {
                    set_text(&mut r, "a1", "last");
                    set_text(&mut r, "res1", "LAST");
                    model::images_mut(model::item_mut(&mut r, "u1")).clear();
                    r
                }),
            ],
        )
        .await;
        let mut expected = model::work_request();
        set_text(&mut expected, "u1", "first");
        assert_eq!(last.seen(), [expected.clone()], "{reason}");
        set_text(&mut expected, "a1", "last");
        set_text(&mut expected, "res1", "LAST");
        model::images_mut(model::item_mut(&mut expected, "u1")).clear();
        assert_eq!(outcome.value, expected);
        assert_eq!(notes(&outcome), skipped("model-request", reason));
    }
}

// ---- P2.7 on_tool_call ----

#[actix_rt::test]
async fn on_tool_call_name_and_arguments_change_and_a_new_call_id_is_refused() {
    use hookline::messages::tool::ToolCall;
    let cases: [(fn(ToolCall) -> ToolCall, &str); 2] = [
        (
            |c| ToolCall {
                call_id: "c2".into(),
                ..c
            },
            "it returned a different call id.",
        ),
        (
            |c| ToolCall {
                name: "".into(),
                ..c
            },
            "it returned an empty tool name.",
        ),
    ];
    for (cannot, reason) in cases {
        let (outcome, [_, _, last]) = trio::<OnToolCall>(
            (),
            tool_call(),
            [
                replace(|c: ToolCall| ToolCall {
                    name: "cat".into(),
                    ..c
                }),
                replace(cannot),
                replace(|c: ToolCall| ToolCall {
                    arguments: serde_json::json!({"path": "b.txt"}),
                    ..c
                }),
            ],
        )
        .await;
        assert_eq!(last.seen()[0].name, "cat");
        assert_eq!(
            outcome.value,
            ToolCall {
                name: "cat".into(),
                arguments: serde_json::json!({"path": "b.txt"}),
                ..tool_call()
            }
        );
        assert_eq!(notes(&outcome), skipped("tool-call", reason));
    }
}

// ---- P2.8 on_tool_result ----

fn result() -> ToolResult {
    ToolResult {
        call_id: "c1".into(),
        name: "read_file".into(),
        text: "hello".into(),
        images: vec![model::PNG1],
        success: true,
        approval: ApprovalState::Granted,
    }
}

#[actix_rt::test]
async fn on_tool_result_text_and_images_change_and_structure_changes_are_refused() {
    let cases: [(fn(ToolResult) -> ToolResult, &str); 5] = [
        (
            |r| ToolResult {
                approval: ApprovalState::Denied,
                ..r
            },
            "it changed the approval decision.",
        ),
        (
            |r| ToolResult {
                call_id: "c2".into(),
                ..r
            },
            "it changed a tool result's call id.",
        ),
        (
            |r| ToolResult {
                name: "cat".into(),
                ..r
            },
            "it changed a tool result's name.",
        ),
        (
            |r| ToolResult {
                success: false,
                ..r
            },
            "it changed a tool result's success.",
        ),
        (
            |r| ToolResult {
                images: vec![model::WEBP4],
                ..r
            },
            "it added an image.",
        ),
    ];
    for (cannot, reason) in cases {
        let cx = ToolResultContext {
            images_allowed: true,
            held: model::held(),
        };
        let (outcome, _) = trio::<OnToolResult>(
            cx,
            result(),
            [
                replace(|r: ToolResult| ToolResult {
                    text: "HELLO".into(),
                    images: vec![model::JPEG2],
                    ..r
                }),
                replace(cannot),
                replace(|r: ToolResult| ToolResult {
                    text: format!("{}!", r.text),
                    ..r
                }),
            ],
        )
        .await;
        assert_eq!(
            outcome.value,
            ToolResult {
                text: "HELLO!".into(),
                images: vec![model::JPEG2],
                ..result()
            }
        );
        assert_eq!(notes(&outcome), skipped("tool-result", reason));
    }
}

#[actix_rt::test]
async fn a_denied_result_cannot_be_marked_passed() {
    let denied = ToolResult {
        approval: ApprovalState::Denied,
        success: false,
        ..result()
    };
    let (outcome, _) = trio::<OnToolResult>(
        ToolResultContext::default(),
        denied.clone(),
        [
            Act::Keep,
            replace(|r: ToolResult| ToolResult {
                approval: ApprovalState::Granted,
                ..r
            }),
            Act::Keep,
        ],
    )
    .await;
    assert_eq!(outcome.value, denied);
    assert_eq!(
        notes(&outcome),
        skipped("tool-result", "it marked an approval as passed.")
    );
}

#[actix_rt::test]
async fn a_text_only_turn_keeps_the_new_text_and_ignores_images_with_one_note() {
    let cx = ToolResultContext {
        images_allowed: false,
        held: model::held(),
    };
    let (outcome, [_, _, last]) = trio::<OnToolResult>(
        cx,
        result(),
        [
            replace(|r: ToolResult| ToolResult {
                text: "A".into(),
                images: vec![],
                ..r
            }),
            replace(|r: ToolResult| ToolResult {
                text: format!("{}B", r.text),
                images: vec![model::JPEG2],
                ..r
            }),
            Act::Keep,
        ],
    )
    .await;
    assert_eq!(
        outcome.value,
        ToolResult {
            text: "AB".into(),
            ..result()
        }
    );
    assert_eq!(
        last.seen(),
        [ToolResult {
            text: "AB".into(),
            ..result()
        }]
    );
    assert_eq!(
        notes(&outcome),
        ["Plugin images were ignored because this turn returns text only."]
    );
}

// ---- P2.9 on_approval ----

#[actix_rt::test]
async fn on_approval_raises_and_lowering_clearing_or_rewording_is_refused() {
    let cases: [(fn(Classification) -> Classification, &str); 4] = [
        (
            |c| Classification {
                risk: Risk::Read,
                ..c
            },
            "it tried to lower risk.",
        ),
        (
            |c| Classification {
                authority: Authority::Workspace,
                ..c
            },
            "it tried to lower authority.",
        ),
        (
            |c| Classification {
                requires_prompt: false,
                ..c
            },
            "it tried to clear the prompt requirement.",
        ),
        (
            |c| Classification {
                summary: "harmless".into(),
                ..c
            },
            "it changed the summary.",
        ),
    ];
    for (cannot, reason) in cases {
        let (outcome, [_, middle, _]) = trio::<OnApproval>(
            (),
            classification(),
            [
                replace(|c: Classification| Classification {
                    risk: Risk::Execute,
                    authority: Authority::Host,
                    requires_prompt: true,
                    ..c
                }),
                replace(cannot),
                replace(|c: Classification| Classification {
                    risk: Risk::Critical,
                    ..c
                }),
            ],
        )
        .await;
        assert_eq!(middle.seen()[0].risk, Risk::Execute);
        assert_eq!(
            outcome.value,
            Classification {
                risk: Risk::Critical,
                authority: Authority::Host,
                requires_prompt: true,
                ..classification()
            }
        );
        assert_eq!(notes(&outcome), skipped("approval", reason));
    }
}

// ---- P2.10 on_compaction ----

#[actix_rt::test]
async fn on_compaction_appends_and_replacing_or_dropping_is_refused() {
    let cases: [(fn(Compaction) -> Compaction, &str); 3] = [
        (
            |c| Compaction {
                text: String::new(),
                ..c
            },
            "it replaced the compaction text.",
        ),
        (
            |c| Compaction {
                phase: CompactionPhase::Prompt,
                ..c
            },
            "it changed the compaction phase.",
        ),
        (
            |c| Compaction {
                appended: vec![],
                ..c
            },
            "it removed appended text.",
        ),
    ];
    for (cannot, reason) in cases {
        let before = Compaction::new(CompactionPhase::Summary, "History.");
        let (outcome, _) = trio::<OnCompaction>(
            (),
            before,
            [
                replace(|c: Compaction| c.append(" Tests pass. ")),
                replace(cannot),
                replace(|c: Compaction| c.append("Ship it.")),
            ],
        )
        .await;
        assert_eq!(
            outcome.value.composed().text,
            "History.\n\nTests pass.\n\nShip it."
        );
        assert_eq!(notes(&outcome), skipped("compaction", reason));
    }
}
