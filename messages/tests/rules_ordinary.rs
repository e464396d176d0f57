//! The ordinary hooks' rules through [`Hook::admit`], every row of SPEC P2 except P2.5 (in
//! `rules_transform.rs`): each "can" applied, each "cannot" refused with its exact reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hookline_messages::approval::{Authority, Classification, Risk};
use hookline_messages::compaction::{Compaction, CompactionPhase};
use hookline_messages::hook::{
    Applied, Hook, OnApproval, OnCompaction, OnModelResponse, OnPrompt, OnSessionEnded,
    OnSessionStarted, OnToolCall, OnToolResult, OnTurnFinished, OnTurnStarted, OnUserMessage,
    ToolResultContext,
};
use hookline_messages::model::{FinishReason, ModelResponse, Purpose, Usage};
use hookline_messages::note::Note;
use hookline_messages::prompt::{Prompt, PromptMode};
use hookline_messages::session::{ApprovalMode, SessionInfo};
use hookline_messages::tool::{ApprovalState, ToolCall, ToolProvider, ToolResult};
use hookline_messages::user::{StopReason, TurnInfo, UserMessage};
use serde_json::json;

fn reason<T: std::fmt::Debug>(
    result: Result<Applied<T>, hookline_messages::note::Refusal>,
) -> String {
    match result {
        Ok(applied) => panic!("accepted: {applied:?}"),
        Err(refusal) => refusal.to_string(),
    }
}

fn value<T>(result: Result<Applied<T>, hookline_messages::note::Refusal>) -> T {
    match result {
        Ok(Applied {
            value,
            notice: None,
        }) => value,
        Ok(Applied {
            notice: Some(note), ..
        }) => panic!("unexpected note: {note}"),
        Err(refusal) => panic!("refused: {refusal}"),
    }
}

// ---- P2.1, P2.4, P2.6: read-only hooks ----

#[test]
fn read_only_hooks_keep_the_value_whatever_is_returned() {
    let session = SessionInfo {
        workspace_root: "/w".into(),
        session_id: "s1".into(),
        approval_mode: ApprovalMode::AskAll,
    };
    let forged = SessionInfo {
        workspace_root: "/etc".into(),
        ..session.clone()
    };
    assert_eq!(
        value(OnSessionStarted::admit(&(), &session, forged.clone())),
        session
    );
    assert_eq!(value(OnSessionEnded::admit(&(), &session, forged)), session);

    let turn = TurnInfo {
        user_text: "hi".into(),
        mode: PromptMode::Work,
        stop_reason: None,
    };
    let forged = TurnInfo {
        user_text: "bye".into(),
        stop_reason: Some(StopReason::Failed),
        ..turn.clone()
    };
    assert_eq!(
        value(OnTurnStarted::admit(&(), &turn, forged.clone())),
        turn
    );
    assert_eq!(value(OnTurnFinished::admit(&(), &turn, forged)), turn);

    let response = ModelResponse {
        purpose: Purpose::Side,
        finish_reason: FinishReason::Stop,
        items: vec![assistant("a", "answer", &[])],
        usage: Usage::reported(10, 2),
    };
    let forged = ModelResponse {
        items: vec![],
        ..response.clone()
    };
    assert_eq!(
        value(OnModelResponse::admit(&(), &response, forged)),
        response
    );
    let read_only = [
        OnSessionStarted::READ_ONLY,
        OnSessionEnded::READ_ONLY,
        OnTurnStarted::READ_ONLY,
        OnTurnFinished::READ_ONLY,
        OnModelResponse::READ_ONLY,
        OnPrompt::READ_ONLY,
        OnApproval::READ_ONLY,
    ];
    assert_eq!(read_only, [true, true, true, true, true, false, false]);
}

// ---- P2.2: on_prompt appends ----

#[test]
fn prompt_parts_append_in_every_mode_and_empty_text_joins_cleanly() {
    for mode in [
        PromptMode::Work,
        PromptMode::Plan,
        PromptMode::Review,
        PromptMode::Compaction,
    ] {
        let before = Prompt::new(mode, "Base.");
        let after = value(OnPrompt::admit(
            &(),
            &before,
            before.clone().append("\tMore.\n"),
        ));
        assert_eq!(after.composed().text, "Base.\n\nMore.");
    }
    let empty = Prompt::new(PromptMode::Work, "");
    let after = value(OnPrompt::admit(
        &(),
        &empty,
        empty.clone().append("Only part."),
    ));
    assert_eq!(after.composed().text, "Only part.");
}

