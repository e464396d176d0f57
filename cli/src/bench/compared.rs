//! Everything a run is compared with in the same sitting: the actor peers of an in-process run
//! ([`Peer`]) and the pipe peers of an external one ([`PipePeer`], issue 35).

use super::hook::BenchHook;
use super::peers::Peer;
use super::pipe_peer::{run_pipe_peer, PipePeer};
use super::sharded::{run_peers, Plan};
use super::source::Source;

/// One peer of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// An actor design over in-process appenders.
    Actor(Peer),
    /// Child processes over pipes, no hookline on the path.
    Pipe(PipePeer),
}

impl Compared {
    /// The peer's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Actor(peer) => peer.name(),
            Self::Pipe(peer) => peer.name(),
        }
    }

    /// The peers of a closed-loop run of `plan`: the actor peers for in-process appenders on
    /// `on_user_message`; for external plugins the pipe peer of their kind first (the one their
    /// per-plugin step is a multiple of), then the other.
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
            Source::Examples => Vec::new(),
        }
    }

    /// Whether the report gives the run's per-plugin step as a multiple of this peer's.
    pub fn is_pipe(self) -> bool {
        matches!(self, Self::Pipe(_))
    }

    /// Runs the peer over `plan`'s plugins, sessions and duration.
    ///
    /// # Errors
    /// A peer that would not start, as text.
    pub fn run(self, plan: &Plan) -> Result<super::Measured, String> {
        match self {
            Self::Actor(peer) => run_peers(peer, plan),
            Self::Pipe(peer) => run_pipe_peer(peer, plan.plugins, plan.sessions, plan.duration),
        }
    }
}
