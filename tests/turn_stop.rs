//! `/stop` while a tool of a model answer with several calls runs: the turn ends cancelled, and
//! the allowed calls after the running one never run; each still gets a result, so the next
//! request has every tool call followed by its result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline::host::gateway::{GatewayLimits, OpenSession};
use hookline::host::provider::{Provider, ProviderError};
use hookline::host::tools::{Tool, ToolContext, ToolOutput, ToolRegistry, ToolSpec};
use hookline::host::turn::UserInput;
use hookline::host::Host;
use hookline::messages::approval::{Authority, Risk};
use hookline::messages::model::{
    FinishReason, Item, ItemBody, ModelRequest, ModelResponse, Purpose, Usage,
};
use hookline::messages::record::Record;
use hookline::messages::session::ApprovalMode;
use hookline::messages::tool::ToolProvider;
use hookline::messages::user::StopReason;
use tokio::sync::Notify;

const DEADLINE: Duration = Duration::from_secs(20);

/// Asks for three calls of `slow` in one answer, then answers with text.
struct ThreeCalls;

#[async_trait]
impl Provider for ThreeCalls {
    fn takes_images(&self) -> bool {
        false
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let answered = request
            .items
            .iter()
            .any(|item| matches!(item.body, ItemBody::ToolResult { .. }));
        let (items, finish_reason) = if answered {
            let text = ItemBody::Assistant {
                text: "done".into(),
                images: Vec::new(),
            };
            (vec![Item::new("answer", text)], FinishReason::Stop)
        } else {
            let call = |n: usize| {
                let body = ItemBody::ToolCall {
                    call_id: format!("call-{n}"),
                    name: "slow".into(),
                    arguments: serde_json::json!({}),
                };
                Item::new(format!("call-{n}"), body)
            };
            ((1..=3).map(call).collect(), FinishReason::ToolCalls)
        };
        Ok(ModelResponse {
            purpose: Purpose::Work,
            finish_reason,
            items,
            usage: Usage::default(),
        })
    }
}

/// A read-only tool the policy allows without asking: counts its runs, says when it started and
/// waits to be released.
struct Slow {
    spec: ToolSpec,
    runs: Arc<AtomicUsize>,
    started: Arc<Notify>,
    release: Arc<Notify>,
}

#[async_trait]
impl Tool for Slow {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn run(&self, _: &ToolContext, _: serde_json::Value) -> ToolOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        self.release.notified().await;
        ToolOutput::success("slow done")
    }
}

#[actix_rt::test]
async fn stop_during_a_tool_run_keeps_the_later_calls_of_the_same_answer_from_running() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, started, release) = (
        Arc::default(),
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
    );
    let mut tools = ToolRegistry::with_builtins();
    let slow = Slow {
        spec: ToolSpec {
            name: "slow".into(),
            description: "Takes its time.".into(),
            provider: ToolProvider::BuiltIn,
            risk: Risk::Read,
            authority: Authority::Workspace,
        },
        runs: Arc::clone(&runs),
        started: Arc::clone(&started),
        release: Arc::clone(&release),
    };
    tools.register(Arc::new(slow)).unwrap();
    let gateway = Host::builder()
        .tools(tools)
        .provider(Arc::new(ThreeCalls))
        .approval_mode(ApprovalMode::AskAboveRead)
        .workspace(dir.path())
        .start_gateway(GatewayLimits::default())
        .unwrap();
    let handle = gateway.open(OpenSession::default()).await.unwrap();
    let turn = {
        let handle = handle.clone();
        actix_rt::spawn(async move { handle.turn(UserInput::work("run slow three times")).await })
    };
    tokio::time::timeout(DEADLINE, started.notified())
        .await
        .expect("the first call never ran");
    handle.stop_turn();
    release.notify_one();
    let report = tokio::time::timeout(DEADLINE, turn)
        .await
        .expect("the turn did not stop")
        .unwrap()
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::Cancelled);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a call after the stop ran");
    let page = handle.records(0, 100).await.unwrap();
    let results: Vec<(String, String)> = page
        .records
        .iter()
        .filter_map(|r| match r {
            Record::ToolResult { call_id, text, .. } => Some((call_id.clone(), text.clone())),
            _ => None,
        })
        .collect();
    let stopped = "The turn was stopped before this call ran; it did not run.";
    assert_eq!(
        results,
        [
            ("call-1".to_owned(), "slow done".to_owned()),
            ("call-2".to_owned(), stopped.to_owned()),
            ("call-3".to_owned(), stopped.to_owned()),
        ]
    );
    gateway.shutdown("test", None).await.unwrap();
}
