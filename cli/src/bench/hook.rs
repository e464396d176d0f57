//! The hooks a benchmark can call, each with its starting value and its direct-loop baseline.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hookline_actors::{Outcome, Pipeline, PipelineError, SessionRef, Submitted};
use hookline_messages::hook::{OnPrompt, OnToolCall, OnUserMessage};
use hookline_messages::prompt::{Prompt, PromptMode};
use hookline_messages::tool::{ToolCall, ToolProvider};
use hookline_messages::user::UserMessage;
use serde_json::json;

use super::workload::{Appender, DirectAppender, PAYLOAD};

/// A hook the benchmark calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BenchHook {
    /// `on_user_message` on the ~64-byte [`PAYLOAD`].
    #[default]
    OnUserMessage,
    /// `on_prompt` on a work prompt whose text is [`PAYLOAD`].
    OnPrompt,
    /// `on_tool_call` on a `read_file` call.
    OnToolCall,
}

impl BenchHook {
    /// The hook's wire name.
    pub fn name(self) -> &'static str {
        match self {
            Self::OnUserMessage => "on_user_message",
            Self::OnPrompt => "on_prompt",
            Self::OnToolCall => "on_tool_call",
        }
    }

    /// Makes one call of this hook through `pipeline` for `session` (an id, or the key of an
    /// opened session).
    ///
    /// # Errors
    /// The pipeline's error.
    pub async fn call(
        self,
        pipeline: &Pipeline,
        session: impl SessionRef,
    ) -> Result<(), PipelineError> {
        match self {
            Self::OnUserMessage => pipeline
                .call::<OnUserMessage>(session, UserMessage::new(PAYLOAD))
                .await
                .map(drop),
            Self::OnPrompt => pipeline.call::<OnPrompt>(session, prompt()).await.map(drop),
            Self::OnToolCall => pipeline
                .call::<OnToolCall>(session, tool_call())
                .await
                .map(drop),
        }
    }

    /// Admits and sends one call of this hook for `session` now ([`Pipeline::submit`]); the
    /// returned future waits for its answer. An open loop issues its calls with it, so each call
    /// is admitted (or shed) when it is due, not when the driver next polls it.
    pub fn issue(
        self,
        pipeline: &Pipeline,
        session: impl SessionRef,
    ) -> impl std::future::Future<Output = Result<(), PipelineError>> + 'static {
        let issued = match self {
            Self::OnUserMessage => {
                Issued::User(pipeline.submit::<OnUserMessage>(session, UserMessage::new(PAYLOAD)))
            }
            Self::OnPrompt => Issued::Prompt(pipeline.submit::<OnPrompt>(session, prompt())),
            Self::OnToolCall => Issued::Tool(pipeline.submit::<OnToolCall>(session, tool_call())),
        };
        async move {
            match issued {
                Issued::User(answer) => answer.await.map(drop),
                Issued::Prompt(answer) => answer.await.map(drop),
                Issued::Tool(answer) => answer.await.map(drop),
            }
        }
    }

    /// Makes one call of this hook for each of `sessions` through `pipeline` with
    /// [`Pipeline::call_many`]: answered as one batch. Returns the calls answered.
    ///
    /// # Errors
    /// The first call's error other than `Overloaded`; `Overloaded` calls are counted in `shed`.
    pub async fn call_many<S: SessionRef + Clone>(
        self,
        pipeline: &Pipeline,
        sessions: &[S],
        shed: &mut u64,
    ) -> Result<u64, PipelineError> {
        // Counted where they land: no second vector of results per batch.
        match self {
            Self::OnUserMessage => {
                let calls = sessions.iter().map(|s| (s, UserMessage::new(PAYLOAD)));
                tally(pipeline.call_many::<OnUserMessage>(calls).await, shed)
            }
            Self::OnPrompt => {
                let calls = sessions.iter().map(|s| (s, prompt()));
                tally(pipeline.call_many::<OnPrompt>(calls).await, shed)
            }
            Self::OnToolCall => {
                let calls = sessions.iter().map(|s| (s, tool_call()));
                tally(pipeline.call_many::<OnToolCall>(calls).await, shed)
            }
        }
    }

    /// One call of this hook for each of `sessions`, with one [`Pipeline::call_many`]: each
    /// call's result, in order.
    pub async fn call_each<S: SessionRef + Clone>(
        self,
        pipeline: &Pipeline,
        sessions: &[S],
    ) -> Vec<Result<(), PipelineError>> {
        match self {
            Self::OnUserMessage => {
                let calls = sessions.iter().map(|s| (s, UserMessage::new(PAYLOAD)));
                let answers = pipeline.call_many::<OnUserMessage>(calls).await;
                answers.into_iter().map(|a| a.map(drop)).collect()
            }
            Self::OnPrompt => {
                let calls = sessions.iter().map(|s| (s, prompt()));
                let answers = pipeline.call_many::<OnPrompt>(calls).await;
                answers.into_iter().map(|a| a.map(drop)).collect()
            }
            Self::OnToolCall => {
                let calls = sessions.iter().map(|s| (s, tool_call()));
                let answers = pipeline.call_many::<OnToolCall>(calls).await;
                answers.into_iter().map(|a| a.map(drop)).collect()
            }
        }
    }

    /// Runs `calls` calls of this hook through `plugins` appenders in a plain loop over
    /// `Vec<Box<dyn _>>` on this thread: the physical limit. Returns the time per call.
    pub fn direct_baseline(self, plugins: usize, calls: u64) -> Duration {
        let chain: Vec<Box<dyn DirectAppender>> = (0..plugins)
            .map(|i| Box::new(Appender::new(i)) as Box<dyn DirectAppender>)
            .collect();
        let started = Instant::now();
        for _ in 0..calls {
            match self {
                Self::OnUserMessage => {
                    let value = chain
                        .iter()
                        .fold(UserMessage::new(PAYLOAD), |v, p| p.on_user_message(v));
                    black_box(value);
                }
                Self::OnPrompt => {
                    black_box(chain.iter().fold(prompt(), |v, p| p.on_prompt(v)));
                }
                Self::OnToolCall => {
                    black_box(chain.iter().fold(tool_call(), |v, p| p.on_tool_call(v)));
                }
            }
        }
        started.elapsed() / u32::try_from(calls.max(1)).unwrap_or(u32::MAX)
    }
}

/// The calls of `answers` answered; `Overloaded` ones counted in `shed`.
///
/// # Errors
/// The first error other than `Overloaded`.
fn tally<V>(
    answers: Vec<Result<Outcome<V>, PipelineError>>,
    shed: &mut u64,
) -> Result<u64, PipelineError> {
    let mut done = 0;
    // Read where they lie (an outcome is 150 bytes: moving each out would copy it).
    for answer in &answers {
        match answer {
            Ok(_) => done += 1,
            Err(PipelineError::Overloaded) => *shed += 1,
            Err(error) => return Err(*error),
        }
    }
    Ok(done)
}

/// A call issued by [`BenchHook::issue`], whichever hook it is.
enum Issued {
    User(Submitted<UserMessage>),
    Prompt(Submitted<Prompt>),
    Tool(Submitted<ToolCall>),
}

fn prompt() -> Prompt {
    Prompt::new(PromptMode::Work, PAYLOAD)
}

fn tool_call() -> ToolCall {
    ToolCall {
        call_id: "call-1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "src/parser.rs"}),
        provider: ToolProvider::BuiltIn,
    }
}