#[test]
fn replacing_the_work_plan_or_review_text_is_refused() {
    for (mode, text) in [
        (PromptMode::Work, "it replaced the work text."),
        (PromptMode::Plan, "it replaced the plan text."),
        (PromptMode::Review, "it replaced the review text."),
        (PromptMode::Compaction, "it replaced the compaction text."),
    ] {
        let before = Prompt::new(mode, "Base.");
        let mut proposed = before.clone().append("extra");
        proposed.text = "Other.".into();
        assert_eq!(reason(OnPrompt::admit(&(), &before, proposed)), text);
        // Emptying it is replacing it.
        let proposed = Prompt::new(mode, "");
        assert_eq!(reason(OnPrompt::admit(&(), &before, proposed)), text);
    }
}

#[test]
fn changing_or_removing_an_earlier_part_is_refused() {
    let before = Prompt::new(PromptMode::Plan, "Base.").append("First.");
    let mut changed = before.clone();
    changed.appended[0] = "Frist.".into();
    assert_eq!(
        reason(OnPrompt::admit(&(), &before, changed)),
        "it removed appended text."
    );
    let mut moved = Prompt::new(PromptMode::Plan, "Base.").append("Second.");
    moved.appended.push("First.".into());
    assert_eq!(
        reason(OnPrompt::admit(&(), &before, moved)),
        "it removed appended text."
    );
    let mut mode = before.clone();
    mode.mode = PromptMode::Work;
    assert_eq!(
        reason(OnPrompt::admit(&(), &before, mode)),
        "it changed the prompt mode."
    );
}

// ---- P2.3: on_user_message ----

#[test]
fn a_user_message_may_be_replaced_and_never_made_blank() {
    let before = UserMessage::new("fix it");
    let after = value(OnUserMessage::admit(
        &(),
        &before,
        UserMessage::new("fix parser.rs"),
    ));
    assert_eq!(after, UserMessage::new("fix parser.rs"));
    for blank in ["", " ", "\n\t "] {
        let refused = reason(OnUserMessage::admit(&(), &before, UserMessage::new(blank)));
        assert_eq!(refused, "it returned an empty message.");
    }
    let side = UserMessage {
        side_question: true,
        ..UserMessage::new("fix it")
    };
    assert_eq!(
        reason(OnUserMessage::admit(&(), &before, side)),
        "it changed the side-question flag."
    );
}

// ---- P2.7: on_tool_call ----

fn call() -> ToolCall {
    ToolCall {
        call_id: "c1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.txt"}),
        provider: ToolProvider::External,
    }
}

#[test]
fn a_tool_calls_name_and_arguments_may_change_and_the_provider_stays_the_hosts() {
    let proposed = ToolCall {
        name: "cat".into(),
        arguments: json!(["a.txt"]),
        provider: ToolProvider::BuiltIn,
        ..call()
    };
    let after = value(OnToolCall::admit(&(), &call(), proposed));
    assert_eq!(
        after,
        ToolCall {
            name: "cat".into(),
            arguments: json!(["a.txt"]),
            ..call()
        }
    );
}

#[test]
fn a_tool_calls_id_and_blank_names_are_refused() {
    let new_id = ToolCall {
        call_id: "c2".into(),
        ..call()
    };
    assert_eq!(
        reason(OnToolCall::admit(&(), &call(), new_id)),
        "it returned a different call id."
    );
    let empty_id = ToolCall {
        call_id: String::new(),
        ..call()
    };
    assert_eq!(
        reason(OnToolCall::admit(&(), &call(), empty_id)),
        "it returned a different call id."
    );
    let blank = ToolCall {
        name: "  ".into(),
        ..call()
    };
    assert_eq!(
        reason(OnToolCall::admit(&(), &call(), blank)),
        "it returned an empty tool name."
    );
}

// ---- P2.8: on_tool_result ----

fn result() -> ToolResult {
    ToolResult {
        call_id: "c1".into(),
        name: "read_file".into(),
        text: "hello".into(),
        images: vec![PNG1],
        success: true,
        approval: ApprovalState::Granted,
    }
}

fn image_turn() -> ToolResultContext {
    ToolResultContext {
        images_allowed: true,
        held: held(),
    }
}

#[test]
fn a_tool_results_text_and_images_may_change_on_an_image_turn() {
    let proposed = ToolResult {
        text: "HELLO".into(),
        images: vec![JPEG2, GIF3],
        ..result()
    };
    assert_eq!(
        value(OnToolResult::admit(
            &image_turn(),
            &result(),
            proposed.clone()
        )),
        proposed
    );
    let dropped = ToolResult {
        images: vec![],
        ..result()
    };
    assert_eq!(
        value(OnToolResult::admit(
            &image_turn(),
            &result(),
            dropped.clone()
        )),
        dropped
    );
}

