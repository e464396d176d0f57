//! `transform_model` (SPEC P2.5, P3.5, P3.8, P3.9): every "can" applied, every "cannot" refused
//! with its exact reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hookline_messages::hook::{Applied, Hook, TransformModel};
use hookline_messages::model::{ItemBody, ModelRequest, Purpose};

fn admit(before: &ModelRequest, proposed: ModelRequest) -> Result<ModelRequest, String> {
    TransformModel::admit(&(), before, proposed)
        .map(|Applied { value, notice }| {
            assert_eq!(notice, None, "transform_model never adds a host note");
            value
        })
        .map_err(|refusal| refusal.to_string())
}

fn refused(proposed: impl FnOnce(&mut ModelRequest)) -> String {
    let before = work_request();
    let mut changed = before.clone();
    proposed(&mut changed);
    match admit(&before, changed) {
        Ok(value) => panic!("accepted: {value:?}"),
        Err(reason) => reason,
    }
}

fn applied(proposed: impl FnOnce(&mut ModelRequest)) -> ModelRequest {
    let before = work_request();
    let mut changed = before.clone();
    proposed(&mut changed);
    admit(&before, changed).unwrap_or_else(|reason| panic!("refused: {reason}"))
}

// ---- can (SPEC P2.5, P3.5, P3.8) ----

#[test]
fn user_assistant_and_tool_result_text_may_change() {
    let value = applied(|r| {
        *text_mut(item_mut(r, "u1")) = "look at this, carefully".into();
        *text_mut(item_mut(r, "a1")) = "I will read it.".into();
        *text_mut(item_mut(r, "res1")) = "HELLO".into();
    });
    let mut expected = work_request();
    *text_mut(item_mut(&mut expected, "u1")) = "look at this, carefully".into();
    *text_mut(item_mut(&mut expected, "a1")) = "I will read it.".into();
    *text_mut(item_mut(&mut expected, "res1")) = "HELLO".into();
    assert_eq!(value, expected);
}

#[test]
fn text_may_become_empty_on_user_assistant_and_tool_result_items() {
    let value = applied(|r| {
        text_mut(item_mut(r, "u1")).clear();
        text_mut(item_mut(r, "a1")).clear();
        text_mut(item_mut(r, "res1")).clear();
    });
    assert!(matches!(&item(&value, "u1").body, ItemBody::User { text, .. } if text.is_empty()));
}

#[test]
fn image_references_an_item_already_has_may_be_dropped() {
    let value = applied(|r| {
        images_mut(item_mut(r, "u1")).clear();
        images_mut(item_mut(r, "res1")).clear();
    });
    assert!(item(&value, "u1").body.images().is_empty());
    assert!(item(&value, "res1").body.images().is_empty());
}

#[test]
fn dropping_one_of_several_images_keeps_the_rest() {
    let mut before = work_request();
    *images_mut(item_mut(&mut before, "u1")) = vec![PNG1, GIF3, PNG1];
    let mut proposed = before.clone();
    *images_mut(item_mut(&mut proposed, "u1")) = vec![GIF3, PNG1];
    let value = admit(&before, proposed).unwrap();
    assert_eq!(item(&value, "u1").body.images(), [GIF3, PNG1]);
}

#[test]
fn dropping_images_is_allowed_on_a_request_that_cannot_carry_images() {
    let before = side_request();
    let mut proposed = before.clone();
    images_mut(item_mut(&mut proposed, "u1")).clear();
    assert_eq!(admit(&before, proposed.clone()), Ok(proposed));
}

#[test]
fn returning_the_request_unchanged_keeps_reasoning_provider_state() {
    let value = applied(|_| {});
    assert_eq!(value, work_request());
    assert!(matches!(
        &item(&value, "r1").body,
        ItemBody::Reasoning { provider_state: Some(s), .. } if s == "sig-1"
    ));
}

#[test]
fn rewritten_reasoning_text_applies_and_drops_provider_state() {
    let value = applied(|r| *text_mut(item_mut(r, "r1")) = "shorter".into());
    assert_eq!(item(&value, "r1"), &reasoning("r1", "shorter", None));
}

#[test]
fn a_plugin_cannot_forge_provider_state_for_unchanged_reasoning() {
    let value = applied(|r| {
        if let ItemBody::Reasoning { provider_state, .. } = &mut item_mut(r, "r1").body {
            *provider_state = Some("forged".into());
        }
    });
    assert_eq!(
        item(&value, "r1"),
        &reasoning("r1", "the user wants a look", Some("sig-1"))
    );
}

#[test]
fn reasoning_that_was_already_empty_may_stay_empty() {
    let mut before = work_request();
    *text_mut(item_mut(&mut before, "r1")) = String::new();
    assert_eq!(admit(&before, before.clone()), Ok(before));
}

// ---- cannot (SPEC P2.5, P3.5, P3.9) ----

#[test]
fn adding_an_item_is_refused() {
    let reason = refused(|r| r.items.push(user("u2", "and this", &[]).into()));
    assert_eq!(reason, "it added an item.");
}

#[test]
fn dropping_an_item_is_refused() {
    assert_eq!(
        refused(|r| drop(r.items.to_mut().remove(3))),
        "it dropped an item."
    );
}

#[test]
fn reordering_items_is_refused() {
    assert_eq!(
        refused(|r| r.items.to_mut().swap(1, 3)),
        "it reordered items."
    );
}

#[test]
fn changing_an_item_id_is_refused() {
    assert_eq!(
        refused(|r| item_mut(r, "a1").id = "a9".into()),
        "it changed an item id."
    );
}

