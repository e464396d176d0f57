//! The host's shutdown through the gateway lifecycle (SPEC G2, G5.7), with paused time: the
//! bounded waits, pre-restart only when a restart is expected, the active session's end hooks
//! under their budget, and shared state closed only after the handlers finish.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod gateway_host_support;

use std::sync::Arc;
use std::time::Duration;

use common::{run_paused, Act};
use gateway_host_support::{builder, Watch};
use hookline::host::provider::ScriptedProvider;
use hookline::host::HostEvent;
use hookline::messages::note::Note;
use hookline::messages::record::ArchiveEntry;
use hookline::messages::session::SessionId;
use tokio::sync::Notify;
use tokio::time::Instant;

fn archive(host: &hookline::host::Host, id: &str) -> Vec<ArchiveEntry> {
    let dir = host.store().session_dir(&SessionId::new(id)).unwrap();
    hookline::host::store::Log::<ArchiveEntry>::open(&dir.join("archive.log"))
        .unwrap()
        .1
        .records
}

#[test]
fn a_hanging_shutdown_handler_releases_the_host_at_5_s_and_shared_state_closes_when_it_ends() {
    run_paused(async {
        let (dir, provider, watch) = (
            tempfile::tempdir().unwrap(),
            ScriptedProvider::default(),
            Watch::default(),
        );
        let release = Arc::new(Notify::new());
        let (log, finished) = (common::log(), common::log());
        let hang = Act::Hang(release.clone());
        let mut host = builder(&dir, &provider)
            .plugin(watch.plugin(&[]))
            .plugin(common::plugin_with(
                "slow",
                &["gateway:shutdown"],
                hang,
                &log,
                &finished,
            ))
            .start()
            .unwrap();
        host.open().await.unwrap();
        let start = Instant::now();
        let mut closed = host.shutdown("deploy", None).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        // The active session got its end hook, once, and its end is archived with the note.
        assert_eq!(
            watch.only(&["hook on_session_ended"]),
            ["hook on_session_ended s1"]
        );
        let entries = archive(&host, "s1");
        assert!(entries
            .iter()
            .any(|e| matches!(e, ArchiveEntry::SessionEnded(_))));
        let waited = Note::EventWaitTimedOut {
            event: hookline::messages::event::EventKey::GatewayShutdown,
            millis: 5000,
        };
        assert!(entries
            .iter()
            .any(|e| matches!(e, ArchiveEntry::Note { note, .. } if *note == waited)));
        // SPEC G2.2, G2.3: the handler still runs, so the shared state stays open.
        assert!(finished.lock().unwrap().is_empty());
        assert!(!closed.is_closed());
        release.notify_one();
        assert!(closed.wait(Duration::from_secs(1)).await);
        assert_eq!(*finished.lock().unwrap(), ["slow gateway:shutdown done"]);
        // The session already ended: closing again runs no end hook.
        host.close().await.unwrap();
        assert_eq!(watch.only(&["hook on_session_ended"]).len(), 1);
    });
}

#[test]
fn a_quick_handler_releases_at_once_and_pre_restart_fires_only_when_a_restart_is_expected() {
    run_paused(async {
        for (restart, expected) in [
            (None, vec!["event gateway:shutdown"]),
            (
                Some(1500),
                vec!["event gateway:shutdown", "event gateway:pre-restart"],
            ),
        ] {
            let (dir, provider, watch) = (
                tempfile::tempdir().unwrap(),
                ScriptedProvider::default(),
                Watch::default(),
            );
            let mut host = builder(&dir, &provider)
                .plugin(watch.plugin(&["gateway"]))
                .start()
                .unwrap();
            host.open().await.unwrap();
            let start = Instant::now();
            let closed = host.shutdown("restart", restart).await.unwrap();
            assert_eq!(start.elapsed(), Duration::ZERO);
            assert_eq!(
                watch.only(&["event gateway:shutdown", "event gateway:pre"]),
                expected
            );
            let tmp = gateway_host_support::tmp(&dir);
            let context = &watch.contexts("gateway:shutdown", &tmp)[0];
            assert_eq!(
                *context,
                serde_json::json!({"reason": "restart", "restartExpectedMs": restart})
            );
            assert!(closed.wait(Duration::from_secs(1)).await);
            let events = host.take_events();
            assert!(events.iter().any(
                |e| matches!(e, HostEvent::GatewayEvent { key, .. } if key == "gateway:shutdown")
            ));
        }
    });
}

#[test]
fn slow_session_end_hooks_of_the_active_session_are_bounded_by_the_2_s_budget() {
    run_paused(async {
        let (dir, provider) = (tempfile::tempdir().unwrap(), ScriptedProvider::default());
        let watch = Watch {
            end_delay: Some(Duration::from_secs(60)),
            ..Watch::default()
        };
        let mut host = builder(&dir, &provider)
            .plugin(watch.plugin(&[]))
            .start()
            .unwrap();
        host.open().await.unwrap();
        let start = Instant::now();
        let _closed = host.shutdown("bye", None).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        let timed_out = Note::SessionEndTimedOut {
            sessions: 1,
            millis: 2000,
        };
        assert!(archive(&host, "s1")
            .iter()
            .any(|e| matches!(e, ArchiveEntry::Note { note, .. } if *note == timed_out)));
        assert!(host.is_shut_down());
    });
}
