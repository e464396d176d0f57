//! Out-of-process plugins: one long-lived child process per plugin, speaking the protocol of
//! `hookline_messages::protocol` (NDJSON over stdin/stdout; stderr is its log).
//!
//! [`ExternalPlugin`] implements the in-process [`Plugin`](hookline_actors::plugin::Plugin),
//! [`RawHooks`](hookline_actors::plugin::RawHooks) and
//! [`EventHandler`](hookline_actors::events::EventHandler) traits, so the same plugin actors,
//! coordinator and event bus run it and every rule and note applies unchanged; each tool it
//! declares is a [`PluginTool`], a [`Tool`](crate::tools::Tool) like any other. Underneath:
//! - a call encodes its value once, straight into the process's outbox, and the caller's own
//!   runtime flushes the outbox right after it yields, every line queued meanwhile in the same
//!   write, with no writer task to wake (docs/performance.md, issue 35: a pipe round trip is
//!   almost all wake-ups); a reader task matches reply ids, so many calls are in flight at once;
//! - a call that times out is given up and a `cancel` is sent; its late reply is dropped;
//! - output that is not the protocol, a line over the cap, a reply with an unknown id, or a crash
//!   mid-reply skips the calls in flight with a note; a second reply to an answered call skips
//!   nothing and is pinned on the plugin ([`ExternalPlugin::take_faults`]); the host goes on;
//! - a crashed process is restarted with back-off and disabled after 3 crashes in 5 minutes;
//! - shutdown is `goodbye`, close stdin, terminate, kill, each step bounded.
//!
//! The child runs in its own directory with an allowlisted environment ([`ALLOWED_ENV`]): the
//! host's secrets are not inherited (SPEC L2).

mod codec;
mod connection;
mod error;
mod events;
mod faults;
mod hooks;
mod outbox;
mod pending;
mod reader;
mod reply;
mod signal;
mod stderr;
mod supervisor;
mod tools;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hookline_actors::plugin::{PluginRegistration, Timeouts, DEFAULT_HOOK_TIMEOUT};
use hookline_messages::hook::{HookKind, HookSet};
use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{
    EventRequest, Hello, HookRequestRef, HostMessage, ReplyBody, RequestId, PROTOCOL_VERSION,
};
use hookline_messages::session::SessionId;
use tokio::time::Instant;

pub use codec::DEFAULT_LINE_CAP;
pub use error::StartError;
pub use supervisor::RestartPolicy;
pub use tools::{PluginTool, TOOL_TIMEOUT};

// What WebAssembly plugins share with external ones (the same replies, the same decoding).
#[cfg(feature = "wasm")]
pub(crate) use events::event_reply;
#[cfg(feature = "wasm")]
pub(crate) use hooks::{observed, replacement};
#[cfg(feature = "wasm")]
pub(crate) use reply::{decode_reply, decode_typed, TypedReply};

use connection::Connection;
use supervisor::{Control, State};

/// The environment variables a plugin process inherits from the host; nothing else is passed
/// (no API keys, no tokens). The host adds `HOOKLINE_PLUGIN` (the plugin's name) and
/// `HOOKLINE_PROTOCOL` (the protocol version).
pub const ALLOWED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TERM",
    "SYSTEMROOT",
];

/// How long a new process has to say hello, by default.
pub const DEFAULT_HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// How long each shutdown step waits, by default.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How to start and run one external plugin.
#[derive(Clone, Debug)]
pub struct ExternalConfig {
    /// The plugin's name (notes use it).
    pub name: String,
    /// The program to run: the entry point itself, or an allowlisted interpreter.
    pub program: PathBuf,
    /// Its arguments (the entry point, when `program` is an interpreter).
    pub args: Vec<OsString>,
    /// Its working directory: the plugin's directory.
    pub dir: PathBuf,
    /// Its whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// Per-hook timeouts; a call past its timeout is skipped and cancelled.
    pub timeouts: Timeouts,
    /// The timeout of one gateway event delivery (default [`DEFAULT_HOOK_TIMEOUT`]).
    pub event_timeout: Duration,
    /// How long the process has to say hello.
    pub hello_timeout: Duration,
    /// The longest protocol line accepted, in bytes.
    pub line_cap: usize,
    /// Restarts after crashes.
    pub restart: RestartPolicy,
    /// How long each shutdown step waits.
    pub shutdown_grace: Duration,
    /// Guard hooks marked fail-closed (see `PluginRegistration::fail_closed`).
    pub fail_closed: HookSet,
    /// Also write each stderr line the plugin logs to the host's stderr, as `[<plugin>] <line>`
    /// (default false: its stderr goes to tracing only).
    pub echo_stderr: bool,
}

