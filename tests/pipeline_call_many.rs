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

/// More calls than one batch carries (`MAX_BATCH`, 64), a session twice among them and a
/// session whose earlier call is still running: the free sessions' calls go through the plugins
/// in the batches the caller's calls were split into; the others wait their session's turn.
#[actix_rt::test]
async fn a_large_batch_with_busy_and_repeated_sessions_keeps_each_sessions_order() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
    let gate = PluginRegistration::new("gate").on_async(OnUserMessage, move |_, message| {
        let released = released.clone();
        async move {
            // The lone call "busy first" waits until the test lets it go.
            if message.text == "busy first" {
                if let Some(released) = released.lock().await.take() {
                    let _ = released.await;
                }
            }
            Ok(Reply::Keep)
        }
    });
    let recorder = PluginRegistration::new("recorder").on(OnUserMessage, move |cx, message| {
        let session = cx.session_id.as_str();
        if session == "busy" || session == "twice" {
            log.lock().unwrap().push(message.text.clone());
        }
        Ok(Reply::Keep)
    });
    let pipeline = Pipeline::builder()
        .plugin(gate)
        .plugin(recorder)
        .shards(1)
        .start()
        .unwrap();
    let lone =
        pipeline.submit::<OnUserMessage>(SessionId::new("busy"), UserMessage::new("busy first"));
    let mut batch: Vec<(SessionId, UserMessage)> = (0..150)
        .map(|i| {
            (
                SessionId::new(format!("s{i}")),
                UserMessage::new(format!("m{i}")),
            )
        })
        .collect();
    batch.insert(10, (SessionId::new("twice"), UserMessage::new("twice 1")));
    batch.insert(
        40,
        (SessionId::new("busy"), UserMessage::new("busy second")),
    );
    batch.insert(70, (SessionId::new("twice"), UserMessage::new("twice 2")));
    let texts: Vec<String> = batch.iter().map(|(_, m)| m.text.clone()).collect();
    let many = pipeline.call_many::<OnUserMessage>(batch);
    let (answers, ()) = futures::join!(many, async {
        // Let the batch reach the coordinator, then free the lone call.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let _ = release.send(());
    });
    assert_eq!(answers.len(), texts.len());
    for (text, answer) in texts.iter().zip(&answers) {
        assert_eq!(&answer.as_ref().unwrap().value.text, text);
    }
    assert_eq!(lone.await.unwrap().value.text, "busy first");
    // Each session's calls in the order given, the busy one's second after its first.
    let seen = seen.lock().unwrap().clone();
    let of = |session: &str| -> Vec<&str> {
        seen.iter()
            .map(String::as_str)
            .filter(|t| t.starts_with(session))
            .collect()
    };
    assert_eq!(of("twice"), ["twice 1", "twice 2"]);
    assert_eq!(of("busy"), ["busy first", "busy second"]);
    assert_eq!(
        pipeline.admitted().await.unwrap().calls,
        0,
        "every count released"
    );
}

/// Issue 35: the calls of one batch that await finish in one task and go on to the next plugin
/// as they finish: the quick ones are held up neither by a slow one nor by one that will time
/// out, and each keeps its own outcome (the slow one its value, the stuck one its timeout
/// note).
#[actix_rt::test]
async fn calls_that_await_go_on_as_they_finish_and_one_timing_out_holds_none_up() {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
    let wait = PluginRegistration::new("wait")
        .on_async(OnUserMessage, move |cx, mut message| {
            let released = released.clone();
            async move {
                match cx.session_id.as_str() {
                    "slow" => {
                        if let Some(released) = released.lock().await.take() {
                            let _ = released.await;
                        }
                    }
                    "stuck" => std::future::pending::<()>().await,
                    // Not ready at the first poll: the call leaves the batch like the others.
                    _ => tokio::task::yield_now().await,
                }
                message.text.push_str(" waited");
                Ok(Reply::Replace(message))
            }
        })
        .with_timeout(
            hookline::messages::hook::HookKind::OnUserMessage,
            std::time::Duration::from_secs(3),
        );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let recorder = PluginRegistration::new("recorder").on(OnUserMessage, move |cx, _| {
        log.lock().unwrap().push(cx.session_id.as_str().to_owned());
        Ok(Reply::Keep)
    });
    let pipeline = Pipeline::builder()
        .plugin(wait)
        .plugin(recorder)
        .shards(1)
        .start()
        .unwrap();
    let names = ["a", "slow", "b", "stuck", "c"];
    let many = pipeline.call_many::<OnUserMessage>(calls(&names, "hi"));
    let (answers, ()) = futures::join!(many, async {
        // The quick calls reach the next plugin while the slow one still waits and the stuck
        // one has not timed out yet.
        let quick = async {
            while seen.lock().unwrap().len() < 3 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        };
        let passed = tokio::time::timeout(std::time::Duration::from_secs(10), quick).await;
        assert!(passed.is_ok(), "held up: {:?}", seen.lock().unwrap());
        assert_eq!(*seen.lock().unwrap(), ["a", "b", "c"]);
        let _ = release.send(());
    });
    for (name, answer) in names.iter().zip(&answers) {
        let outcome = answer.as_ref().unwrap();
        if *name == "stuck" {
            assert_eq!(outcome.value.text, "hi stuck");
            assert_eq!(outcome.failed, ["wait"]);
            assert!(
                outcome.notes[0].to_string().contains("timed out"),
                "{:?}",
                outcome.notes
            );
        } else {
            assert_eq!(outcome.value.text, format!("hi {name} waited"));
            assert!(outcome.failed.is_empty(), "{name}");
        }
    }
    assert_eq!(*seen.lock().unwrap(), ["a", "b", "c", "slow", "stuck"]);
}
