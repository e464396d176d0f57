//! Opened sessions (issue 23): `Pipeline::open_session` gives a session a slot in its shard's
//! dense table and a `SessionKey` whose calls hash nothing. A key's calls are the session's calls:
//! the same order, the same notes seen once (SPEC P1.4); a stale key or another pipeline's key
//! is found by its id and never reaches another session's state.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hookline::actors::plugin::{HookError, PluginRegistration};
use hookline::actors::{Pipeline, SessionRef};
use hookline::messages::hook::OnUserMessage;
use hookline::messages::session::SessionId;
use hookline::messages::user::UserMessage;

fn failing() -> PluginRegistration {
    PluginRegistration::new("fails").on(OnUserMessage, |_, _| Err(HookError::msg("no")))
}

async fn notes(pipeline: &Pipeline, session: impl SessionRef) -> usize {
    pipeline
        .call::<OnUserMessage>(session, UserMessage::new("hi"))
        .await
        .unwrap()
        .notes
        .len()
}

#[actix_rt::test]
async fn a_key_and_its_id_are_one_session_whose_notes_are_seen_once() {
    let pipeline = Pipeline::builder().plugin(failing()).start().unwrap();
    let id = SessionId::new("a");
    let key = pipeline.open_session(&id).await.unwrap();
    assert_eq!(key.id(), &id);
    assert_eq!(notes(&pipeline, &key).await, 1);
    assert_eq!(
        notes(&pipeline, &id).await,
        0,
        "seen through the key already"
    );
    assert_eq!(notes(&pipeline, &key).await, 0);
}

#[actix_rt::test]
async fn a_stale_key_never_reaches_the_session_that_took_its_slot() {
    let pipeline = Pipeline::builder()
        .plugin(failing())
        .shards(1)
        .start()
        .unwrap();
    let stale = pipeline.open_session(&SessionId::new("a")).await.unwrap();
    pipeline.forget_session(&SessionId::new("a")).await.unwrap();
    // `b` takes the freed slot.
    let b = pipeline.open_session(&SessionId::new("b")).await.unwrap();
    assert_eq!(notes(&pipeline, &stale).await, 1);
    assert_eq!(notes(&pipeline, &b).await, 1, "b has not seen a's note");
    assert_eq!(notes(&pipeline, &stale).await, 0);
}

#[actix_rt::test]
async fn another_pipeline_s_key_is_found_by_its_id_and_calls_many_take_keys() {
    let first = Pipeline::builder().plugin(failing()).start().unwrap();
    let second = Pipeline::builder().plugin(failing()).start().unwrap();
    let id = SessionId::new("a");
    let foreign = first.open_session(&id).await.unwrap();
    assert_eq!(notes(&second, &foreign).await, 1);
    assert_eq!(notes(&second, &id).await, 0);
    let keys = [
        first.open_session(&SessionId::new("x")).await.unwrap(),
        first.open_session(&SessionId::new("y")).await.unwrap(),
    ];
    let answers = first
        .call_many::<OnUserMessage>(keys.iter().map(|k| (k, UserMessage::new("hi"))))
        .await;
    let counts: Vec<usize> = answers
        .into_iter()
        .map(|a| a.unwrap().notes.len())
        .collect();
    assert_eq!(counts, [1, 1]);
}