impl ExternalConfig {
    /// A config with the defaults and the allowlisted environment.
    pub fn new(
        name: impl Into<String>,
        program: impl Into<PathBuf>,
        dir: impl Into<PathBuf>,
    ) -> Self {
        let name = name.into();
        Self {
            env: allowed_environment(&name),
            name,
            program: program.into(),
            args: Vec::new(),
            dir: dir.into(),
            timeouts: Timeouts::default(),
            event_timeout: DEFAULT_HOOK_TIMEOUT,
            hello_timeout: DEFAULT_HELLO_TIMEOUT,
            line_cap: DEFAULT_LINE_CAP,
            restart: RestartPolicy::default(),
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            fail_closed: HookSet::empty(),
            echo_stderr: false,
        }
    }
}

/// The host's variables named in [`ALLOWED_ENV`], plus `HOOKLINE_PLUGIN` and `HOOKLINE_PROTOCOL`.
pub fn allowed_environment(plugin: &str) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = ALLOWED_ENV
        .iter()
        .filter_map(|key| std::env::var_os(key).map(|value| (OsString::from(key), value)))
        .collect();
    env.push(("HOOKLINE_PLUGIN".into(), plugin.into()));
    env.push((
        "HOOKLINE_PROTOCOL".into(),
        PROTOCOL_VERSION.to_string().into(),
    ));
    env
}

/// Whether a plugin's process is serving calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Running.
    Running,
    /// Crashed; restarting after a back-off.
    Restarting,
    /// Disabled after crashing too often.
    Disabled,
    /// Shut down.
    Stopped,
}

/// A running external plugin. Cheap to share (`Arc`); every clone of the `Arc` talks to the same
/// process.
pub struct ExternalPlugin {
    name: Arc<str>,
    hello: Hello,
    timeouts: Timeouts,
    event_timeout: Duration,
    fail_closed: HookSet,
    restart: RestartPolicy,
    grace: Duration,
    control: Arc<Control>,
}

/// Extra time the plugin's own deadline leaves to the actor's timeout, which fires first and
/// gives the typed "timed out" note; this one only bounds direct callers.
const BACKSTOP: Duration = Duration::from_millis(250);

