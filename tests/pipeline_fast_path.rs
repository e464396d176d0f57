//! The fast plugin API (issue 13) and sharding: hooks registered one by one run exactly as
//! registered (issue 15's trap: a hook implemented but not listed silently never ran), synchronous
//! hooks keep every rule, note and panic guard, async hooks stay explicit, and sessions spread
//! over shards keep their order.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hookline::actors::plugin::{HookError, PluginRegistration, Reply};
use hookline::actors::Pipeline;
use hookline::messages::hook::{HookKind, HookSet, OnPrompt, OnToolCall, OnUserMessage};
use hookline::messages::note::Note;
use hookline::messages::prompt::{Prompt, PromptMode};
use hookline::messages::session::SessionId;
use hookline::messages::tool::{ToolCall, ToolProvider};
use hookline::messages::user::UserMessage;

fn tool_call() -> ToolCall {
    ToolCall {
        call_id: "c1".into(),
        name: "read_file".into(),
        arguments: serde_json::json!({"path": "a.txt"}),
        provider: ToolProvider::BuiltIn,
    }
}

/// With the old API a plugin implemented `on_tool_call` but listed only `on_prompt` in `hooks()`,
/// and `on_tool_call` never ran. Now what is registered is the set: both run.
#[actix_rt::test]
async fn every_registered_hook_runs_and_the_set_is_exactly_what_was_registered() {
    let plugin = PluginRegistration::new("both")
        .on(OnPrompt, |_, p: &Prompt| {
            Ok(Reply::Replace(p.clone().append("from both")))
        })
        .on(OnToolCall, |_, c: &ToolCall| {
            Ok(Reply::Replace(ToolCall {
                name: "read_file_checked".into(),
                ..c.clone()
            }))
        });
    assert_eq!(
        plugin.implements(),
        HookSet::of(&[HookKind::OnPrompt, HookKind::OnToolCall])
    );
    let pipeline = Pipeline::builder().plugin(plugin).start().unwrap();
    assert_eq!(
        pipeline.plugins()[0].implements,
        HookSet::of(&[HookKind::OnPrompt, HookKind::OnToolCall])
    );
    let session = SessionId::new("s");
    let call = pipeline
        .call::<OnToolCall>(&session, tool_call())
        .await
        .unwrap();
    assert_eq!(call.value.name, "read_file_checked");
    assert_eq!(call.changed_by, [Arc::<str>::from("both")]);
    let prompt = pipeline
        .call::<OnPrompt>(&session, Prompt::new(PromptMode::Work, "Be helpful."))
        .await
        .unwrap();
    assert_eq!(prompt.value.appended, ["from both"]);
}

#[actix_rt::test]
async fn a_hook_that_is_not_registered_is_never_sent() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let plugin = PluginRegistration::new("prompt-only").on(OnPrompt, move |_, _: &Prompt| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(Reply::Keep)
    });
    let pipeline = Pipeline::builder().plugin(plugin).start().unwrap();
    let outcome = pipeline
        .call::<OnUserMessage>(&SessionId::new("s"), UserMessage::new("hi"))
        .await
        .unwrap();
    assert_eq!(outcome.value.text, "hi");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[actix_rt::test]
