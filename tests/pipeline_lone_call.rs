//! A lone call admitted in place (issue 23 item 4): a caller on its session's shard arbiter whose
//! session is free sends the call straight to the first plugin actor, and the last plugin actor
//! frees the session before answering. Per-session order still holds: a call admitted in place
//! never overtakes an earlier call of its session that is queued, on the coordinator's mailbox or
//! behind the session's running call, whichever thread sent it (SPEC P1.1; docs/runtime-semantics.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use futures::future::join_all;
use hookline::actors::plugin::{PluginRegistration, Reply};
use hookline::actors::{Pipeline, Submitted};
use hookline::messages::hook::{OnPrompt, OnUserMessage};
use hookline::messages::prompt::{Prompt, PromptMode};
use hookline::messages::session::SessionId;
use hookline::messages::user::UserMessage;

type Seen = Arc<Mutex<Vec<String>>>;

/// Records the text of each call it sees, then appends `suffix`.
fn recorder(name: &str, seen: &Seen, suffix: &'static str) -> PluginRegistration {
    let seen = seen.clone();
    PluginRegistration::new(name).edit(OnUserMessage, move |_, message| {
        seen.lock().unwrap().push(message.text.clone());
        message.append(suffix);
        Ok(())
    })
}

/// The texts `seen` holds for `session` ("<session>/<n>"), in the order the plugin saw them.
fn order_of(seen: &Seen, session: &str) -> Vec<String> {
    let prefix = format!("{session}/");
    seen.lock()
        .unwrap()
        .iter()
        .filter(|text| text.starts_with(&prefix))
        .cloned()
        .collect()
}

fn texts(session: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|n| format!("{session}/{n}")).collect()
}

#[actix_rt::test]
async fn calls_on_the_shards_thread_keep_each_sessions_order_whichever_way_they_are_admitted() {
    let seen = Seen::default();
    // One shard, on this test's arbiter: every caller here is on the shard's thread.
    let pipeline = Pipeline::builder()
        .shards(1)
        .plugin(recorder("a", &seen, " +a"))
        .plugin(recorder("b", &seen, " +b"))
        .start()
        .unwrap();
    let sessions: Vec<String> = (0..20).map(|n| format!("s{n}")).collect();
    // Rounds that mix lone calls (admitted in place), bursts (several calls of one session
    // issued before any is answered: the later ones wait behind the first) and many sessions at
    // once (their calls join the coordinator's batches).
    let mut issued = vec![0usize; sessions.len()];
    for round in 0..30 {
        let mut pending: Vec<(usize, String, Submitted<UserMessage>)> = Vec::new();
        for (index, session) in sessions.iter().enumerate() {
            let burst = (round + index) % 4;
            for _ in 0..burst {
                let text = format!("{session}/{}", issued[index]);
                issued[index] += 1;
                let call = pipeline.submit::<OnUserMessage>(
                    &SessionId::new(session.as_str()),
                    UserMessage::new(text.as_str()),
                );
                pending.push((index, text, call));
            }
            if round % 3 == 0 {
                // A lone call, awaited at once.
                for (_, text, call) in pending.drain(..) {
                    assert_eq!(call.await.unwrap().value.text, format!("{text} +a +b"));
                }
            }
        }
        for (_, text, call) in pending {
            assert_eq!(call.await.unwrap().value.text, format!("{text} +a +b"));
        }
    }
    for (index, session) in sessions.iter().enumerate() {
        let expected = texts(session, 0..issued[index]);
        let after_a: Vec<String> = expected.iter().map(|t| format!("{t} +a")).collect();
        let seen_here = order_of(&seen, session);
        let (at_a, at_b): (Vec<_>, Vec<_>) =
            seen_here.into_iter().partition(|t| !t.ends_with(" +a"));
        assert_eq!(at_a, expected, "plugin a saw {session}'s calls in order");
        assert_eq!(at_b, after_a, "plugin b saw {session}'s calls in order");
    }
}

