//! Tool calls and results as hooks see them (SPEC P1.3, P2.7, P2.8).

use serde::{Deserialize, Serialize};

use crate::model::ImageRef;

/// Who provides a tool. Every provider goes through the same hooks (SPEC P1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ToolProvider {
    /// A tool built into the host.
    BuiltIn,
    /// A tool contributed by a plugin.
    Plugin,
    /// An external executable declared in the tools directory.
    External,
}

/// A tool call the model asked for. `on_tool_call` may replace its name or arguments (SPEC P2.7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The call's id, given by the model. Hooks cannot change it.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as JSON.
    pub arguments: serde_json::Value,
    /// Who provides the tool. The host resolves it again from the name after hooks run,
    /// so a hook's value here is never used.
    pub provider: ToolProvider,
}

/// Whether the approval policy let a call run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalState {
    /// The policy (or the operator) allowed the call.
    Granted,
    /// The policy (or the operator) refused the call; the tool never ran.
    Denied,
}

/// A tool's result. `on_tool_result` may replace its text, and its images on image-capable
/// turns (SPEC P2.8, P3.2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The result text.
    pub text: String,
    /// Images the result carries, as markers.
    #[serde(default)]
    pub images: Vec<ImageRef>,
    /// Whether the tool succeeded.
    pub success: bool,
    /// What the approval policy decided for the call. Hooks cannot mark it passed.
    pub approval: ApprovalState,
}
