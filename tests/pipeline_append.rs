//! In-place appends (issue 23): a hook that appends through `Draft::append` keeps no copy of the
//! value before it; the hook's rule for appends still decides, and a refused, failed or panicked
//! append is cut off again, so the value before it stands (SPEC P1.2, P1.4, P1.5, P2.3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hookline::actors::plugin::{HookError, PluginRegistration, Reply};
use hookline::actors::Pipeline;
use hookline::messages::hook::{HookKind, OnUserMessage};
use hookline::messages::note::{Note, Refusal, SkipReason};
use hookline::messages::session::SessionId;
use hookline::messages::user::UserMessage;

fn appender(name: &str, suffix: &'static str) -> PluginRegistration {
    PluginRegistration::new(name).edit(OnUserMessage, move |_, message| {
        message.append(suffix);
        Ok(())
    })
}

async fn run(
    plugins: Vec<PluginRegistration>,
    text: &str,
) -> hookline::actors::Outcome<UserMessage> {
    let pipeline = Pipeline::builder().plugins(plugins).start().unwrap();
    pipeline
        .call::<OnUserMessage>(&SessionId::new("s"), UserMessage::new(text))
        .await
        .unwrap()
}

#[actix_rt::test]
async fn appends_run_in_load_order_and_the_outcome_keeps_the_value_given() {
    let nothing = PluginRegistration::new("nothing").edit(OnUserMessage, |_, message| {
        message.append("");
        Ok(())
    });
    let outcome = run(
        vec![appender("a", " +a"), nothing, appender("b", " +b")],
        "hi",
    )
    .await;
    assert_eq!(outcome.value.text, "hi +a +b");
    // An empty append changes nothing, so it names no one.
    assert_eq!(outcome.changed_by, ["a", "b"]);
    // Only appends changed it: the value given is rebuilt on demand, nothing was copied.
    assert_eq!(outcome.before().as_deref(), Some(&UserMessage::new("hi")));
    assert!(outcome.notes.is_empty() && outcome.failed.is_empty());
}

#[actix_rt::test]
async fn a_replacement_after_appends_keeps_the_value_given_not_the_appended_one() {
    let replaces = PluginRegistration::new("replaces").on(OnUserMessage, |_, message| {
        Ok(Reply::Replace(UserMessage::new(format!(
            "{} !",
            message.text
        ))))
    });
    let mut outcome = run(
        vec![appender("a", " +a"), replaces, appender("b", " +b")],
        "hi",
    )
    .await;
    assert_eq!(outcome.value.text, "hi +a ! +b");
    assert_eq!(outcome.changed_by, ["a", "replaces", "b"]);
    assert_eq!(outcome.before().as_deref(), Some(&UserMessage::new("hi")));
    assert_eq!(outcome.take_before(), Some(UserMessage::new("hi")));
    assert_eq!(outcome.take_before(), None, "taken once");
}

#[actix_rt::test]
async fn an_outcome_no_plugin_changed_has_no_value_before() {
    let nothing = PluginRegistration::new("nothing").edit(OnUserMessage, |_, message| {
        message.append("");
        Ok(())
    });
    let mut outcome = run(vec![nothing], "hi").await;
    assert!(outcome.changed_by.is_empty());
    assert_eq!(outcome.before(), None);
    assert_eq!(outcome.take_before(), None);
}

#[actix_rt::test]
async fn an_append_that_leaves_the_text_blank_is_refused_and_cut_off() {
    let spaces = PluginRegistration::new("spaces").edit(OnUserMessage, |_, message| {
        message.append("   ");
        Ok(())
    });
    let outcome = run(vec![spaces, appender("b", " +b")], "").await;
    // SPEC P2.3: the text cannot be blank; the refused append is undone (P1.5).
    assert_eq!(outcome.value.text, " +b");
    assert_eq!(outcome.failed, ["spaces"]);
    assert_eq!(
        outcome.notes,
        [Note::skipped(
            "spaces",
            HookKind::OnUserMessage,
            SkipReason::Refused(Refusal::EmptyUserMessage)
        )]
    );
}

#[actix_rt::test]
async fn an_append_that_fails_or_panics_is_cut_off() {
    let fails = PluginRegistration::new("fails").edit(OnUserMessage, |_, message| {
        message.append(" half-done");
        Err(HookError::msg("gave up"))
    });
    let panics = PluginRegistration::new("panics").edit(OnUserMessage, |_, message| {
        message.append(" torn");
        panic!("mid-append");
    });
    let outcome = run(vec![appender("a", " +a"), fails, panics], "hi").await;
    assert_eq!(outcome.value.text, "hi +a");
    assert_eq!(outcome.failed, ["fails", "panics"]);
    assert_eq!(outcome.changed_by, ["a"]);
}

#[actix_rt::test]
async fn a_write_after_an_append_is_checked_against_the_value_before_the_append() {
    let flips = PluginRegistration::new("flips").edit(OnUserMessage, |_, message| {
        message.append(" aside");
        message.side_question = true;
        Ok(())
    });
    let rewrites = PluginRegistration::new("rewrites").edit(OnUserMessage, |_, message| {
        message.append(" and");
        message.text.push_str(" more");
        Ok(())
    });
    let outcome = run(vec![flips, rewrites], "hi").await;
    // SPEC P2.3: the flag cannot change; the whole edit, append included, is undone.
    assert_eq!(outcome.value, UserMessage::new("hi and more"));
    assert_eq!(outcome.failed, ["flips"]);
    assert_eq!(outcome.changed_by, ["rewrites"]);
    assert_eq!(outcome.before().as_deref(), Some(&UserMessage::new("hi")));
}
