//! The session lifecycle actor (SPEC P3.10 to P3.13) when the pipeline refuses a transition's
//! call: the active session it keeps is what the hooks that ran made it, so a retry runs the
//! calls that had not run instead of finding the next session already active and running none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;

use std::sync::{Arc, Mutex};

use actix::Actor;
use hookline::actors::session::{
    ActiveSession, ChangeRefused, ChangeSession, Ran, SessionLifecycle,
};
use hookline::actors::{Pipeline, PipelineError};
use hookline::messages::hook::OnUserMessage;
use hookline::messages::session::{ApprovalMode, SessionId, SessionInfo};
use hookline::messages::transition::{Cause, SessionEvent, Transition};
use hookline::messages::user::UserMessage;
use host_support::{blocker, lifecycle_logger, Seen};
use tokio::sync::Notify;

fn info(id: &str) -> SessionInfo {
    SessionInfo {
        workspace_root: "/ws".into(),
        session_id: id.into(),
        approval_mode: ApprovalMode::default(),
    }
}

fn activate(id: &str) -> ChangeSession {
    ChangeSession(SessionEvent::Activate {
        cause: Cause::Open,
        next: info(id),
    })
}

/// A pipeline with one admission place and a lifecycle over it, with the plugins of
/// `host_support`: one logs `start <id>` and `end <id>`, the other holds the place in
/// `on_user_message` until `release` is notified.
struct Rig {
    log: Seen,
    release: Arc<Notify>,
    /// While set, each end, once through, starts a call that takes the only place (a task
    /// spawned in the hook runs before the lifecycle hears the end's answer).
    hold: Arc<Mutex<Option<Pipeline>>>,
    pipeline: Pipeline,
    lifecycle: actix::Addr<SessionLifecycle>,
}

fn rig() -> Rig {
    let log = Seen::default();
    let release = Arc::new(Notify::new());
    let hold: Arc<Mutex<Option<Pipeline>>> = Arc::default();
    let (logger, blocker) = (lifecycle_logger(&log, &hold), blocker(&release));
    let pipeline = Pipeline::builder()
        .plugin(logger)
        .plugin(blocker)
        .shards(1)
        .max_pending(1)
        .start()
        .unwrap();
    let lifecycle = SessionLifecycle::new(pipeline.clone()).start();
    Rig {
        log,
        release,
        hold,
        pipeline,
        lifecycle,
    }
}

#[actix_rt::test]
async fn a_change_the_pipeline_refused_runs_its_hooks_when_retried() {
    let Rig {
        log,
        release,
        pipeline,
        lifecycle,
        ..
    } = rig();
    lifecycle.send(activate("a")).await.unwrap().unwrap();

    let busy = pipeline.submit::<OnUserMessage>(SessionId::new("other"), UserMessage::new("x"));
    // `a`'s end and `b`'s start: the end is refused first, so nothing runs.
    let refused = lifecycle.send(activate("b")).await.unwrap();
    assert_eq!(
        refused,
        Err(ChangeRefused {
            ran: Vec::new(),
            error: PipelineError::Overloaded
        })
    );
    assert_eq!(
        lifecycle.send(ActiveSession).await.unwrap(),
        Some(info("a")),
        "the session whose end was refused is still the active one"
    );
    release.notify_one();
    busy.await.unwrap();

    let ran = lifecycle.send(activate("b")).await.unwrap().unwrap();
    assert_eq!(
        ran.len(),
        2,
        "the retry runs the end and the start: {ran:?}"
    );
    assert_eq!(
        *log.lock().unwrap(),
        ["start a", "end a", "start b"],
        "each hook once, in order"
    );
    assert_eq!(
        lifecycle.send(ActiveSession).await.unwrap(),
        Some(info("b"))
    );
}

/// The end of the session left runs, then the pipeline refuses the next one's start: the
/// refusal carries the end that ran (so the caller can archive it), no session is active, and
/// the same change sent again runs the start only.
#[actix_rt::test]
async fn a_start_refused_after_the_end_ran_reports_the_end() {
    let Rig {
        log,
        release,
        hold,
        pipeline,
        lifecycle,
    } = rig();
    lifecycle.send(activate("a")).await.unwrap().unwrap();
    *hold.lock().unwrap() = Some(pipeline.clone());

    let refused = lifecycle.send(activate("b")).await.unwrap();
    assert_eq!(
        refused,
        Err(ChangeRefused {
            ran: vec![Ran {
                transition: Transition::Ended(info("a")),
                notes: Vec::new()
            }],
            error: PipelineError::Overloaded
        })
    );
    assert_eq!(lifecycle.send(ActiveSession).await.unwrap(), None);

    hold.lock().unwrap().take();
    release.notify_one();
    while pipeline.admitted().await.unwrap().calls > 0 {
        actix_rt::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let ran = lifecycle.send(activate("b")).await.unwrap().unwrap();
    assert_eq!(
        ran,
        [Ran {
            transition: Transition::Started(info("b")),
            notes: Vec::new()
        }]
    );
    assert_eq!(*log.lock().unwrap(), ["start a", "end a", "start b"]);
}
