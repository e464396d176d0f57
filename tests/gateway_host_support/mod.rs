//! Helpers of the `gateway_host_*` tests: a host whose `watch` plugin records its session hooks,
//! compaction hooks and gateway events into one ordered log, and keeps each event's wire form.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookline::actors::events::{EventHandler, EventReply};
use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration, Reply};
use hookline::host::provider::ScriptedProvider;
use hookline::host::session::ManualClock;
use hookline::host::tools::ToolRegistry;
use hookline::host::{Host, HostBuilder};
use hookline::messages::compaction::Compaction;
use hookline::messages::event::{Event, WireEvent};
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::session::SessionInfo;
use serde_json::Value;

/// One ordered log of hooks and events: `hook on_session_started s1`, `event command:new`.
pub type Log = Arc<Mutex<Vec<String>>>;
/// The wire form of every event the watcher received.
pub type Wire = Arc<Mutex<Vec<WireEvent>>>;

/// What the `watch` plugin writes to.
#[derive(Clone, Default)]
pub struct Watch {
    pub log: Log,
    pub wire: Wire,
    /// How long `on_session_ended` takes.
    pub end_delay: Option<Duration>,
}

struct Watcher(Watch, Vec<&'static str>);

#[async_trait]
impl Plugin for Watcher {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[
            HookKind::OnSessionStarted,
            HookKind::OnSessionEnded,
            HookKind::OnCompaction,
        ])
    }
    async fn on_session_started(&self, _: &HookContext, s: SessionInfo) -> HookResult<()> {
        self.0
            .push(format!("hook on_session_started {}", s.session_id));
        Ok(())
    }
    async fn on_session_ended(&self, _: &HookContext, s: SessionInfo) -> HookResult<()> {
        if let Some(delay) = self.0.end_delay {
            tokio::time::sleep(delay).await;
        }
        self.0
            .push(format!("hook on_session_ended {}", s.session_id));
        Ok(())
    }
    async fn on_compaction(&self, _: &HookContext, c: Compaction) -> HookResult<Reply<Compaction>> {
        self.0.push(format!("hook on_compaction {:?}", c.phase));
        Ok(Reply::Keep)
    }
}

#[async_trait]
impl EventHandler for Watcher {
    fn subscriptions(&self) -> Vec<String> {
        self.1.iter().map(|s| (*s).to_owned()).collect()
    }
    async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
        self.0.push(format!("event {}", event.key()));
        self.0.wire.lock().unwrap().push(event.to_wire());
        Ok(EventReply::Done)
    }
}

impl Watch {
    fn push(&self, line: String) {
        self.log.lock().unwrap().push(line);
    }

    /// The `watch` plugin, subscribed to `subscriptions`.
    pub fn plugin(&self, subscriptions: &[&'static str]) -> PluginRegistration {
        let watcher = Arc::new(Watcher(self.clone(), subscriptions.to_vec()));
        PluginRegistration::new("watch")
            .with_hooks(watcher.clone())
            .with_events(watcher)
    }

    pub fn lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The log's lines that start with `prefix`... in order.
    pub fn only(&self, prefixes: &[&str]) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
            .collect()
    }

    /// The contexts received for `key`, in order, with `tmp` replaced by `[tmp]`.
    pub fn contexts(&self, key: &str, tmp: &std::path::Path) -> Vec<Value> {
        let tmp = tmp.display().to_string();
        self.wire
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.key.to_string() == key)
            .map(|e| serde_json::from_str(&e.context.to_string().replace(&tmp, "[tmp]")).unwrap())
            .collect()
    }

    /// Waits (real time, at most 5 s) until `key` was received `n` times: queued events are
    /// delivered by the bus's worker, after the producer returned.
    pub async fn received(&self, key: &str, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.count(key) < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{key} x{n} never arrived"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    fn count(&self, key: &str) -> usize {
        let wire = self.wire.lock().unwrap();
        wire.iter().filter(|e| e.key.to_string() == key).count()
    }
}

/// A host builder over a temporary workspace `ws` (canonicalized), with the built-in tools.
pub fn builder(dir: &tempfile::TempDir, provider: &ScriptedProvider) -> HostBuilder {
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    Host::builder()
        .tools(ToolRegistry::with_builtins())
        .provider(Arc::new(provider.clone()))
        .workspace(dir.path().join("ws"))
        .spaces_root(dir.path())
        // A fixed clock: `updatedAt` in the contexts is then the same on every run.
        .clock(Arc::new(ManualClock::new(1_700_000_000_000)))
}

/// The canonical temporary directory (what the contexts carry).
pub fn tmp(dir: &tempfile::TempDir) -> std::path::PathBuf {
    std::fs::canonicalize(dir.path()).unwrap()
}
