//! SPEC G2: the caller's waits at shutdown and pre-restart are bounded; a timeout releases the
//! caller without cancelling the handler; shared state closes only once handlers really finish.
//! All timing runs on a paused clock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::{entries, log, plugin, plugin_with, run_paused, Act};
use hookline::actors::lifecycle::{
    GatewayConfig, GatewayError, Lifecycle, SharedState, ShutdownRequest,
};
use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration};
use hookline::actors::Pipeline;
use hookline::messages::event::GatewayStartupContext;
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::note::Note;
use hookline::messages::session::{ApprovalMode, SessionInfo};
use serde_json::json;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Counts closes.
#[derive(Default)]
struct Store {
    closes: AtomicUsize,
}

#[async_trait]
impl SharedState for Store {
    async fn close(&self) {
        self.closes.fetch_add(1, Ordering::SeqCst);
    }
}

fn request(restart_expected_ms: Option<u64>, active_sessions: Vec<SessionInfo>) -> ShutdownRequest {
    ShutdownRequest {
        reason: "operator".into(),
        restart_expected_ms,
        active_sessions,
    }
}

fn start(plugins: Vec<PluginRegistration>) -> (Lifecycle, Arc<Store>) {
    let pipeline = Pipeline::builder().plugins(plugins).start().unwrap();
    let store = Arc::new(Store::default());
    let gateway = Lifecycle::start(pipeline, store.clone(), GatewayConfig::default());
    (gateway, store)
}

fn texts(notes: &[Note]) -> Vec<String> {
    notes.iter().map(ToString::to_string).collect()
}

