//! Everything a run is compared with in the same sitting: the actor peers of an in-process run
//! ([`Peer`]), the pipe peers of an external one ([`PipePeer`], issue 35), and for WebAssembly
//! plugins hookline itself with the other kinds of plugin (issue 36).

use super::hook::BenchHook;
use super::peers::Peer;
use super::pipe_peer::{run_pipe_peer, PipePeer};
use super::sharded::{run as run_on_arbiters, run_peers, Plan};
use super::source::Source;

/// One peer of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// An actor design over in-process appenders.
    Actor(Peer),
    /// Child processes over pipes, no hookline on the path.
    Pipe(PipePeer),
    /// hookline's pipeline over the same number of plugins of another kind.
    Kind(Source),
}

impl Compared {
    /// The peer's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Actor(peer) => peer.name(),
            Self::Pipe(peer) => peer.name(),
            Self::Kind(Source::InProcess) => "in-process plugins",
            Self::Kind(Source::ExternalRust) => "external Rust plugins",
            Self::Kind(Source::ExternalPython) => "external Python plugins",
            Self::Kind(Source::Wasm) => "WebAssembly plugins",
            Self::Kind(Source::Examples) => "the example plugins",
        }
    }

    /// The peers of a closed-loop run of `plan`: the actor peers for in-process appenders on
    /// `on_user_message`; for external plugins the pipe peer of their kind first (the one their
    /// per-plugin step is a multiple of), then the other; for WebAssembly plugins the same
    /// pipeline over in-process, external Rust and external Python plugins, then the raw pipe.
    pub fn of(plan: &Plan) -> Vec<Self> {
        if plan.rate.is_some() || plan.hook != BenchHook::OnUserMessage {
            return Vec::new();
        }
        match plan.source {
            Source::InProcess => Peer::ALL.into_iter().map(Self::Actor).collect(),
            Source::ExternalRust => vec![
                Self::Pipe(PipePeer::RawEcho),
                Self::Pipe(PipePeer::PythonJson),
            ],
            Source::ExternalPython => vec![
                Self::Pipe(PipePeer::PythonJson),
                Self::Pipe(PipePeer::RawEcho),
            ],
            Source::Wasm => vec![
                Self::Kind(Source::InProcess),
                Self::Kind(Source::ExternalRust),
                Self::Kind(Source::ExternalPython),
                Self::Pipe(PipePeer::RawEcho),
            ],
            Source::Examples => Vec::new(),
        }
    }

    /// Whether the report gives the run's per-plugin step as a multiple of this peer's (both
    /// go through the same number of plugins: the pipes and the other kinds).
    pub fn gives_step_multiple(self) -> bool {
        matches!(self, Self::Pipe(_) | Self::Kind(_))
    }

    /// Runs the peer over `plan`'s plugins, sessions and duration.
    ///
    /// # Errors
    /// A peer that would not start, as text.
    pub fn run(self, plan: &Plan) -> Result<super::Measured, String> {
        match self {
            Self::Actor(peer) => run_peers(peer, plan),
            Self::Pipe(peer) => run_pipe_peer(peer, plan.plugins, plan.sessions, plan.duration),
            Self::Kind(source) => {
                let other = Plan {
                    source,
                    ..plan.clone()
                };
                run_on_arbiters(&other, &()).map(|(measured, _)| measured)
            }
        }
    }
}
