//! `on_approval` may raise risk or require another prompt, nothing else (SPEC P2.9, R5.10).

use crate::approval::Classification;
use crate::note::Refusal;

/// Admits an `on_approval` replacement: risk and authority may only rise, a prompt requirement
/// may be set but not cleared, and the summary stays the host's.
///
/// # Errors
/// [`Refusal::LoweredRisk`], [`Refusal::LoweredAuthority`],
/// [`Refusal::ClearedPromptRequirement`] or [`Refusal::ChangedSummary`].
pub fn on_approval(
    before: &Classification,
    proposed: Classification,
) -> Result<Classification, Refusal> {
    if proposed.risk < before.risk {
        return Err(Refusal::LoweredRisk);
    }
    if proposed.authority < before.authority {
        return Err(Refusal::LoweredAuthority);
    }
    if before.requires_prompt && !proposed.requires_prompt {
        return Err(Refusal::ClearedPromptRequirement);
    }
    if proposed.summary != before.summary {
        return Err(Refusal::ChangedSummary);
    }
    Ok(proposed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{Authority, Risk};

    fn write() -> Classification {
        Classification {
            risk: Risk::Write,
            authority: Authority::Workspace,
            summary: "write a.txt".into(),
            requires_prompt: false,
        }
    }

    #[test]
    fn raising_risk_or_requiring_a_prompt_applies() {
        let raised = Classification {
            risk: Risk::Critical,
            requires_prompt: true,
            ..write()
        };
        assert_eq!(on_approval(&write(), raised.clone()), Ok(raised));
    }

    #[test]
    fn lowering_risk_or_clearing_a_prompt_is_refused() {
        let lowered = Classification {
            risk: Risk::Read,
            ..write()
        };
        assert_eq!(on_approval(&write(), lowered), Err(Refusal::LoweredRisk));
        let prompted = Classification {
            requires_prompt: true,
            ..write()
        };
        assert_eq!(
            on_approval(&prompted, write()),
            Err(Refusal::ClearedPromptRequirement)
        );
        assert_eq!(Refusal::LoweredRisk.to_string(), "it tried to lower risk.");
    }
}
