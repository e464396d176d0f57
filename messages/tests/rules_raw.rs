//! The text and approval raw hooks through [`Hook::admit`] (SPEC R2, R3, R4, R5.8 to R5.10).

mod common;

use hookline_messages::approval::{Authority, Classification, Risk};
use hookline_messages::compaction::{CompactionPhase, CompactionText};
use hookline_messages::hook::{Applied, Hook, RewriteApproval, RewriteCompaction, RewritePrompt};
use hookline_messages::prompt::{PromptMode, SystemText};

#[test]
fn rewrite_prompt_takes_any_string_for_every_mode() {
    for mode in [
        PromptMode::Work,
        PromptMode::Plan,
        PromptMode::Review,
        PromptMode::Compaction,
    ] {
        let before = SystemText {
            mode,
            text: "Composed.".into(),
        };
        for text in ["", "   ", "Something else entirely."] {
            let proposed = SystemText {
                mode,
                text: text.into(),
            };
            assert_eq!(
                RewritePrompt::admit(&(), &before, proposed.clone()),
                Ok(Applied::plain(proposed)),
                "used as returned, not trimmed"
            );
        }
        let other = if mode == PromptMode::Work {
            PromptMode::Plan
        } else {
            PromptMode::Work
        };
        let moved = SystemText {
            mode: other,
            text: "x".into(),
        };
        let refused = RewritePrompt::admit(&(), &before, moved).map_err(|r| r.to_string());
        assert_eq!(refused, Err("it changed the prompt mode.".to_owned()));
    }
}

#[test]
fn rewrite_compaction_takes_any_string_for_both_phases() {
    for phase in [CompactionPhase::Prompt, CompactionPhase::Summary] {
        let before = CompactionText {
            phase,
            text: "Fold this.".into(),
        };
        for text in ["", "Other words."] {
            let proposed = CompactionText {
                phase,
                text: text.into(),
            };
            assert_eq!(
                RewriteCompaction::admit(&(), &before, proposed.clone()),
                Ok(Applied::plain(proposed))
            );
        }
        let other = if phase == CompactionPhase::Prompt {
            CompactionPhase::Summary
        } else {
            CompactionPhase::Prompt
        };
        let moved = CompactionText {
            phase: other,
            text: "x".into(),
        };
        let refused = RewriteCompaction::admit(&(), &before, moved).map_err(|r| r.to_string());
        assert_eq!(refused, Err("it changed the compaction phase.".to_owned()));
    }
}

#[test]
fn rewrite_approval_may_set_anything() {
    let before = Classification {
        risk: Risk::Critical,
        authority: Authority::Host,
        summary: "rm -rf".into(),
        requires_prompt: true,
    };
    for risk in [Risk::Read, Risk::Write, Risk::Execute, Risk::Critical] {
        for authority in [Authority::Workspace, Authority::Host] {
            for requires_prompt in [false, true] {
                let proposed = Classification {
                    risk,
                    authority,
                    summary: String::new(),
                    requires_prompt,
                };
                assert_eq!(
                    RewriteApproval::admit(&(), &before, proposed.clone()),
                    Ok(Applied::plain(proposed))
                );
            }
        }
    }
}
