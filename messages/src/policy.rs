//! The approval policy's decision as a pure function (SPEC P2.9, R4: the policy always decides,
//! on the classification the approval hooks produced).

use serde::{Deserialize, Serialize};

use crate::approval::{Authority, Classification, Risk};
use crate::session::ApprovalMode;

/// What the policy says about one classified call before the operator is involved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Run it without asking.
    Allow,
    /// Ask the operator.
    Ask,
}

/// Decides whether a call with `classification` runs without asking under `mode`.
///
/// A prompt requirement always asks. Otherwise: `ask-all` asks for everything, `ask-above-read`
/// allows only reads, `allow-workspace` allows everything whose authority stays in the workspace
/// (whatever its risk) and asks for the rest.
pub fn verdict(mode: ApprovalMode, classification: &Classification) -> Verdict {
    if classification.requires_prompt {
        return Verdict::Ask;
    }
    let allowed = match mode {
        ApprovalMode::AskAll => false,
        ApprovalMode::AskAboveRead => classification.risk <= Risk::Read,
        ApprovalMode::AllowWorkspace => classification.authority == Authority::Workspace,
    };
    if allowed {
        Verdict::Allow
    } else {
        Verdict::Ask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(risk: Risk, authority: Authority, requires_prompt: bool) -> Classification {
        Classification {
            risk,
            authority,
            summary: String::new(),
            requires_prompt,
        }
    }

    #[test]
    fn each_mode_asks_for_what_it_says() {
        let read = class(Risk::Read, Authority::Workspace, false);
        let write = class(Risk::Write, Authority::Workspace, false);
        let host = class(Risk::Read, Authority::Host, false);
        assert_eq!(verdict(ApprovalMode::AskAboveRead, &read), Verdict::Allow);
        assert_eq!(verdict(ApprovalMode::AskAboveRead, &write), Verdict::Ask);
        assert_eq!(verdict(ApprovalMode::AskAll, &read), Verdict::Ask);
        assert_eq!(
            verdict(ApprovalMode::AllowWorkspace, &write),
            Verdict::Allow
        );
        assert_eq!(verdict(ApprovalMode::AllowWorkspace, &host), Verdict::Ask);
    }

    #[test]
    fn a_prompt_requirement_always_asks() {
        let prompted = class(Risk::Read, Authority::Workspace, true);
        assert_eq!(
            verdict(ApprovalMode::AllowWorkspace, &prompted),
            Verdict::Ask
        );
    }
}
