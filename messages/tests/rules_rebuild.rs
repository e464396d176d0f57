//! `rebuild_model` (SPEC R1, R5.1 to R5.6): every "can" applied and normalised, every "cannot"
//! refused with its exact reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use hookline_messages::hook::{Applied, Hook, RebuildModel};
use hookline_messages::model::{HeldImages, ItemBody, ModelRequest, Purpose};

fn admit_with(
    held: &HeldImages,
    before: &ModelRequest,
    proposed: ModelRequest,
) -> Result<ModelRequest, String> {
    RebuildModel::admit(held, before, proposed)
        .map(|Applied { value, notice }| {
            assert_eq!(notice, None, "rebuild_model never adds a host note");
            value
        })
        .map_err(|refusal| refusal.to_string())
}

fn rebuild(before: &ModelRequest, proposed: ModelRequest) -> Result<ModelRequest, String> {
    admit_with(&held(), before, proposed)
}

fn applied(before: &ModelRequest, edit: impl FnOnce(&mut ModelRequest)) -> ModelRequest {
    let mut proposed = before.clone();
    edit(&mut proposed);
    rebuild(before, proposed).unwrap_or_else(|reason| panic!("refused: {reason}"))
}

fn refused(before: &ModelRequest, edit: impl FnOnce(&mut ModelRequest)) -> String {
    let mut proposed = before.clone();
    edit(&mut proposed);
    match rebuild(before, proposed) {
        Ok(value) => panic!("accepted: {value:?}"),
        Err(reason) => reason,
    }
}

fn ids(request: &ModelRequest) -> Vec<&str> {
    request.items.iter().map(|i| i.id.0.as_str()).collect()
}

// ---- can (SPEC R1) ----

#[test]
fn the_request_returned_unchanged_is_the_same_request() {
    let before = work_request();
    assert_eq!(rebuild(&before, before.clone()), Ok(before));
}

#[test]
fn splitting_a_tool_call_from_its_result_is_accepted() {
    let before = work_request();
    let value = applied(&before, |r| {
        let result = r.items.to_mut().remove(5);
        r.items.to_mut().insert(1, result);
    });
    assert_eq!(ids(&value), ["sys", "res1", "u1", "r1", "a1", "call1"]);
    // Dropping the call and keeping its result is a split too.
    let value = applied(&before, |r| drop(r.items.to_mut().remove(4)));
    assert_eq!(ids(&value), ["sys", "u1", "r1", "a1", "res1"]);
    assert_eq!(
        item(&value, "res1"),
        item(&before, "res1"),
        "the kept result keeps its name"
    );
}

#[test]
fn dropping_and_reordering_items_of_any_kind_is_accepted() {
    let before = work_request();
    let value = applied(&before, |r| {
        r.items
            .to_mut()
            .retain(|i| i.id.0 != "r1" && i.id.0 != "sys");
        r.items.to_mut().reverse();
    });
    assert_eq!(ids(&value), ["res1", "call1", "a1", "u1"]);
    let value = applied(&before, |r| r.items.to_mut().clear());
    assert!(value.items.is_empty());
}

#[test]
fn rewriting_the_system_prompt_is_accepted() {
    let before = work_request();
    let value = applied(&before, |r| {
        *text_mut(item_mut(r, "sys")) = "You are a pirate.".into()
    });
    assert_eq!(item(&value, "sys"), &system("sys", "You are a pirate."));
    let value = applied(&before, |r| text_mut(item_mut(r, "sys")).clear());
    assert_eq!(item(&value, "sys"), &system("sys", ""));
}

#[test]
fn rewriting_a_role_is_accepted_as_a_new_item() {
    let before = work_request();
    let value = applied(&before, |r| {
        item_mut(r, "a1").body = user("a1", "Reading.", &[]).body
    });
    assert_eq!(item(&value, "a1"), &user("a1", "Reading.", &[]));
    let value = applied(&before, |r| {
        item_mut(r, "u1").body = system("u1", "look at this").body;
    });
    assert_eq!(item(&value, "u1"), &system("u1", "look at this"));
}

