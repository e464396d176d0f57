//! `Pipeline::call_many` (issue 23): many sessions' calls admitted per shard in one message and
//! answered per batch, each call keeping the single call's rules, notes, order and bound.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use hookline::actors::plugin::{HookError, PluginRegistration, Reply};
use hookline::actors::{Pipeline, PipelineError};
use hookline::messages::hook::OnUserMessage;
use hookline::messages::session::SessionId;
use hookline::messages::user::UserMessage;

fn calls(sessions: &[&str], text: &str) -> Vec<(SessionId, UserMessage)> {
    sessions
        .iter()
        .map(|s| (SessionId::new(*s), UserMessage::new(format!("{text} {s}"))))
        .collect()
}

#[actix_rt::test]
async fn every_call_is_answered_in_the_order_given_with_its_own_value_and_notes() {
    let tag = PluginRegistration::new("tag").edit(OnUserMessage, |cx, message| {
        message
            .text
            .push_str(&format!(" @{}", cx.session_id.as_str()));
        Ok(())
    });
    let picky = PluginRegistration::new("picky").on(OnUserMessage, |cx, _| {
        if cx.session_id.as_str() == "b" {
            return Err(HookError::msg("not for b"));
        }
        Ok(Reply::Keep)
    });
    let pipeline = Pipeline::builder()
        .plugin(tag)
        .plugin(picky)
        .shards(2)
        .start()
        .unwrap();
    let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let answers = pipeline
        .call_many::<OnUserMessage>(calls(&names, "hi"))
        .await;
    assert_eq!(answers.len(), names.len());
    for (name, answer) in names.iter().zip(&answers) {
        let outcome = answer.as_ref().unwrap();
        assert_eq!(outcome.value.text, format!("hi {name} @{name}"));
        assert_eq!(outcome.changed_by, ["tag"]);
        let noted = *name == "b";
        assert_eq!(outcome.failed.contains("picky"), noted, "{name}");
        assert_eq!(outcome.notes.len(), usize::from(noted), "{name}");
    }
    // SPEC P1.4: the note is new to session b once only, batch or not.
    let again = pipeline
        .call_many::<OnUserMessage>(calls(&["b"], "hi"))
        .await;
    let again = again[0].as_ref().unwrap();
    assert!(again.notes.is_empty());
    assert_eq!(again.failed, ["picky"]);
}

#[actix_rt::test]
async fn calls_of_one_session_in_one_batch_run_one_after_the_other_in_order() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let recorder = PluginRegistration::new("recorder").on(OnUserMessage, move |_, message| {
        log.lock().unwrap().push(message.text.clone());
        Ok(Reply::Keep)
    });
    let pipeline = Pipeline::builder().plugin(recorder).start().unwrap();
    let batch = (0..5).map(|i| (SessionId::new("one"), UserMessage::new(format!("m{i}"))));
    let answers = pipeline.call_many::<OnUserMessage>(batch).await;
    assert!(answers.iter().all(Result::is_ok));
    assert_eq!(*seen.lock().unwrap(), ["m0", "m1", "m2", "m3", "m4"]);
}

#[actix_rt::test]
async fn calls_beyond_the_bound_are_refused_one_by_one_and_the_rest_run() {
    let pipeline = Pipeline::builder()
        .plugin(PluginRegistration::new("keep").on(OnUserMessage, |_, _| Ok(Reply::Keep)))
        .shards(1)
        .max_pending(3)
        .start()
        .unwrap();
    let answers = pipeline
        .call_many::<OnUserMessage>(calls(&["a", "b", "c", "d", "e"], "hi"))
        .await;
    let refused = answers
        .iter()
        .filter(|a| **a == Err(PipelineError::Overloaded))
        .count();
    assert_eq!(refused, 2);
    assert!(answers[..3].iter().all(Result::is_ok));
    assert_eq!(
        pipeline.admitted().await.unwrap().calls,
        0,
        "every count released"
    );
    assert!(pipeline
        .call_many::<OnUserMessage>(Vec::<(SessionId, UserMessage)>::new())
        .await
        .is_empty());
}