#[actix_rt::test]
async fn a_call_made_on_the_shards_thread_does_not_overtake_one_sent_from_another_thread() {
    let seen = Seen::default();
    // Two shards: shard 0 runs on this test's arbiter, shard 1 on an arbiter of its own.
    let pipeline = Pipeline::builder()
        .shards(2)
        .plugin(recorder("a", &seen, ""))
        .start()
        .unwrap();
    // A session on the other shard, so this thread is not its shard's.
    let session = (0..)
        .map(|n| SessionId::new(format!("x{n}")))
        .find(|id| pipeline.shard_of(id) == 1)
        .unwrap();
    let name = session.as_str().to_owned();
    // Warm the route up so calls on the shard's thread can be admitted in place.
    pipeline
        .call::<OnUserMessage>(&session, UserMessage::new(format!("{name}/warm")))
        .await
        .unwrap();
    seen.lock().unwrap().clear();
    let arbiter = pipeline.arbiter_for(&session);
    let rounds = 200;
    for round in 0..rounds {
        // First: a call from this thread, sent to the coordinator (an `Admit` message)...
        let first = pipeline
            .submit::<OnUserMessage>(&session, UserMessage::new(format!("{name}/{}", 2 * round)));
        // ...then, caused by it, a call on the shard's own thread, which must come second.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (p, s, text) = (
            pipeline.clone(),
            session.clone(),
            format!("{name}/{}", 2 * round + 1),
        );
        assert!(arbiter.spawn(async move {
            let second = p.submit::<OnUserMessage>(&s, UserMessage::new(text));
            let _ = tx.send(second.await);
        }));
        first.await.unwrap();
        rx.await.unwrap().unwrap();
    }
    assert_eq!(order_of(&seen, &name), texts(&name, 0..2 * rounds));
}

#[actix_rt::test]
async fn a_lone_call_keeps_its_notes_once_per_session_and_the_pipeline_drains() {
    let failing = PluginRegistration::new("f").edit(OnUserMessage, |_, _| {
        Err(hookline::actors::plugin::HookError::msg("down"))
    });
    let pipeline = Pipeline::builder()
        .shards(1)
        .plugin(failing)
        .max_pending(4)
        .start()
        .unwrap();
    let session = SessionId::new("n");
    let mut notes = Vec::new();
    for n in 0..10 {
        let outcome = pipeline
            .call::<OnUserMessage>(&session, UserMessage::new(format!("m{n}")))
            .await
            .unwrap();
        assert_eq!(outcome.failed, ["f"]);
        notes.push(outcome.notes);
    }
    // SPEC P1.4: the note once per session, however the calls were admitted.
    assert_eq!(notes[0].len(), 1, "{:?}", notes[0]);
    assert!(notes[1..].iter().all(Vec::is_empty));
    // Every admitted call was counted out again: a bound of 4 still admits 4 at once.
    let burst: Vec<_> = (0..4)
        .map(|n| {
            pipeline
                .submit::<OnUserMessage>(&SessionId::new(format!("b{n}")), UserMessage::new("m"))
        })
        .collect();
    for outcome in join_all(burst).await {
        assert!(outcome.is_ok());
    }
    assert_eq!(pipeline.admitted().await.unwrap().calls, 0);
}

#[actix_rt::test]
async fn a_sessions_calls_of_two_hooks_keep_their_order_while_one_hooks_batches_are_busy() {
    // Every call a plugin sees, as "<hook>:<text>", in the order it saw them.
    let seen = Seen::default();
    let (users, prompts) = (seen.clone(), seen.clone());
    let plugin = PluginRegistration::new("log")
        .edit(OnUserMessage, move |_, message| {
            users.lock().unwrap().push(format!("user:{}", message.text));
            Ok(())
        })
        .on(OnPrompt, move |_, prompt| {
            prompts
                .lock()
                .unwrap()
                .push(format!("prompt:{}", prompt.text));
            Ok(Reply::Keep)
        });
    // One shard, on this test's arbiter: the calls below are made on the shard's thread.
    let pipeline = Pipeline::builder()
        .shards(1)
        .plugin(plugin)
        .start()
        .unwrap();
    let session = SessionId::new("s");
    for round in 0..50 {
        // Another session's call keeps `on_user_message`'s batches busy, so the session's
        // `on_user_message` calls go to the coordinator; its `on_prompt` calls, whose hook has no
        // batch open, must not go in place ahead of them.
        let busy = pipeline.submit::<OnUserMessage>(
            &SessionId::new("other"),
            UserMessage::new(format!("busy/{round}")),
        );
        let first =
            pipeline.submit::<OnUserMessage>(&session, UserMessage::new(format!("s/{round}/1")));
        let second = pipeline.submit::<OnPrompt>(
            &session,
            Prompt::new(PromptMode::Work, format!("s/{round}/2")),
        );
        let third =
            pipeline.submit::<OnUserMessage>(&session, UserMessage::new(format!("s/{round}/3")));
        let fourth = pipeline.submit::<OnPrompt>(
            &session,
            Prompt::new(PromptMode::Work, format!("s/{round}/4")),
        );
        busy.await.unwrap();
        first.await.unwrap();
        second.await.unwrap();
        third.await.unwrap();
        fourth.await.unwrap();
    }
    let order: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|call| call.split_once(':').map(|(_, text)| text.to_owned()))
        .filter(|text| text.starts_with("s/"))
        .collect();
    let expected: Vec<String> = (0..50)
        .flat_map(|round| (1..=4).map(move |n| format!("s/{round}/{n}")))
        .collect();
    assert_eq!(order, expected);
    assert_eq!(pipeline.admitted().await.unwrap().calls, 0);
}