impl ExternalPlugin {
    /// Starts the process and completes the handshake.
    ///
    /// # Errors
    /// [`StartError`] when the process cannot start, exits, says no valid hello in time, or
    /// speaks another protocol version.
    pub async fn start(config: ExternalConfig) -> Result<Arc<Self>, StartError> {
        let faults = Arc::new(faults::FaultLog::default());
        let (connection, hello, lifecycle) = Connection::start(&config, faults.clone()).await?;
        let plugin = Self {
            name: config.name.as_str().into(),
            hello,
            timeouts: config.timeouts,
            event_timeout: config.event_timeout,
            fail_closed: config.fail_closed,
            restart: config.restart,
            grace: config.shutdown_grace,
            control: supervisor::supervise(Arc::new(config), connection, lifecycle, faults),
        };
        Ok(Arc::new(plugin))
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the plugin said in its hello.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// The gateway event keys it subscribes to, as declared (unknown ones included, SPEC G4.1).
    pub fn events(&self) -> &[String] {
        &self.hello.events
    }

    /// A registration for the pipeline: its ordinary hooks and raw hooks (kept apart, SPEC R0.1),
    /// its gateway event handler when its hello subscribes to anything (SPEC G1.2; unknown
    /// subscriptions included, G4.1), and its timeouts.
    pub fn registration(self: &Arc<Self>) -> PluginRegistration {
        let mut registration = PluginRegistration::new(self.name.clone())
            .with_timeouts(self.timeouts)
            .with_event_timeout(self.event_timeout);
        if !self.hello.events.is_empty() {
            registration = registration.with_events(self.clone());
        }
        for hook in self.fail_closed.iter() {
            registration = registration.fail_closed(hook);
        }
        if !self.hello.hooks.ordinary_only().is_empty() {
            registration = registration.with_hooks(self.clone());
        }
        if !self.hello.raw_hooks.raw_only().is_empty() {
            registration = registration.with_raw_hooks(self.clone());
        }
        registration
    }

    /// The protocol faults pinned on this plugin since the last call, as notes
    /// ([`Note::PluginFault`](hookline_messages::note::Note::PluginFault)): faults that belong to
    /// no call in flight, such as a second reply to an answered request. The host records them in
    /// the active session with the event notes.
    pub fn take_faults(&self) -> Vec<hookline_messages::note::Note> {
        self.control.faults.take()
    }

    /// Where the process is now.
    pub fn run_state(&self) -> RunState {
        match &*self.control.state.borrow() {
            State::Running(_) => RunState::Running,
            State::Restarting => RunState::Restarting,
            State::Disabled => RunState::Disabled,
            State::Stopped => RunState::Stopped,
        }
    }

    /// Where the plugin is now, why and since when (`GET /v1/plugins`): `loaded`, `restarting`
    /// after its process exited, `exited` once shut down, or `suspended` after crashing too often
    /// ([`RestartPolicy`]).
    pub fn live(&self) -> crate::loading::LiveStatus {
        self.control.live()
    }

    /// The guard hooks it fails closed on (its manifest's `fail_closed`).
    pub fn fail_closed(&self) -> HookSet {
        self.fail_closed
    }

    /// How many requests are in flight on the current process.
    pub fn in_flight(&self) -> usize {
        match &*self.control.state.borrow() {
            State::Running(connection) => connection.in_flight(),
            _ => 0,
        }
    }

    /// Runs `hook` on `value` (its JSON) for `session`, under the hook's timeout.
    ///
    /// # Errors
    /// Why the call is skipped: a timeout, a protocol fault, a crash, a disabled plugin.
    pub async fn call_hook(
        &self,
        hook: HookKind,
        session: &SessionId,
        value: serde_json::Value,
    ) -> Result<ReplyBody, SkipReason> {
        let limit = self.timeouts.get(hook);
        self.hook_round_trip(hook, session, &value, Some(limit))
            .await
    }

    /// Runs `hook` on `value`, encoded once, straight into the request line (no JSON tree
    /// built first). `limit`: the deadline the call itself keeps; `None` when the caller bounds
    /// it (the plugin actor's timeout does, with the typed note: no second timer per call).
    pub(crate) async fn hook_round_trip<T: serde::Serialize>(
        &self,
        hook: HookKind,
        session: &SessionId,
        value: &T,
        limit: Option<Duration>,
    ) -> Result<ReplyBody, SkipReason> {
        let session = session.as_str();
        self.round_trip(limit, |id, traceparent, line| {
            let request = HookRequestRef {
                id,
                hook,
                session,
                value,
                traceparent,
            };
            connection::encode_into(line, &request).then_some("hook")
        })
        .await
    }

    /// Delivers a gateway event (`key`, its context JSON) and returns the plugin's reply. The
    /// event bus calls it through the plugin's
    /// [`EventHandler`](hookline_actors::events::EventHandler) impl; the plugin's subscriptions
    /// are [`ExternalPlugin::events`].
    ///
    /// # Errors
    /// As [`ExternalPlugin::call_hook`].
    pub async fn deliver_event(
        &self,
        key: &str,
        context: serde_json::Value,
        limit: Duration,
    ) -> Result<ReplyBody, SkipReason> {
        let key = key.to_owned();
        self.request(limit, move |id| {
            HostMessage::Event(EventRequest {
                id,
                key,
                context,
                traceparent: None,
            })
        })
        .await
    }

    /// Sends one request and waits for its reply, at most `limit` (plus a small backstop margin
    /// for the actor's own timeout to fire first). The wait for a restart counts.
    pub(crate) async fn request(
        &self,
        limit: Duration,
        build: impl FnOnce(RequestId) -> HostMessage,
    ) -> Result<ReplyBody, SkipReason> {
        self.round_trip(Some(limit), |id, traceparent, line| {
            let message = build(id).with_traceparent(traceparent.map(str::to_owned));
            connection::encode_into(line, &message).then(|| message.kind())
        })
        .await
    }

    /// Sends the request line `encode(id, traceparent, line)` appends (returning the request's
    /// kind, `None` when it does not encode) and waits for its reply: at most `limit` (plus a
    /// small backstop margin for the actor's own timeout to fire first) when given; without one,
    /// the caller's own deadline bounds it. The wait for a restart counts.
    async fn round_trip(
        &self,
        limit: Option<Duration>,
        encode: impl FnOnce(RequestId, Option<&str>, &mut Vec<u8>) -> Option<&'static str>,
    ) -> Result<ReplyBody, SkipReason> {
        // One span per round trip (docs/observability.md); its context travels with the request
        // so the plugin's own spans join the trace.
        let span = tracing::info_span!(
            "plugin round trip",
            plugin = %self.name,
            request = tracing::field::Empty,
            request_id = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let on_span = span.clone();
        let call = async move {
            let connection = self.connection().await?;
            // Read inside the span: the plugin's spans become children of this round trip.
            let traceparent = crate::trace::traceparent();
            connection
                .request(|id, line| {
                    let kind = encode(id, traceparent.as_deref(), line);
                    if !on_span.is_disabled() {
                        if let Some(kind) = kind {
                            on_span.record("request", kind);
                        }
                        on_span.record("request_id", id);
                    }
                    kind.is_some()
                })
                .await
        };
        let call = tracing::Instrument::instrument(call, span.clone());
        let reply = match limit {
            None => call.await,
            Some(limit) => tokio::time::timeout_at(Instant::now() + limit + BACKSTOP, call)
                .await
                .unwrap_or(Err(SkipReason::timed_out(limit))),
        };
        if !span.is_disabled() {
            match &reply {
                Ok(body) => span.record("outcome", body.kind()),
                Err(reason) => span.record("outcome", tracing::field::display(reason)),
            };
        }
        reply
    }

    /// The running connection, waiting through a restart.
    async fn connection(&self) -> Result<Arc<Connection>, SkipReason> {
        let mut state = self.control.state.subscribe();
        let ready = state
            // A connection whose output ended belongs to a process that is exiting: wait for the
            // supervisor's restart rather than fail this call as if it had crashed too.
            .wait_for(|state| match state {
                State::Restarting => false,
                State::Running(connection) => !connection.is_closed(),
                State::Disabled | State::Stopped => true,
            })
            .await
            .map_err(|_| SkipReason::Unavailable)?;
        match &*ready {
            State::Running(connection) => Ok(connection.clone()),
            State::Disabled => Err(self.restart.disabled_reason()),
            State::Restarting | State::Stopped => Err(SkipReason::Unavailable),
        }
    }

    /// Shuts the process down: `goodbye`, close stdin, terminate, kill, each step bounded. Calls
    /// after it are skipped as "not running".
    pub async fn shutdown(&self) {
        self.control.stopping.store(true, Ordering::Release);
        let mut state = self.control.state.subscribe();
        let stopped = async {
            loop {
                if let State::Running(connection) = &*state.borrow_and_update() {
                    connection.request_stop();
                }
                let done = matches!(*state.borrow(), State::Stopped | State::Disabled);
                if done || state.changed().await.is_err() {
                    return;
                }
            }
        };
        // Four bounded steps and a back-off at most; never wait forever.
        let bound = self.grace * 4 + self.restart.max_backoff + Duration::from_secs(1);
        let _ = tokio::time::timeout(bound, stopped).await;
    }

    /// Every hook the plugin implements (ordinary and raw).
    pub fn implements(&self) -> HookSet {
        self.hello
            .hooks
            .ordinary_only()
            .union(self.hello.raw_hooks.raw_only())
    }
}

impl std::fmt::Debug for ExternalPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalPlugin")
            .field("name", &self.name)
            .field("implements", &self.implements())
            .field("state", &self.run_state())
            .finish_non_exhaustive()
    }
}
