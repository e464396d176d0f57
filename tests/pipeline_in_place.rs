//! In-place hooks (issue 23): a hook registered with `edit` changes the value through `&mut`,
//! keeps the waterfall, and still answers to its rule; a refused, failed or panicking edit leaves
//! the value before it (SPEC P1.2, P1.4, P1.5). And admission sheds a backlog at the door.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::FutureExt as _;
use hookline::actors::plugin::{HookError, PluginRegistration, Reply};
use hookline::actors::{Pipeline, PipelineError};
use hookline::messages::hook::{HookKind, OnPrompt, OnTurnStarted, OnUserMessage};
use hookline::messages::note::{Note, Refusal, SkipReason};
use hookline::messages::prompt::{Prompt, PromptMode};
use hookline::messages::session::SessionId;
use hookline::messages::user::{TurnInfo, UserMessage};

fn appender(name: &str, suffix: &'static str) -> PluginRegistration {
    PluginRegistration::new(name).edit(OnUserMessage, move |_, message| {
        message.text.push_str(suffix);
        Ok(())
    })
}

#[actix_rt::test]
async fn edits_in_place_run_in_load_order_and_name_who_changed_the_value() {
    let reader = PluginRegistration::new("reader").edit(OnUserMessage, |_, message| {
        // Reading through the draft is not a write.
        assert!(message.text.starts_with("hi"));
        Ok(())
    });
    let pipeline = Pipeline::builder()
        .plugin(appender("a", " +a"))
        .plugin(reader)
        .plugin(appender("b", " +b"))
        .start()
        .unwrap();
    let outcome = pipeline
        .call::<OnUserMessage>(&SessionId::new("s"), UserMessage::new("hi"))
        .await
        .unwrap();
    assert_eq!(outcome.value.text, "hi +a +b");
    assert_eq!(outcome.changed_by, ["a", "b"]);
    assert!(outcome.notes.is_empty() && outcome.failed.is_empty());
}

#[actix_rt::test]
async fn a_refused_edit_leaves_the_value_before_it_for_the_next_plugin() {
    let blank = PluginRegistration::new("blank").edit(OnUserMessage, |_, message| {
        message.text.clear();
        Ok(())
    });
    let pipeline = Pipeline::builder()
        .plugin(appender("a", " +a"))
        .plugin(blank)
        .plugin(appender("b", " +b"))
        .start()
        .unwrap();
    let outcome = pipeline
        .call::<OnUserMessage>(&SessionId::new("s"), UserMessage::new("hi"))
        .await
        .unwrap();
    // SPEC P2.3: the stored message cannot be made empty; the value before stands (P1.5).
    assert_eq!(outcome.value.text, "hi +a +b");
    assert_eq!(outcome.failed, ["blank"]);
    assert_eq!(
        outcome.notes,
        [Note::skipped(
            "blank",
            HookKind::OnUserMessage,
            SkipReason::Refused(Refusal::EmptyUserMessage)
        )]
    );
}

#[actix_rt::test]
async fn an_edit_that_fails_or_panics_after_writing_leaves_the_value_before_it() {
    let fails = PluginRegistration::new("fails").edit(OnUserMessage, |_, message| {
        message.text.push_str(" half-done");
        Err(HookError::msg("gave up"))
    });
    let panics = PluginRegistration::new("panics").edit(OnUserMessage, |_, message| {
        message.text.push_str(" torn");
        panic!("mid-edit");
    });
    let pipeline = Pipeline::builder()
        .plugin(fails)
        .plugin(panics)
        .plugin(appender("b", " +b"))
        .start()
        .unwrap();
    let outcome = pipeline
        .call::<OnUserMessage>(&SessionId::new("s"), UserMessage::new("hi"))
        .await
        .unwrap();
    assert_eq!(outcome.value.text, "hi +b");
    assert_eq!(outcome.failed, ["fails", "panics"]);
    assert_eq!(outcome.changed_by, ["b"]);
}

#[actix_rt::test]
async fn an_edit_keeps_the_append_only_rule_of_on_prompt() {
    let trims = PluginRegistration::new("trims").edit(OnPrompt, |_, prompt| {
        prompt.appended.push("  Use tabs.  ".into());
        Ok(())
    });
    let replaces = PluginRegistration::new("replaces").edit(OnPrompt, |_, prompt| {
        prompt.text = "You are a pirate.".into();
        Ok(())
    });
    let pipeline = Pipeline::builder()
        .plugin(trims)
        .plugin(replaces)
        .start()
        .unwrap();
    let outcome = pipeline
        .call::<OnPrompt>(
            &SessionId::new("s"),
            Prompt::new(PromptMode::Work, "Be helpful."),
        )
        .await
        .unwrap();
    // The rule's normalisation applies to an edit as to a replacement (SPEC P2.2).
    assert_eq!(outcome.value.appended, ["Use tabs."]);
    assert_eq!(outcome.value.text, "Be helpful.");
    assert_eq!(outcome.failed, ["replaces"]);
}

#[actix_rt::test]
async fn writes_to_a_read_only_hook_s_value_change_nothing() {
    let writer = PluginRegistration::new("writer").edit(OnTurnStarted, |_, turn| {
        turn.user_text = "rewritten".into();
        Ok(())
    });
    let pipeline = Pipeline::builder().plugin(writer).start().unwrap();
    let turn = TurnInfo {
        user_text: "stored text".into(),
        mode: PromptMode::Work,
        stop_reason: None,
    };
    let outcome = pipeline
        .call::<OnTurnStarted>(&SessionId::new("s"), turn.clone())
        .await
        .unwrap();
    assert_eq!(outcome.value, turn);
    assert!(outcome.changed_by.is_empty() && outcome.notes.is_empty());
}

#[actix_rt::test]
async fn a_call_beyond_the_bound_is_refused_by_its_caller_before_anything_is_sent() {
    tokio::time::pause();
    let (entered, release) = (
        std::sync::Arc::new(tokio::sync::Notify::new()),
        std::sync::Arc::new(tokio::sync::Semaphore::new(0)),
    );
    let (e, r) = (entered.clone(), release.clone());
    let waits = PluginRegistration::new("waits").on_async(OnUserMessage, move |_, _| {
        let (e, r) = (e.clone(), r.clone());
        async move {
            e.notify_one();
            let _permit = r.acquire().await;
            Ok(Reply::Keep)
        }
    });
    let pipeline = Pipeline::builder()
        .plugin(waits)
        .max_pending(1)
        .start()
        .unwrap();
    let first = {
        let pipeline = pipeline.clone();
        actix_rt::spawn(async move {
            pipeline
                .call::<OnUserMessage>(&SessionId::new("a"), UserMessage::new("go"))
                .await
        })
    };
    entered.notified().await;
    // Refused on the first poll: no message to the coordinator, no wait for its answer.
    let refused = pipeline
        .call::<OnUserMessage>(&SessionId::new("b"), UserMessage::new("go"))
        .now_or_never();
    assert_eq!(refused, Some(Err(PipelineError::Overloaded)));
    release.add_permits(1);
    assert!(first.await.unwrap().is_ok());
    let again = pipeline
        .call::<OnUserMessage>(&SessionId::new("b"), UserMessage::new("go"))
        .await;
    assert!(
        again.is_ok(),
        "admitted again once the first call is answered"
    );
}