async fn sync_hooks_keep_the_rules_the_notes_and_the_panic_guard() {
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("blank").on(OnUserMessage, |_, _: &UserMessage| {
                Ok(Reply::Replace(UserMessage::new("  ")))
            }),
        )
        .plugin(
            PluginRegistration::new("boom").on(OnUserMessage, |_, _: &UserMessage| panic!("boom")),
        )
        .plugin(
            PluginRegistration::new("down").on(OnUserMessage, |_, _: &UserMessage| {
                Err(HookError::msg("down."))
            }),
        )
        .plugin(
            PluginRegistration::new("tail").on(OnUserMessage, |_, m: &UserMessage| {
                Ok(Reply::Replace(UserMessage::new(format!("{} tail", m.text))))
            }),
        )
        .start()
        .unwrap();
    let session = SessionId::new("s");
    let first = pipeline
        .call::<OnUserMessage>(&session, UserMessage::new("hello"))
        .await
        .unwrap();
    assert_eq!(first.value.text, "hello tail");
    let rendered: Vec<String> = first.notes.iter().map(Note::to_string).collect();
    assert_eq!(rendered.len(), 3, "{rendered:?}");
    assert!(rendered[0].contains("'blank'"), "{rendered:?}");
    assert!(rendered[1].ends_with("it panicked."), "{rendered:?}");
    assert!(rendered[2].ends_with("down."), "{rendered:?}");
    let failed: Vec<&str> = first.failed.iter().map(|n| &**n).collect();
    assert_eq!(failed, ["blank", "boom", "down"]);
    // SPEC P1.4: once per session, but `failed` still names every skip.
    let second = pipeline
        .call::<OnUserMessage>(&session, UserMessage::new("again"))
        .await
        .unwrap();
    assert!(second.notes.is_empty());
    assert_eq!(second.failed.len(), 3);
    assert_eq!(second.value.text, "again tail");
}

#[actix_rt::test]
async fn async_hooks_are_explicit_and_sync_and_async_mix_in_load_order() {
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("a").on(OnUserMessage, |_, m: &UserMessage| {
                Ok(Reply::Replace(UserMessage::new(format!("{}-a", m.text))))
            }),
        )
        .plugin(PluginRegistration::new("b").on_async(
            OnUserMessage,
            |_, m: UserMessage| async move {
                tokio::task::yield_now().await;
                Ok(Reply::Replace(UserMessage::new(format!("{}-b", m.text))))
            },
        ))
        .plugin(
            PluginRegistration::new("c").on(OnUserMessage, |_, m: &UserMessage| {
                Ok(Reply::Replace(UserMessage::new(format!("{}-c", m.text))))
            }),
        )
        .start()
        .unwrap();
    let outcome = pipeline
        .call::<OnUserMessage>(&SessionId::new("s"), UserMessage::new("x"))
        .await
        .unwrap();
    assert_eq!(outcome.value.text, "x-a-b-c");
    let changed: Vec<&str> = outcome.changed_by.iter().map(|n| &**n).collect();
    assert_eq!(changed, ["a", "b", "c"]);
}

#[actix_rt::test]
async fn sessions_spread_over_both_shards_and_every_call_is_answered() {
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("tag").on(OnUserMessage, |cx, m: &UserMessage| {
                Ok(Reply::Replace(UserMessage::new(format!(
                    "{}@{}",
                    m.text, cx.session_id
                ))))
            }),
        )
        .shards(2)
        .start()
        .unwrap();
    assert_eq!(pipeline.shards(), 2);
    let sessions: Vec<SessionId> = (0..64).map(|i| SessionId::new(format!("s{i}"))).collect();
    let shards: std::collections::HashSet<usize> =
        sessions.iter().map(|s| pipeline.shard_of(s)).collect();
    assert_eq!(shards.len(), 2, "64 sessions should land on both shards");
    for session in &sessions {
        assert_eq!(
            pipeline.shard_of(session),
            pipeline.shard_of(&session.clone())
        );
        assert!(pipeline.shard_arbiter(pipeline.shard_of(session)).is_some());
    }
    // Many calls per session issued at once, over both shards: each is answered with its own value.
    let pipeline = &pipeline;
    let calls = sessions.iter().flat_map(|session| {
        (0..8).map(move |n| {
            let pipeline = pipeline.clone();
            let session = session.clone();
            async move {
                let outcome = pipeline
                    .call::<OnUserMessage>(&session, UserMessage::new(format!("{n}")))
                    .await
                    .unwrap();
                (session, n, outcome.value.text)
            }
        })
    });
    for (session, n, text) in futures::future::join_all(calls).await {
        assert_eq!(text, format!("{n}@{session}"));
    }
}

