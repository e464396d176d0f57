//! The chat's [`Operator`]: when the approval policy asks (SPEC P2.9, R4), the question is
//! printed and the next typed line answers it (`y` or `n`). The chat loop routes lines while a
//! turn runs; Ctrl-C and `/stop` refuse a pending question. A question nobody answers within
//! [`ANSWER_WAIT`] is refused: a call nobody allowed never runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookline_messages::approval::Classification;
use hookline_messages::record::Decision;
use hookline_messages::tool::ToolCall;
use tokio::sync::{mpsc, oneshot};

use super::console::Console;
use hookline_host::approval::Operator;

/// How long a question waits for its answer.
pub(super) const ANSWER_WAIT: Duration = Duration::from_secs(600);

/// Asks on the terminal.
pub(super) struct TerminalOperator {
    console: Arc<Console>,
    pending: Arc<Mutex<Option<oneshot::Sender<Decision>>>>,
    /// Tells the chat loop a question was asked (lines typed ahead may answer it).
    asked: mpsc::Sender<()>,
}

/// What the chat loop holds to answer the operator's question.
#[derive(Clone)]
pub(super) struct Answers {
    pending: Arc<Mutex<Option<oneshot::Sender<Decision>>>>,
}

impl TerminalOperator {
    /// An operator printing to `console`, the handle that answers it, and the signal of each
    /// question asked.
    pub(super) fn new(console: Arc<Console>) -> (Self, Answers, mpsc::Receiver<()>) {
        let pending = Arc::new(Mutex::new(None));
        let (asked, signal) = mpsc::channel(1);
        (
            Self {
                console,
                pending: pending.clone(),
                asked,
            },
            Answers { pending },
            signal,
        )
    }
}

impl Answers {
    fn take(&self) -> Option<oneshot::Sender<Decision>> {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Whether a question waits for an answer.
    pub(super) fn waiting(&self) -> bool {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Answers the pending question with `decision`, if one waits.
    pub(super) fn answer(&self, decision: Decision) {
        if let Some(sender) = self.take() {
            let _ = sender.send(decision);
        }
    }

    /// Refuses the pending question, if any.
    pub(super) fn refuse(&self) {
        self.answer(Decision::Deny);
    }
}

/// A typed answer: `y`/`yes` allows, `n`/`no` refuses, anything else is no answer.
pub(super) fn yes_no(line: &str) -> Option<Decision> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Decision::Allow),
        "n" | "no" => Some(Decision::Deny),
        _ => None,
    }
}

#[async_trait]
impl Operator for TerminalOperator {
    async fn decide(&self, call: &ToolCall, classification: &Classification) -> Decision {
        let (tx, rx) = oneshot::channel();
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        self.console.prompt(&format!(
            "approve {} {} (risk {:?}, authority {:?})? [y/n] ",
            call.name, call.arguments, classification.risk, classification.authority
        ));
        // A full signal queue already says "a question waits".
        let _ = self.asked.try_send(());
        let decision = tokio::time::timeout(ANSWER_WAIT, rx).await;
        // Whatever happened, no answer is pending any more.
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match decision {
            Ok(Ok(decision)) => decision,
            Ok(Err(_)) | Err(_) => Decision::Deny,
        }
    }
}
