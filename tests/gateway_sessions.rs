//! Many sessions on one gateway (issue 11): concurrent sessions keep their own order and records,
//! remote approvals (answered and timed out), `/stop` reaching the model call in flight, the
//! session bound, sessions on several arbiters, and the drain at shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline::host::gateway::{Activity, Gateway, GatewayLimits, OpenSession, RequestError};
use hookline::host::provider::{EchoProvider, Provider, ProviderError};
use hookline::host::store::Log;
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::{Host, HostEvent};
use hookline::messages::model::{ModelRequest, ModelResponse};
use hookline::messages::note::Note;
use hookline::messages::record::{ArchiveEntry, Decision, Record};
use hookline::messages::session::SessionId;
use hookline::messages::user::StopReason;

/// A deadline for anything the tests wait for: far above what any step needs.
const DEADLINE: Duration = Duration::from_secs(20);

fn gateway(dir: &tempfile::TempDir, provider: Arc<dyn Provider>, limits: GatewayLimits) -> Gateway {
    Host::builder()
        .plugins(hookline::host::demo::example_plugins())
        .tools(ToolRegistry::with_builtins())
        .provider(provider)
        .workspace(dir.path())
        .start_gateway(limits)
        .unwrap()
}

fn user_texts(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn archive(gateway: &Gateway, id: &SessionId) -> Vec<ArchiveEntry> {
    let dir = gateway.store().session_dir(id).unwrap();
    Log::<ArchiveEntry>::open(&dir.join("archive.log"))
        .unwrap()
        .1
        .records
}

/// A model that never answers: the turn stays in its model call until it is stopped.
struct Hanging;

#[async_trait]
impl Provider for Hanging {
    fn takes_images(&self) -> bool {
        false
    }
    async fn complete(&self, _: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        futures::future::pending().await
    }
}

async fn until_in_turn(handle: &hookline::host::gateway::SessionHandle) {
    let mut status = handle.watch_status();
    tokio::time::timeout(DEADLINE, status.wait_for(|s| s.activity == Activity::Turn))
        .await
        .expect("the turn never started")
        .unwrap();
}

#[actix_rt::test]
async fn a_hundred_sessions_run_turns_at_once_each_in_its_own_order() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(
        &dir,
        Arc::new(EchoProvider::new()),
        GatewayLimits::default(),
    );
    let opens = (0..100).map(|_| gateway.open(OpenSession::default()));
    let handles: Vec<_> = futures::future::try_join_all(opens).await.unwrap();
    let runs = handles.iter().enumerate().map(|(i, handle)| async move {
        for turn in 0..3 {
            let report = handle
                .turn(UserInput::work(format!("session {i} turn {turn}")))
                .await
                .unwrap();
            assert_eq!(report.stop_reason, StopReason::Completed);
            // The status shows the turn's effect, and the session idle, when its answer arrives.
            let status = handle.status();
            assert_eq!((status.turns, status.activity), (turn + 1, Activity::Idle));
        }
    });
    futures::future::join_all(runs).await;
    let mut keys = std::collections::HashSet::new();
    for (i, handle) in handles.iter().enumerate() {
        assert!(
            keys.insert(handle.key().clone()),
            "two sessions share an id"
        );
        let page = handle.records(0, 1000).await.unwrap();
        let expected: Vec<String> = (0..3).map(|t| format!("session {i} turn {t}")).collect();
        assert_eq!(user_texts(&page.records), expected);
        assert_eq!(handle.status().turns, 3);
        assert_eq!(handle.status().activity, Activity::Idle);
    }
    assert_eq!(gateway.open_sessions(), 100);
    gateway.shutdown("test", None).await.unwrap();
}