#[actix_rt::test]
async fn a_session_s_turn_on_its_shard_arbiter_calls_without_leaving_it() {
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("thread").on(OnUserMessage, |_, _: &UserMessage| {
                Ok(Reply::Replace(UserMessage::new(format!(
                    "{:?}",
                    std::thread::current().id()
                ))))
            }),
        )
        .shards(2)
        .start()
        .unwrap();
    for index in 0..2 {
        let session = (0..)
            .map(|i| SessionId::new(format!("t{i}")))
            .find(|s| pipeline.shard_of(s) == index)
            .unwrap();
        let (done, answer) = tokio::sync::oneshot::channel();
        let runner = pipeline.clone();
        let call = session.clone();
        pipeline.arbiter_for(&session).spawn(async move {
            let outcome = runner
                .call::<OnUserMessage>(&call, UserMessage::new("?"))
                .await;
            let here = format!("{:?}", std::thread::current().id());
            let _ = done.send((outcome.map(|o| o.value.text), here));
        });
        let (plugin_thread, turn_thread) = answer.await.unwrap();
        assert_eq!(plugin_thread.unwrap(), turn_thread);
    }
}

#[actix_rt::test]
async fn a_paused_clock_keeps_every_session_on_the_current_arbiter() {
    tokio::time::pause();
    let pipeline = Pipeline::builder().start().unwrap();
    assert_eq!(pipeline.shards(), 1);
}

/// Each shard knows its thread (issue 47: a server makes a session on the shard that served its
/// request): shard 0 is the thread that started the pipeline, every other shard its arbiter's,
/// and a thread of no shard is none.
#[actix_rt::test]
async fn each_shard_knows_its_thread() {
    let pipeline = Pipeline::builder().shards(3).start().unwrap();
    assert_eq!(pipeline.shard_here(), Some(0));
    for index in 1..3 {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let asked = pipeline.clone();
        assert!(pipeline.shard_arbiter(index).unwrap().spawn_fn(move || {
            let _ = tx.send(asked.shard_here());
        }));
        assert_eq!(rx.await.unwrap(), Some(index));
    }
    let elsewhere = pipeline.clone();
    let outside = std::thread::spawn(move || elsewhere.shard_here())
        .join()
        .unwrap();
    assert_eq!(outside, None);
}

/// A session placed on the shard whose thread made it goes there by its id, whatever its hash,
/// until the pipeline forgets it (issue 47: `hookline serve` keeps ids `s1`, `s2`, ... and runs
/// each session where its request was served).
#[actix_rt::test]
async fn a_session_placed_here_runs_here_until_forgotten() {
    let pipeline = Pipeline::builder().shards(2).start().unwrap();
    // Four ids cover both shards by hash: each is placed on shard 1 all the same.
    let ids: Vec<SessionId> = (1..=4).map(|n| SessionId::new(format!("s{n}"))).collect();
    let hashed: Vec<usize> = ids.iter().map(|id| pipeline.shard_of(id)).collect();
    assert!(hashed.contains(&0) && hashed.contains(&1), "{hashed:?}");
    let (tx, rx) = tokio::sync::oneshot::channel();
    let placer = pipeline.clone();
    let placing = ids.clone();
    assert!(pipeline.shard_arbiter(1).unwrap().spawn_fn(move || {
        let placed: Vec<Option<usize>> = placing.iter().map(|id| placer.place_here(id)).collect();
        let _ = tx.send(placed);
    }));
    assert_eq!(rx.await.unwrap(), vec![Some(1); 4]);
    for id in &ids {
        assert_eq!(pipeline.shard_of(id), 1, "{id}");
        // Shard 0's coordinator is `coordinator()`: the session's calls go to the other one.
        assert!(
            pipeline.coordinator_for(id) != pipeline.coordinator(),
            "{id}"
        );
    }
    // Off every shard's thread nothing is placed; forgotten, an id goes by its hash again.
    let elsewhere = pipeline.clone();
    let fresh = SessionId::new("s9");
    let off = std::thread::spawn(move || elsewhere.place_here(&fresh))
        .join()
        .unwrap();
    assert_eq!(off, None);
    for (id, hashed) in ids.iter().zip(&hashed) {
        pipeline.forget_session(id).await.unwrap();
        assert_eq!(pipeline.shard_of(id), *hashed, "{id}");
    }
}
