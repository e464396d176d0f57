//! Fakes shared by the `gateway_*` tests: an event handler that records what it sees and can be
//! told to fail, panic, hang or replace the bootstrap list.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs
)]

pub mod events;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookline::actors::events::{EventHandler, EventReply};
use hookline::actors::plugin::{HookError, HookResult, PluginRegistration};
use hookline::messages::event::{BootstrapFile, Event};
use tokio::sync::Notify;

/// What each handler call saw: `"<plugin> <key>"`, in call order across plugins.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

pub fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[derive(Clone)]
pub enum Act {
    Ok,
    Fail(&'static str),
    Panic,
    /// Sleeps this long, then finishes.
    Sleep(Duration),
    /// Waits until the notify fires (forever if it never does).
    Hang(Arc<Notify>),
    /// Appends a bootstrap file named so.
    AddBootstrap(&'static str),
}

pub struct Recorder {
    pub name: &'static str,
    pub subscriptions: Vec<&'static str>,
    pub act: Act,
    pub log: Log,
    /// `"<plugin> <key> done"` entries go here when a call finishes.
    pub finished: Log,
}

#[async_trait]
impl EventHandler for Recorder {
    fn subscriptions(&self) -> Vec<String> {
        self.subscriptions.iter().map(|s| (*s).to_owned()).collect()
    }

    async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
        let key = event.key();
        self.log
            .lock()
            .unwrap()
            .push(format!("{} {key}", self.name));
        let reply = match &self.act {
            Act::Ok => Ok(EventReply::Done),
            Act::Fail(message) => Err(HookError::msg(*message)),
            Act::Panic => panic!("handler bug"),
            Act::Sleep(duration) => {
                tokio::time::sleep(*duration).await;
                Ok(EventReply::Done)
            }
            Act::Hang(release) => {
                release.notified().await;
                Ok(EventReply::Done)
            }
            Act::AddBootstrap(name) => {
                let Event::AgentBootstrap(cx) = event else {
                    return Ok(EventReply::Done);
                };
                let mut files = cx.bootstrap_files.clone();
                files.push(BootstrapFile {
                    name: (*name).into(),
                    path: format!("/ws/{name}"),
                    missing: false,
                    content: Some(format!("seen {}", files.len())),
                });
                Ok(EventReply::ReplaceBootstrapFiles(files))
            }
        };
        self.finished
            .lock()
            .unwrap()
            .push(format!("{} {key} done", self.name));
        reply
    }
}

/// A plugin named `name` with a recording event handler.
pub fn plugin(
    name: &'static str,
    subscriptions: &[&'static str],
    act: Act,
    log: &Log,
) -> PluginRegistration {
    plugin_with(name, subscriptions, act, log, &self::log())
}

pub fn plugin_with(
    name: &'static str,
    subscriptions: &[&'static str],
    act: Act,
    log: &Log,
    finished: &Log,
) -> PluginRegistration {
    PluginRegistration::new(name).with_events(Arc::new(Recorder {
        name,
        subscriptions: subscriptions.to_vec(),
        act,
        log: log.clone(),
        finished: finished.clone(),
    }))
}

/// Runs `test` in an actix system on a tokio runtime whose clock starts paused, so timer
/// deadlines fall on exact milliseconds (pausing later leaves the clock a few microseconds off
/// the timer wheel's millisecond grid). Idle time auto-advances to the next timer.
pub fn run_paused<F: std::future::Future>(test: F) -> F::Output {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    })
    .block_on(test)
}