#[actix_rt::test]
async fn an_operator_approval_round_trip_lets_the_call_run() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(
        &dir,
        Arc::new(EchoProvider::new()),
        GatewayLimits::default(),
    );
    let handle = gateway.open(OpenSession::default()).await.unwrap();
    let mut live = handle.subscribe();
    let turn = {
        let handle = handle.clone();
        actix_rt::spawn(async move {
            handle
                .turn(UserInput::work(
                    r#"call write_file {"path":"out.txt","content":"approved"}"#,
                ))
                .await
        })
    };
    let call_id = tokio::time::timeout(DEADLINE, async {
        loop {
            if let HostEvent::ApprovalRequested { call_id, tool, .. } = &*live.recv().await.unwrap()
            {
                assert_eq!(tool, "write_file");
                return call_id.clone();
            }
        }
    })
    .await
    .expect("no approval was asked for");
    assert_eq!(handle.status().activity, Activity::Approval);
    assert_eq!(handle.pending_approvals(), vec![call_id.clone()]);
    handle.answer_approval(&call_id, Decision::Allow).unwrap();
    let report = turn.await.unwrap().unwrap();
    assert_eq!(report.stop_reason, StopReason::Completed);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "approved"
    );
    // A second answer for the same call finds nothing waiting.
    assert!(handle.answer_approval(&call_id, Decision::Deny).is_err());
    gateway.shutdown("test", None).await.unwrap();
}

#[actix_rt::test]
async fn an_unanswered_approval_is_denied_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let limits = GatewayLimits {
        approval_timeout: Duration::from_millis(50),
        ..GatewayLimits::default()
    };
    let gateway = gateway(&dir, Arc::new(EchoProvider::new()), limits);
    let handle = gateway.open(OpenSession::default()).await.unwrap();
    let report = handle
        .turn(UserInput::work(
            r#"call write_file {"path":"out.txt","content":"nobody said yes"}"#,
        ))
        .await
        .unwrap();
    assert!(!dir.path().join("out.txt").exists());
    let notes: Vec<String> = report
        .events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Note {
                note: Note::ApprovalTimedOut { .. },
                text,
            } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", report.events);
    assert!(
        notes[0].ends_with("(write_file) was denied: nobody answered its approval within 50 ms."),
        "{}",
        notes[0]
    );
    let archived = archive(&gateway, handle.key());
    assert!(archived.iter().any(|e| matches!(
        e,
        ArchiveEntry::Note {
            note: Note::ApprovalTimedOut { .. },
            ..
        }
    )));
    gateway.shutdown("test", None).await.unwrap();
}

#[actix_rt::test]
async fn stop_reaches_the_model_call_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(&dir, Arc::new(Hanging), GatewayLimits::default());
    let handle = gateway.open(OpenSession::default()).await.unwrap();
    let turn = {
        let handle = handle.clone();
        actix_rt::spawn(async move { handle.turn(UserInput::work("wait forever")).await })
    };
    until_in_turn(&handle).await;
    let stop = {
        let handle = handle.clone();
        actix_rt::spawn(async move {
            handle
                .command(hookline::host::SessionCommand::Stop, None)
                .await
        })
    };
    let report = tokio::time::timeout(DEADLINE, turn)
        .await
        .expect("the turn did not stop")
        .unwrap()
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::Cancelled);
    stop.await.unwrap().unwrap();
    gateway.shutdown("test", None).await.unwrap();
}

#[actix_rt::test]
async fn one_session_past_the_bound_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let limits = GatewayLimits {
        max_sessions: 2,
        ..GatewayLimits::default()
    };
    let gateway = gateway(&dir, Arc::new(EchoProvider::new()), limits);
    let first = gateway.open(OpenSession::default()).await.unwrap();
    gateway.open(OpenSession::default()).await.unwrap();
    let third = gateway.open(OpenSession::default()).await;
    assert!(matches!(third, Err(RequestError::Full(2))), "{third:?}");
    // Closing one makes room again; its end hooks ran and the gateway forgot it.
    let events = gateway.close(first.key()).await.unwrap();
    assert!(events
        .iter()
        .any(|e| matches!(e, HostEvent::SessionEnded(_))));
    assert!(gateway.session(first.key()).is_none());
    gateway.open(OpenSession::default()).await.unwrap();
    gateway.shutdown("test", None).await.unwrap();
}