#[test]
fn a_text_only_turn_ignores_returned_images_with_a_host_note() {
    let cx = ToolResultContext {
        images_allowed: false,
        held: held(),
    };
    let proposed = ToolResult {
        text: "HELLO".into(),
        images: vec![],
        ..result()
    };
    let applied = OnToolResult::admit(&cx, &result(), proposed).unwrap();
    assert_eq!(
        applied.value,
        ToolResult {
            text: "HELLO".into(),
            ..result()
        }
    );
    assert_eq!(
        applied.notice.map(|n| n.to_string()).as_deref(),
        Some("Plugin images were ignored because this turn returns text only.")
    );
    assert_eq!(
        Note::PluginImagesIgnored.to_string(),
        "Plugin images were ignored because this turn returns text only."
    );
}

#[test]
fn a_tool_results_structure_and_approval_cannot_change() {
    let cx = image_turn();
    let cases = [
        (
            ToolResult {
                call_id: "c9".into(),
                ..result()
            },
            "it changed a tool result's call id.",
        ),
        (
            ToolResult {
                name: "cat".into(),
                ..result()
            },
            "it changed a tool result's name.",
        ),
        (
            ToolResult {
                success: false,
                ..result()
            },
            "it changed a tool result's success.",
        ),
        (
            ToolResult {
                approval: ApprovalState::Denied,
                ..result()
            },
            "it changed the approval decision.",
        ),
        (
            ToolResult {
                images: vec![WEBP4],
                ..result()
            },
            "it added an image.",
        ),
    ];
    for (proposed, expected) in cases {
        assert_eq!(
            reason(OnToolResult::admit(&cx, &result(), proposed)),
            expected
        );
    }
    let denied = ToolResult {
        approval: ApprovalState::Denied,
        success: false,
        ..result()
    };
    let passed = ToolResult {
        approval: ApprovalState::Granted,
        ..denied.clone()
    };
    assert_eq!(
        reason(OnToolResult::admit(&cx, &denied, passed)),
        "it marked an approval as passed."
    );
}

// ---- P2.9: on_approval ----

fn classification() -> Classification {
    Classification {
        risk: Risk::Write,
        authority: Authority::Workspace,
        summary: "write a.txt".into(),
        requires_prompt: false,
    }
}

#[test]
fn approval_risk_and_authority_may_rise_and_a_prompt_may_be_required() {
    for risk in [Risk::Write, Risk::Execute, Risk::Critical] {
        let raised = Classification {
            risk,
            ..classification()
        };
        assert_eq!(
            value(OnApproval::admit(&(), &classification(), raised.clone())),
            raised
        );
    }
    let host = Classification {
        authority: Authority::Host,
        requires_prompt: true,
        ..classification()
    };
    assert_eq!(
        value(OnApproval::admit(&(), &classification(), host.clone())),
        host
    );
    assert!(
        Risk::Read < Risk::Write && Risk::Write < Risk::Execute && Risk::Execute < Risk::Critical
    );
}

#[test]
fn approval_cannot_be_lowered_cleared_or_reworded() {
    let before = Classification {
        risk: Risk::Execute,
        authority: Authority::Host,
        requires_prompt: true,
        ..classification()
    };
    let cases = [
        (
            Classification {
                risk: Risk::Read,
                ..before.clone()
            },
            "it tried to lower risk.",
        ),
        (
            Classification {
                authority: Authority::Workspace,
                ..before.clone()
            },
            "it tried to lower authority.",
        ),
        (
            Classification {
                requires_prompt: false,
                ..before.clone()
            },
            "it tried to clear the prompt requirement.",
        ),
        (
            Classification {
                summary: "harmless".into(),
                ..before.clone()
            },
            "it changed the summary.",
        ),
    ];
    for (proposed, expected) in cases {
        assert_eq!(reason(OnApproval::admit(&(), &before, proposed)), expected);
    }
}

// ---- P2.10: on_compaction ----

#[test]
fn compaction_facts_append_in_both_phases_and_blank_ones_are_ignored() {
    for phase in [CompactionPhase::Prompt, CompactionPhase::Summary] {
        let before = Compaction::new(phase, "Summarise.");
        let after = value(OnCompaction::admit(
            &(),
            &before,
            before.clone().append(" A. ").append("  "),
        ));
        assert_eq!(after.appended, ["A."]);
        assert_eq!(after.composed().text, "Summarise.\n\nA.");
    }
}

#[test]
fn compaction_text_phase_and_earlier_facts_cannot_change() {
    let before = Compaction::new(CompactionPhase::Summary, "History.").append("A.");
    let mut replaced = before.clone();
    replaced.text = "Nothing happened.".into();
    assert_eq!(
        reason(OnCompaction::admit(&(), &before, replaced)),
        "it replaced the compaction text."
    );
    let mut phase = before.clone();
    phase.phase = CompactionPhase::Prompt;
    assert_eq!(
        reason(OnCompaction::admit(&(), &before, phase)),
        "it changed the compaction phase."
    );
    let dropped = Compaction::new(CompactionPhase::Summary, "History.");
    assert_eq!(
        reason(OnCompaction::admit(&(), &before, dropped)),
        "it removed appended text."
    );
}