#[test]
fn rewriting_tool_calls_and_results_is_accepted() {
    let before = work_request();
    let value = applied(&before, |r| {
        item_mut(r, "call1").body = tool_call("call1", "c1", "cat").body;
        if let ItemBody::ToolResult { text, success, .. } = &mut item_mut(r, "res1").body {
            *text = "denied".into();
            *success = false;
        }
    });
    assert_eq!(item(&value, "call1"), &tool_call("call1", "c1", "cat"));
    assert!(matches!(
        &item(&value, "res1").body,
        ItemBody::ToolResult { text, success: false, name, .. } if text == "denied" && name == "read_file"
    ));
}

#[test]
fn items_of_every_kind_may_be_added() {
    let before = work_request();
    let added = [
        system("sys2", "Also: be brief."),
        user("u2", "more", &[GIF3]),
        assistant("a2", "Sure.", &[]),
        tool_call("call2", "c2", "list_dir"),
        tool_result("res2", "c2", "list_dir", "a.txt", &[]),
        reasoning("r2", "fresh thought", None),
    ];
    let value = applied(&before, |r| {
        r.items.to_mut().extend(added.iter().cloned().map(Arc::new))
    });
    assert_eq!(value.items.len(), 12);
    for new in &added {
        assert_eq!(item(&value, &new.id.0), new);
    }
}

#[test]
fn an_id_returned_on_a_different_kind_is_a_new_item() {
    // SPEC R5.2: `r1` comes back as a tool result: a new item, so its name comes from its call
    // (R5.3), not from the plugin, and `u1` comes back as reasoning: new reasoning, no state.
    let before = work_request();
    let value = applied(&before, |r| {
        item_mut(r, "r1").body = tool_result("r1", "c1", "forged", "x", &[]).body;
    });
    assert_eq!(
        item(&value, "r1"),
        &tool_result("r1", "c1", "read_file", "x", &[])
    );
    let value = applied(&before, |r| {
        item_mut(r, "a1").body = reasoning("a1", "thinking", Some("forged")).body;
    });
    assert_eq!(item(&value, "a1"), &reasoning("a1", "thinking", None));
}

#[test]
fn an_id_returned_on_a_different_kind_cannot_keep_the_old_items_images() {
    // `res1` held image 2 as a tool result; as a new assistant item on a side request, the
    // image is an added one.
    let before = side_request();
    let reason = refused(&before, |r| {
        item_mut(r, "res1").body = assistant("res1", "x", &[JPEG2]).body;
    });
    assert_eq!(
        reason,
        "it added an image to a request that cannot carry images."
    );
}

#[test]
fn a_new_tool_result_takes_its_name_from_its_call() {
    let before = work_request();
    // Its call is in the original request.
    let value = applied(&before, |r| {
        r.items
            .push(tool_result("res2", "c1", "forged", "again", &[]).into());
    });
    assert_eq!(
        item(&value, "res2"),
        &tool_result("res2", "c1", "read_file", "again", &[])
    );
    // Its call is new in the same replacement.
    let value = applied(&before, |r| {
        r.items.push(tool_call("call2", "c2", "list_dir").into());
        r.items
            .push(tool_result("res2", "c2", "forged", "a.txt", &[]).into());
    });
    assert_eq!(
        item(&value, "res2"),
        &tool_result("res2", "c2", "list_dir", "a.txt", &[])
    );
    // The call was renamed in the same replacement: the new name is the call's name.
    let value = applied(&before, |r| {
        item_mut(r, "call1").body = tool_call("call1", "c1", "cat").body;
        r.items
            .push(tool_result("res2", "c1", "forged", "again", &[]).into());
    });
    assert_eq!(
        item(&value, "res2"),
        &tool_result("res2", "c1", "cat", "again", &[])
    );
}

#[test]
fn new_reasoning_carries_no_provider_state() {
    let before = work_request();
    let value = applied(&before, |r| {
        r.items.push(reasoning("r2", "new", Some("forged")).into())
    });
    assert_eq!(item(&value, "r2"), &reasoning("r2", "new", None));
}

