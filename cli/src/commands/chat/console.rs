//! What `hookline chat` prints, in the order things happen: the host's events from its live
//! feed (hooks that changed values, notes, tool calls, approvals), model text as it streams, and
//! the chat's own lines. One lock orders them; events are drained before anything else prints,
//! so a tool call never shows after the text that followed it.

use std::io::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast::{self, error::TryRecvError};

use crate::commands::render::line;
use hookline_host::session::HostEvent;

/// How many events the live feed holds for the console before the oldest are dropped.
pub(super) const LIVE_CAPACITY: usize = 1024;

/// The terminal.
pub(super) struct Console {
    state: Mutex<State>,
}

struct State {
    live: broadcast::Receiver<Arc<HostEvent>>,
    /// The cursor is after streamed text, not at a line start.
    mid_line: bool,
    verbose: bool,
}

impl Console {
    /// A console showing the events sent to `live`; `verbose` shows every event.
    pub(super) fn new(live: broadcast::Receiver<Arc<HostEvent>>, verbose: bool) -> Self {
        Self {
            state: Mutex::new(State {
                live,
                mid_line: false,
                verbose,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Prints the events reported since the last call.
    pub(super) fn events(&self) {
        let mut state = self.lock();
        state.drain(&mut String::new());
    }

    /// Prints `text` on its own line, after pending events.
    pub(super) fn say(&self, text: &str) {
        let mut state = self.lock();
        let mut out = String::new();
        state.drain(&mut out);
        state.end_line(&mut out);
        out.push_str(text);
        out.push('\n');
        write(&out);
    }

    /// Prints `text` with no newline (a prompt), after pending events.
    pub(super) fn prompt(&self, text: &str) {
        let mut state = self.lock();
        let mut out = String::new();
        state.drain(&mut out);
        state.end_line(&mut out);
        out.push_str(text);
        state.mid_line = true;
        write(&out);
    }

    /// Model text as it arrives; `first` starts the model's line.
    pub(super) fn text(&self, piece: &str, first: bool) {
        let mut state = self.lock();
        let mut out = String::new();
        if first {
            state.drain(&mut out);
            state.end_line(&mut out);
            out.push_str("model> ");
        }
        out.push_str(piece);
        state.mid_line = true;
        write(&out);
    }

    /// Ends streamed text's line.
    pub(super) fn end_text(&self) {
        let mut state = self.lock();
        let mut out = String::new();
        state.end_line(&mut out);
        write(&out);
    }

    /// After the user pressed Enter the cursor is at a line start.
    pub(super) fn typed(&self) {
        self.lock().mid_line = false;
    }
}

impl State {
    fn end_line(&mut self, out: &mut String) {
        if self.mid_line {
            out.push('\n');
            self.mid_line = false;
        }
    }

    fn drain(&mut self, out: &mut String) {
        loop {
            match self.live.try_recv() {
                Ok(event) => {
                    if let Some(text) = shown(&event, self.verbose) {
                        self.end_line(out);
                        out.push_str(&text);
                        out.push('\n');
                    }
                }
                Err(TryRecvError::Lagged(n)) => {
                    self.end_line(out);
                    out.push_str(&format!(
                        "-- ({n} events not shown: the terminal fell behind)\n"
                    ));
                }
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        write(out);
        out.clear();
    }
}

/// The line an event shows as, if the chat shows it. Model text is streamed, so assistant
/// events are not repeated; the plumbing (gateway events, model calls, system text) shows only
/// with `--verbose`.
fn shown(event: &HostEvent, verbose: bool) -> Option<String> {
    match event {
        // The chat prints model text itself as it streams in (`streamed.rs`).
        HostEvent::Assistant { .. } | HostEvent::ModelText { .. } => None,
        HostEvent::User { original: None, .. } => None,
        HostEvent::User { text, .. } => {
            Some(format!("   (a hook changed your message to: {text})"))
        }
        HostEvent::GatewayEvent { .. }
        | HostEvent::ModelCall { .. }
        | HostEvent::SystemText { .. }
        | HostEvent::Bootstrap { .. }
            if !verbose =>
        {
            None
        }
        other => Some(line(other)),
    }
}

fn write(text: &str) {
    if text.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    // A closed terminal is not the chat's failure; the next read ends the session.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}
