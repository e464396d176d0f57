//! The rendezvous protocol's messages: serde types only, one JSON object a line.
//!
//! The server being replaced speaks first ([`FromServer::Offer`], with the listening sockets
//! attached), the successor answers once ([`FromSuccessor`]); after a `ready` the server sends
//! the sessions it had open ([`FromServer::Sessions`]), the successor says it adopted them
//! ([`FromSuccessor::Adopted`]), and the server hands over and exits. docs/serve.md
//! ("Replacing a running server") shows a transcript.

use serde::{Deserialize, Serialize};

/// What every offer names as its protocol: a successor refuses any other peer.
pub const PROTOCOL: &str = "hookline-handover";

/// The protocol version this build speaks; a successor refuses another.
pub const VERSION: u32 = 1;

/// What the running server sends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromServer {
    /// Its listening sockets (attached as file descriptors, in this order) and who it is.
    Offer(Offer),
    /// The sessions open in it when the successor said `ready`; the successor adopts them.
    Sessions {
        /// The session ids.
        ids: Vec<String>,
    },
}

/// The running server's side of the handshake.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    /// Always [`PROTOCOL`].
    pub protocol: String,
    /// [`VERSION`] of the server's build.
    pub version: u32,
    /// The server's process id.
    pub pid: u32,
    /// Its PostgreSQL node name (none on the file store): a lease held by this name is one
    /// moving to the successor.
    pub node: Option<String>,
    /// How long it gives running turns to finish once it hands over, in milliseconds.
    pub drain_budget_ms: u64,
    /// The address each attached socket listens on, in the order of the descriptors.
    pub listeners: Vec<String>,
}

impl Offer {
    /// An offer of this build's protocol.
    pub fn new(
        pid: u32,
        node: Option<String>,
        drain_budget_ms: u64,
        listeners: Vec<String>,
    ) -> Self {
        Self {
            protocol: PROTOCOL.to_owned(),
            version: VERSION,
            pid,
            node,
            drain_budget_ms,
            listeners,
        }
    }
}

/// What the successor answers, once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromSuccessor {
    /// It serves on the inherited sockets: the server hands over and exits.
    Ready {
        /// The successor's process id.
        pid: u32,
    },
    /// It cannot start, and exits non-zero: the server goes on as before.
    Failed {
        /// Why, as the successor says it on its stderr.
        reason: String,
    },
    /// `--replace --check`: it would start, and does not; the server goes on as before.
    Checked {
        /// The checking process's id.
        pid: u32,
    },
    /// After `sessions`: it waits for each of them (a request for one waits for its lease
    /// instead of finding it unknown), so the server may now give their leases back.
    Adopted {
        /// How many sessions it adopted.
        count: usize,
    },
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_message_round_trips_with_its_wire_tag() {
        let offer = FromServer::Offer(Offer::new(
            7,
            Some("n1".into()),
            500,
            vec!["127.0.0.1:1".into()],
        ));
        let text = serde_json::to_string(&offer).unwrap();
        assert!(
            text.starts_with(r#"{"type":"offer","protocol":"hookline-handover","version":1"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<FromServer>(&text).unwrap(), offer);
        let sessions = FromServer::Sessions {
            ids: vec!["a".into()],
        };
        let text = serde_json::to_string(&sessions).unwrap();
        assert_eq!(text, r#"{"type":"sessions","ids":["a"]}"#);
        for answer in [
            FromSuccessor::Ready { pid: 1 },
            FromSuccessor::Failed {
                reason: "no".into(),
            },
            FromSuccessor::Checked { pid: 2 },
            FromSuccessor::Adopted { count: 3 },
        ] {
            let text = serde_json::to_string(&answer).unwrap();
            assert_eq!(
                serde_json::from_str::<FromSuccessor>(&text).unwrap(),
                answer
            );
        }
    }
}