#[test]
fn a_handler_that_never_finishes_releases_the_caller_at_exactly_5_s_and_keeps_state_open() {
    run_paused(async {
        let (calls, finished) = (log(), log());
        let release = Arc::new(Notify::new());
        let hang = plugin_with(
            "hang",
            &["gateway:shutdown"],
            Act::Hang(release.clone()),
            &calls,
            &finished,
        );
        let (gateway, store) = start(vec![hang]);
        let started = Instant::now();
        let mut report = gateway.shutdown(request(None, Vec::new())).await.unwrap();
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert_eq!(
            texts(&report.notes),
            ["Stopped waiting for 'gateway:shutdown' handlers after 5 s; they keep running."]
        );
        // SPEC G2.2: not cancelled. SPEC G2.3: the store stays open, however long it takes.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert_eq!(entries(&calls), ["hang gateway:shutdown"]);
        assert!(entries(&finished).is_empty());
        assert!(!report.closed.is_closed());
        assert_eq!(store.closes.load(Ordering::SeqCst), 0);
        release.notify_one();
        assert!(report.closed.wait(Duration::from_secs(1)).await);
        assert_eq!(entries(&finished), ["hang gateway:shutdown done"]);
        assert_eq!(store.closes.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn pre_restart_adds_its_own_10_s_when_a_restart_is_expected() {
    run_paused(async {
        let (calls, finished) = (log(), log());
        let release = Arc::new(Notify::new());
        let hang = plugin_with(
            "hang",
            &["gateway"],
            Act::Hang(release.clone()),
            &calls,
            &finished,
        );
        let (gateway, store) = start(vec![hang]);
        let started = Instant::now();
        let report = gateway
            .shutdown(request(Some(3000), Vec::new()))
            .await
            .unwrap();
        assert_eq!(started.elapsed(), Duration::from_secs(15));
        assert_eq!(
            texts(&report.notes),
            [
                "Stopped waiting for 'gateway:shutdown' handlers after 5 s; they keep running.",
                "Stopped waiting for 'gateway:pre-restart' handlers after 10 s; they keep running.",
            ]
        );
        assert_eq!(
            entries(&calls),
            ["hang gateway:shutdown", "hang gateway:pre-restart"]
        );
        // Both handlers still run; the store closes only after both finish.
        release.notify_one();
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(store.closes.load(Ordering::SeqCst), 0);
        release.notify_one();
        assert!(report.closed.wait(Duration::from_secs(1)).await);
        assert_eq!(entries(&finished).len(), 2);
        assert_eq!(store.closes.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn no_pre_restart_without_an_expected_restart() {
    run_paused(async {
        let calls = log();
        let (gateway, _store) = start(vec![plugin("all", &["gateway"], Act::Ok, &calls)]);
        let report = gateway.shutdown(request(None, Vec::new())).await.unwrap();
        assert!(report.notes.is_empty());
        assert_eq!(entries(&calls), ["all gateway:shutdown"]);
    });
}

#[test]
fn a_handler_that_finishes_early_releases_the_caller_at_once() {
    run_paused(async {
        let calls = log();
        let quick = plugin(
            "quick",
            &["gateway"],
            Act::Sleep(Duration::from_millis(120)),
            &calls,
        );
        let (gateway, store) = start(vec![quick]);
        let started = Instant::now();
        let report = gateway
            .shutdown(request(Some(1), Vec::new()))
            .await
            .unwrap();
        // 120 ms for shutdown, 120 ms for pre-restart: nothing waits for the budgets.
        assert_eq!(started.elapsed(), Duration::from_millis(240));
        assert!(report.notes.is_empty());
        assert!(report.closed.wait(Duration::from_millis(1)).await);
        assert_eq!(store.closes.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn shutdown_is_accepted_once_and_startup_is_refused_after_it() {
    run_paused(async {
        let calls = log();
        let (gateway, _store) = start(vec![plugin("all", &["gateway"], Act::Ok, &calls)]);
        let startup = GatewayStartupContext {
            cfg: json!({}),
            deps: json!({}),
            workspace_dir: "/ws".into(),
        };
        let delivery = gateway.startup(startup.clone()).await.unwrap();
        assert_eq!(delivery.calls, 1);
        gateway.shutdown(request(None, Vec::new())).await.unwrap();
        assert_eq!(
            gateway
                .shutdown(request(None, Vec::new()))
                .await
                .unwrap_err(),
            GatewayError::ShuttingDown
        );
        assert_eq!(
            gateway.startup(startup).await.unwrap_err(),
            GatewayError::ShuttingDown
        );
        assert_eq!(
            entries(&calls),
            ["all gateway:startup", "all gateway:shutdown"]
        );
    });
}

/// Ends sessions slowly: `slow-*` sessions take 60 s, others 1.5 s.
struct Ender {
    ended: common::Log,
}

#[async_trait]
impl Plugin for Ender {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnSessionEnded])
    }
    async fn on_session_ended(&self, _: &HookContext, session: SessionInfo) -> HookResult<()> {
        let id = session.session_id.to_string();
        let wait = if id.starts_with("slow") {
            60_000
        } else {
            1_500
        };
        tokio::time::sleep(Duration::from_millis(wait)).await;
        self.ended.lock().unwrap().push(id);
        Ok(())
    }
}

/// The [`Ender`] plugin, with room in its timeout for the slow sessions.
fn ender(ended: &common::Log) -> PluginRegistration {
    PluginRegistration::new("ender")
        .with_hooks(Arc::new(Ender {
            ended: ended.clone(),
        }))
        .with_timeout(HookKind::OnSessionEnded, Duration::from_secs(120))
}

/// A lifecycle over `plugin` on a pipeline that admits one call at a time.
fn start_admitting_one(plugin: PluginRegistration, config: GatewayConfig) -> Lifecycle {
    let pipeline = Pipeline::builder()
        .plugin(plugin)
        .max_pending(1)
        .start()
        .unwrap();
    Lifecycle::start(pipeline, Arc::new(Store::default()), config)
}

fn session(id: &str) -> SessionInfo {
    SessionInfo {
        workspace_root: "/ws".into(),
        session_id: id.into(),
        approval_mode: ApprovalMode::default(),
    }
}

#[test]
fn active_sessions_end_in_parallel_under_one_total_budget() {
    run_paused(async {
        let ended = log();
        let ender = ender(&ended);
        let (gateway, _store) = start(vec![ender]);
        let started = Instant::now();
        let sessions = vec![session("a"), session("b"), session("c")];
        let report = gateway.shutdown(request(None, sessions)).await.unwrap();
        // Three sessions of 1.5 s each, in parallel.
        assert_eq!(started.elapsed(), Duration::from_millis(1500));
        assert!(report.notes.is_empty());
        assert_eq!(entries(&ended).len(), 3);
    });
}

#[test]
fn session_end_hooks_past_the_budget_release_the_caller_with_a_note() {
    run_paused(async {
        let ended = log();
        let ender = ender(&ended);
        let (gateway, _store) = start(vec![ender]);
        let started = Instant::now();
        let sessions = vec![session("a"), session("slow-1"), session("slow-2")];
        let report = gateway.shutdown(request(None, sessions)).await.unwrap();
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert_eq!(
            texts(&report.notes),
            ["Session-end hooks of 2 session(s) did not finish within 2 s."]
        );
        assert_eq!(entries(&ended), ["a"]);
    });
}

// An end hook is never skipped silently: a call its shard refuses for now (the admission bound
// is full) asks again within the budget (`end_sessions`). With one call admitted at a time the
// two sessions end one after the other, both within the 5 s budget.
#[test]
fn sessions_beyond_the_admission_bound_still_end_within_the_budget() {
    run_paused(async {
        let ended = log();
        let ender = ender(&ended);
        let config = GatewayConfig {
            session_end_budget: Duration::from_secs(5),
            ..GatewayConfig::default()
        };
        let gateway = start_admitting_one(ender, config);
        let started = Instant::now();
        let sessions = vec![session("a"), session("b")];
        let report = gateway.shutdown(request(None, sessions)).await.unwrap();
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_secs(3) && elapsed < Duration::from_millis(3100),
            "one after the other: {elapsed:?}"
        );
        assert!(report.notes.is_empty(), "{:?}", texts(&report.notes));
        let mut ended = entries(&ended);
        ended.sort();
        assert_eq!(ended, ["a", "b"]);
    });
}

// One that still waits for admission when the budget ends is counted in the note, not dropped.
#[test]
fn a_session_still_waiting_for_admission_at_the_budget_is_counted_in_the_note() {
    run_paused(async {
        let ended = log();
        let ender = ender(&ended);
        let gateway = start_admitting_one(ender, GatewayConfig::default());
        let sessions = vec![session("slow-1"), session("b")];
        let report = gateway.shutdown(request(None, sessions)).await.unwrap();
        assert_eq!(
            texts(&report.notes),
            ["Session-end hooks of 2 session(s) did not finish within 2 s."]
        );
    });
}