#[actix_rt::test]
async fn sessions_on_two_arbiters_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let arbiters = [actix::Arbiter::new(), actix::Arbiter::new()];
    let limits = GatewayLimits {
        arbiters: arbiters.iter().map(actix::Arbiter::handle).collect(),
        ..GatewayLimits::default()
    };
    let gateway = gateway(&dir, Arc::new(EchoProvider::new()), limits);
    let opens = (0..10).map(|_| gateway.open(OpenSession::default()));
    let handles: Vec<_> = futures::future::try_join_all(opens).await.unwrap();
    let runs = handles.iter().enumerate().map(|(i, handle)| async move {
        for turn in 0..2 {
            handle
                .turn(UserInput::work(format!("{i}/{turn}")))
                .await
                .unwrap();
        }
        let page = handle.records(0, 100).await.unwrap();
        assert_eq!(
            user_texts(&page.records),
            [format!("{i}/0"), format!("{i}/1")]
        );
    });
    futures::future::join_all(runs).await;
    gateway.shutdown("test", None).await.unwrap();
    for arbiter in arbiters {
        arbiter.stop();
    }
}

#[actix_rt::test]
async fn a_drain_stops_turns_past_their_budget_and_refuses_new_work() {
    let dir = tempfile::tempdir().unwrap();
    let limits = GatewayLimits {
        drain_budget: Duration::from_millis(100),
        ..GatewayLimits::default()
    };
    let gateway = gateway(&dir, Arc::new(Hanging), limits);
    let busy = gateway.open(OpenSession::default()).await.unwrap();
    let idle = gateway.open(OpenSession::default()).await.unwrap();
    let turn = {
        let busy = busy.clone();
        actix_rt::spawn(async move { busy.turn(UserInput::work("never answered")).await })
    };
    until_in_turn(&busy).await;
    let summary = tokio::time::timeout(DEADLINE, gateway.shutdown("drain", None))
        .await
        .expect("the drain did not end")
        .unwrap();
    assert_eq!(summary.stopped_turns, 1);
    let report = turn.await.unwrap().unwrap();
    assert_eq!(report.stop_reason, StopReason::Cancelled);
    assert!(matches!(
        gateway.open(OpenSession::default()).await,
        Err(RequestError::Draining)
    ));
    assert!(matches!(
        idle.turn(UserInput::work("too late")).await,
        Err(RequestError::Draining)
    ));
    let busy_archive = archive(&gateway, busy.key());
    assert!(busy_archive.iter().any(|e| matches!(
        e,
        ArchiveEntry::Note {
            note: Note::TurnStoppedByDrain { millis: 100 },
            ..
        }
    )));
    // Both sessions' ends are archived (their end hooks ran in the lifecycle's shutdown).
    for handle in [&busy, &idle] {
        let ended = archive(&gateway, handle.key())
            .into_iter()
            .filter(|e| matches!(e, ArchiveEntry::SessionEnded(_)))
            .count();
        assert_eq!(ended, 1, "session {}", handle.key());
    }
}

#[actix_rt::test]
async fn stop_ends_a_turn_that_waits_for_an_approval() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(
        &dir,
        Arc::new(EchoProvider::new()),
        GatewayLimits::default(),
    );
    let handle = gateway.open(OpenSession::default()).await.unwrap();
    let turn = {
        let handle = handle.clone();
        actix_rt::spawn(async move {
            handle
                .turn(UserInput::work(
                    r#"call write_file {"path":"out.txt","content":"never"}"#,
                ))
                .await
        })
    };
    let mut status = handle.watch_status();
    tokio::time::timeout(
        DEADLINE,
        status.wait_for(|s| s.activity == Activity::Approval),
    )
    .await
    .expect("no approval was asked for")
    .unwrap();
    handle.stop_turn();
    let report = tokio::time::timeout(DEADLINE, turn)
        .await
        .expect("the turn did not stop")
        .unwrap()
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::Cancelled);
    assert!(!dir.path().join("out.txt").exists());
    assert!(handle.pending_approvals().is_empty());
    gateway.shutdown("test", None).await.unwrap();
}