#[test]
fn rewritten_reasoning_drops_provider_state_and_kept_reasoning_keeps_it() {
    let before = work_request();
    let value = applied(&before, |r| {
        *text_mut(item_mut(r, "r1")) = "different".into()
    });
    assert_eq!(item(&value, "r1"), &reasoning("r1", "different", None));
    let value = applied(&before, |r| {
        let kept = r.items.to_mut().remove(2);
        r.items.push(kept);
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
    assert_eq!(rebuild(&before, before.clone()), Ok(before));
}

#[test]
fn moving_an_attached_image_is_accepted_when_the_request_carries_images() {
    let before = work_request();
    let value = applied(&before, |r| {
        images_mut(item_mut(r, "u1")).clear();
        images_mut(item_mut(r, "res1")).push(PNG1);
    });
    assert_eq!(item(&value, "res1").body.images(), [JPEG2, PNG1]);
    assert!(item(&value, "u1").body.images().is_empty());
}

#[test]
fn a_held_image_may_be_named_on_a_request_that_carries_images() {
    let before = work_request();
    let value = applied(&before, |r| {
        r.items.push(user("u2", "and this", &[GIF3]).into())
    });
    assert_eq!(item(&value, "u2").body.images(), [GIF3]);
}

#[test]
fn images_kept_in_place_are_accepted_on_a_request_that_cannot_carry_images() {
    let before = side_request();
    let value = applied(&before, |r| *text_mut(item_mut(r, "u1")) = "new".into());
    assert_eq!(item(&value, "u1").body.images(), [PNG1]);
    // Dropping them is fine too.
    let value = applied(&before, |r| images_mut(item_mut(r, "u1")).clear());
    assert!(item(&value, "u1").body.images().is_empty());
}

// ---- cannot (SPEC R1, R5.2, R5.4, R5.6) ----

#[test]
fn a_repeated_item_id_is_refused() {
    let before = work_request();
    let reason = refused(&before, |r| r.items.push(user("u1", "again", &[]).into()));
    assert_eq!(reason, "it repeated an item.");
    let reason = refused(&before, |r| {
        let copy = r.items[3].clone();
        r.items.push(copy);
    });
    assert_eq!(reason, "it repeated an item.");
    let reason = refused(&before, |r| {
        r.items.push(reasoning("u1", "clash", None).into())
    });
    assert_eq!(
        reason, "it repeated an item.",
        "a different kind does not make a repeat unique"
    );
}

#[test]
fn empty_reasoning_text_is_refused() {
    let before = work_request();
    let reason = refused(&before, |r| text_mut(item_mut(r, "r1")).clear());
    assert_eq!(reason, "it returned empty reasoning text.");
    let reason = refused(&before, |r| r.items.push(reasoning("r2", "", None).into()));
    assert_eq!(reason, "it returned empty reasoning text.");
    let reason = refused(&before, |r| {
        item_mut(r, "a1").body = reasoning("a1", "", None).body;
    });
    assert_eq!(reason, "it returned empty reasoning text.");
}

#[test]
fn empty_reasoning_under_an_id_of_another_kind_is_refused_even_if_that_was_empty() {
    let mut before = work_request();
    *text_mut(item_mut(&mut before, "a1")) = String::new();
    let reason = refused(&before, |r| {
        item_mut(r, "a1").body = reasoning("a1", "", None).body;
    });
    assert_eq!(reason, "it returned empty reasoning text.");
}

#[test]
fn an_image_the_session_does_not_hold_is_refused() {
    let before = work_request();
    let reason = refused(&before, |r| images_mut(item_mut(r, "u1")).push(WEBP4));
    assert_eq!(reason, "it added an image.");
    let reason = refused(&before, |r| r.items.push(user("u2", "x", &[WEBP4]).into()));
    assert_eq!(reason, "it added an image.");
}

#[test]
fn an_image_with_another_media_type_is_refused() {
    // SPEC R5.4: images move as markers with the same media type.
    let before = work_request();
    let relabelled = hookline_messages::model::ImageRef {
        media_type: WEBP4.media_type,
        ..PNG1
    };
    let reason = refused(&before, |r| {
        images_mut(item_mut(r, "res1")).push(relabelled)
    });
    assert_eq!(reason, "it added an image.");
}

#[test]
fn any_added_image_on_a_request_that_cannot_carry_images_is_refused() {
    let before = side_request();
    let expected = "it added an image to a request that cannot carry images.";
    // A held image, new on an item.
    assert_eq!(
        refused(&before, |r| images_mut(item_mut(r, "a1")).push(GIF3)),
        expected
    );
    // An image the session does not hold.
    assert_eq!(
        refused(&before, |r| images_mut(item_mut(r, "a1")).push(WEBP4)),
        expected
    );
    // An attached image moved to another item.
    let moved = refused(&before, |r| {
        images_mut(item_mut(r, "u1")).clear();
        images_mut(item_mut(r, "res1")).push(PNG1);
    });
    assert_eq!(moved, expected);
    // An attached image on a new item.
    assert_eq!(
        refused(&before, |r| r.items.push(user("u2", "x", &[PNG1]).into())),
        expected
    );
}

#[test]
fn a_duplicated_image_on_a_request_that_cannot_carry_images_is_refused() {
    // Keeping an attachment is allowed; a second copy on the same item is an added image.
    let before = side_request();
    let reason = refused(&before, |r| images_mut(item_mut(r, "u1")).push(PNG1));
    assert_eq!(
        reason,
        "it added an image to a request that cannot carry images."
    );
}

#[test]
fn images_are_refused_on_compaction_and_text_only_requests_too() {
    for (purpose, accepts) in [
        (Purpose::Compaction, false),
        (Purpose::Work, false),
        (Purpose::Plan, false),
    ] {
        let before = ModelRequest {
            purpose,
            accepts_images: accepts,
            ..work_request()
        };
        let reason = refused(&before, |r| images_mut(item_mut(r, "a1")).push(PNG1));
        assert_eq!(
            reason,
            "it added an image to a request that cannot carry images."
        );
    }
}

#[test]
fn changing_the_purpose_or_image_flag_is_refused() {
    let before = side_request();
    assert_eq!(
        refused(&before, |r| r.accepts_images = true),
        "it changed the request's purpose."
    );
    assert_eq!(
        refused(&before, |r| r.purpose = Purpose::Work),
        "it changed the request's purpose."
    );
}

#[test]
fn a_refusal_leaves_the_value_before_for_the_caller() {
    let before = work_request();
    let mut proposed = before.clone();
    proposed.items.push(reasoning("r2", "", None).into());
    assert!(rebuild(&before, proposed).is_err());
    assert_eq!(before, work_request());
}

// ---- what the provider is sent (SPEC R5.5, R5.6) ----

#[test]
fn accepts_images_only_for_work_or_plan_on_an_image_capable_model() {
    use hookline_messages::model::ModelRequest as R;
    assert!(R::accepts_images_for(Purpose::Work, true));
    assert!(R::accepts_images_for(Purpose::Plan, true));
    assert!(!R::accepts_images_for(Purpose::Side, true));
    assert!(!R::accepts_images_for(Purpose::Compaction, true));
    for purpose in [
        Purpose::Work,
        Purpose::Plan,
        Purpose::Side,
        Purpose::Compaction,
    ] {
        assert!(!R::accepts_images_for(purpose, false));
    }
}

#[test]
fn assistant_and_system_images_are_sent_as_plain_text() {
    let mut request = work_request();
    *images_mut(item_mut(&mut request, "sys")) = vec![GIF3];
    *images_mut(item_mut(&mut request, "a1")) = vec![PNG1, JPEG2];
    let mut empty_assistant = assistant("a2", "", &[WEBP4]);
    empty_assistant.id = "a2".into();
    request.items.push(empty_assistant.into());
    let sent = request.prepared_for_provider();
    assert_eq!(
        item(&sent, "sys"),
        &system("sys", "You are a coding agent.\n[image 3: image/gif]")
    );
    assert_eq!(
        item(&sent, "a1"),
        &assistant(
            "a1",
            "Reading the file.\n[image 1: image/png]\n[image 2: image/jpeg]",
            &[]
        )
    );
    assert_eq!(
        item(&sent, "a2"),
        &assistant("a2", "[image 4: image/webp]", &[])
    );
    // User messages and tool results keep theirs on a request that carries images.
    assert_eq!(item(&sent, "u1").body.images(), [PNG1]);
    assert_eq!(item(&sent, "res1").body.images(), [JPEG2]);
}

#[test]
fn a_request_that_cannot_carry_images_is_sent_without_any() {
    let mut request = side_request();
    *images_mut(item_mut(&mut request, "a1")) = vec![GIF3];
    let sent = request.prepared_for_provider();
    assert!(sent.items.iter().all(|i| i.body.images().is_empty()));
    assert_eq!(
        item(&sent, "a1"),
        &assistant("a1", "Reading the file.\n[image 3: image/gif]", &[])
    );
}
