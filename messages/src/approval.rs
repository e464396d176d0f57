//! Approval classification (SPEC P2.9, R4, R5.10).

use serde::{Deserialize, Serialize};

/// How risky a tool call is. Totally ordered: `Read < Write < Execute < Critical`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads only.
    Read,
    /// Changes files.
    Write,
    /// Runs programs or reaches the network.
    Execute,
    /// The highest risk; what unknown tools get.
    Critical,
}

/// Where a call acts. Ordered: `Workspace < Host`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Authority {
    /// Inside the session's workspace root.
    Workspace,
    /// Beyond the workspace: the wider machine or network.
    Host,
}

/// The host's classification of one tool call, which approval hooks refine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Classification {
    /// The call's risk.
    pub risk: Risk,
    /// Where the call acts.
    pub authority: Authority,
    /// A one-line summary shown to the operator.
    pub summary: String,
    /// Whether the operator must be asked, whatever the mode says.
    pub requires_prompt: bool,
}