#[test]
fn repeating_an_item_id_in_place_of_another_is_refused() {
    assert_eq!(
        refused(|r| item_mut(r, "a1").id = "u1".into()),
        "it changed an item id."
    );
}

#[test]
fn changing_a_message_role_is_refused() {
    let reason = refused(|r| item_mut(r, "u1").body = assistant("u1", "look at this", &[]).body);
    assert_eq!(reason, "it changed a message role.");
    let reason = refused(|r| item_mut(r, "a1").body = user("a1", "Reading the file.", &[]).body);
    assert_eq!(reason, "it changed a message role.");
}

#[test]
fn turning_a_message_into_or_out_of_the_system_message_is_refused() {
    let reason = refused(|r| item_mut(r, "u1").body = system("u1", "look at this").body);
    assert_eq!(reason, "it edited the system message.");
    let reason = refused(|r| item_mut(r, "sys").body = user("sys", "hi", &[]).body);
    assert_eq!(reason, "it edited the system message.");
    let reason = refused(|r| item_mut(r, "call1").body = system("x", "now a system").body);
    assert_eq!(reason, "it edited the system message.");
}

#[test]
fn changing_an_item_kind_is_refused() {
    let reason = refused(|r| item_mut(r, "call1").body = user("x", "no call", &[]).body);
    assert_eq!(reason, "it changed an item's kind.");
    let reason = refused(|r| item_mut(r, "r1").body = assistant("x", "thinking", &[]).body);
    assert_eq!(reason, "it changed an item's kind.");
    let reason = refused(|r| {
        item_mut(r, "res1").body = tool_call("x", "c1", "read_file").body;
    });
    assert_eq!(reason, "it changed an item's kind.");
}

#[test]
fn editing_the_system_message_is_refused() {
    let reason = refused(|r| *text_mut(item_mut(r, "sys")) = "You are a pirate.".into());
    assert_eq!(reason, "it edited the system message.");
    let reason = refused(|r| text_mut(item_mut(r, "sys")).clear());
    assert_eq!(reason, "it edited the system message.");
}

#[test]
fn changing_a_tool_call_is_refused() {
    let edit = |f: fn(&mut String, &mut String, &mut serde_json::Value)| {
        refused(move |r| {
            if let ItemBody::ToolCall {
                call_id,
                name,
                arguments,
            } = &mut item_mut(r, "call1").body
            {
                f(call_id, name, arguments);
            }
        })
    };
    assert_eq!(
        edit(|id, _, _| *id = "c2".into()),
        "it changed a tool call."
    );
    assert_eq!(
        edit(|_, name, _| *name = "write_file".into()),
        "it changed a tool call."
    );
    assert_eq!(
        edit(|_, _, args| *args = serde_json::json!({"path": "/etc/passwd"})),
        "it changed a tool call."
    );
}

#[test]
fn changing_a_tool_results_call_id_name_or_success_is_refused() {
    let edit = |f: fn(&mut String, &mut String, &mut bool)| {
        refused(move |r| {
            if let ItemBody::ToolResult {
                call_id,
                name,
                success,
                ..
            } = &mut item_mut(r, "res1").body
            {
                f(call_id, name, success);
            }
        })
    };
    assert_eq!(
        edit(|id, _, _| *id = "c2".into()),
        "it changed a tool result's call id."
    );
    assert_eq!(
        edit(|_, name, _| *name = "cat".into()),
        "it changed a tool result's name."
    );
    assert_eq!(
        edit(|_, _, ok| *ok = false),
        "it changed a tool result's success."
    );
}

#[test]
fn emptying_reasoning_is_refused() {
    let reason = refused(|r| text_mut(item_mut(r, "r1")).clear());
    assert_eq!(reason, "it returned empty reasoning text.");
}

#[test]
fn adding_an_image_to_an_item_is_refused() {
    // Image 3 is held by the session, but not on this item (SPEC P3.5).
    let reason = refused(|r| images_mut(item_mut(r, "u1")).push(GIF3));
    assert_eq!(reason, "it added an image.");
    let reason = refused(|r| images_mut(item_mut(r, "a1")).push(PNG1));
    assert_eq!(reason, "it added an image.");
    let reason = refused(|r| images_mut(item_mut(r, "res1")).push(JPEG2));
    assert_eq!(
        reason, "it added an image.",
        "a second copy is an added image"
    );
}

#[test]
fn moving_an_image_between_items_is_refused() {
    let reason = refused(|r| {
        images_mut(item_mut(r, "u1")).clear();
        images_mut(item_mut(r, "res1")).push(PNG1);
    });
    assert_eq!(reason, "it added an image.");
}

#[test]
fn changing_an_images_media_type_is_refused() {
    let reason = refused(|r| {
        *images_mut(item_mut(r, "u1")) = vec![hookline_messages::model::ImageRef {
            media_type: WEBP4.media_type,
            ..PNG1
        }];
    });
    assert_eq!(reason, "it added an image.");
}

#[test]
fn changing_the_purpose_or_image_flag_is_refused() {
    assert_eq!(
        refused(|r| r.purpose = Purpose::Plan),
        "it changed the request's purpose."
    );
    assert_eq!(
        refused(|r| r.accepts_images = false),
        "it changed the request's purpose."
    );
}

#[test]
fn a_structural_refusal_wins_over_an_allowed_text_change() {
    let reason = refused(|r| {
        *text_mut(item_mut(r, "u1")) = "new text".into();
        r.items.to_mut().swap(0, 1);
    });
    assert_eq!(reason, "it reordered items.");
}
