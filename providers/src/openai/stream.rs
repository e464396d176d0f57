//! Streaming: server-sent events read line by line, each `data:` chunk folded into one
//! [`Answer`], each text delta offered to the caller as it arrives (issue 12 item 3).
//!
//! The stream must end with `data: [DONE]` or a chunk carrying a finish reason; one that stops
//! before either was cut, and is an error rather than a shorter answer.

use super::mapping::{Answer, CallParts, MAX_TOOL_CALLS};
use super::wire::Chunk;
use crate::family::Assemble;
use crate::sse::SseReader;
use hookline_host::provider::{OnText, ProviderError};

/// Reads server-sent events from byte pieces (the one reader both families share, with its
/// bounds) and assembles the answer.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    events: SseReader,
    fold: Fold,
}

/// The answer so far, folded from each event's chunk.
#[derive(Debug, Default)]
struct Fold {
    answer: Answer,
    saw_choice: bool,
    done: bool,
}

impl Assemble for Assembler {
    type Answer = Answer;

    /// Feeds the next piece of the body; text deltas go to `on_text`.
    fn feed(&mut self, bytes: &[u8], on_text: OnText<'_>) -> Result<(), ProviderError> {
        let fold = &mut self.fold;
        self.events
            .feed(bytes, &mut |data| fold.event(&data, on_text))
    }

    /// Whether the stream said it is complete.
    fn is_done(&self) -> bool {
        self.fold.done
    }

    /// The answer, once the body has ended.
    fn finish(mut self, on_text: OnText<'_>) -> Result<Answer, ProviderError> {
        let fold = &mut self.fold;
        self.events.finish(&mut |data| fold.event(&data, on_text))?;
        if !self.fold.done {
            return Err(ProviderError::Malformed(
                "the stream ended before the answer was complete".into(),
            ));
        }
        if !self.fold.saw_choice {
            return Err(ProviderError::Malformed(
                "the stream held no choices".into(),
            ));
        }
        Ok(self.fold.answer)
    }
}

impl Fold {
    /// One event's data: `[DONE]`, or a chunk of the answer.
    fn event(&mut self, data: &str, on_text: OnText<'_>) -> Result<(), ProviderError> {
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ProviderError::Malformed(format!("a stream chunk is not the JSON expected ({e})"))
        })?;
        self.apply(chunk, on_text)
    }

    fn apply(&mut self, chunk: Chunk, on_text: OnText<'_>) -> Result<(), ProviderError> {
        if let Some(error) = chunk.error {
            return Err(ProviderError::Failed(error.message().to_owned()));
        }
        if let Some(usage) = chunk.usage {
            self.answer.usage = Some(usage);
        }
        // hookline asks for one choice; others, if a server sends them, are not ours.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            self.saw_choice = true;
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.reasoning_content {
                    self.answer.reasoning.push_str(&text);
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    on_text(&text);
                    self.answer.text.push_str(&text);
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    self.tool_call_delta(call)?;
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.answer.finish_reason = Some(reason);
                // Servers that skip `[DONE]` still end with a finish reason.
                self.done = true;
            }
        }
        Ok(())
    }

    /// Adds one fragment to call `index`: the id and name come once, the arguments in pieces.
    fn tool_call_delta(&mut self, delta: super::wire::ToolCallDelta) -> Result<(), ProviderError> {
        if delta.index >= MAX_TOOL_CALLS {
            return Err(ProviderError::Unrepresentable(format!(
                "the answer has more than {MAX_TOOL_CALLS} tool calls"
            )));
        }
        let calls = &mut self.answer.tool_calls;
        if calls.len() <= delta.index {
            calls.resize_with(delta.index + 1, CallParts::default);
        }
        let call = &mut calls[delta.index];
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id.get_or_insert(id);
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                call.name.get_or_insert(name);
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Mutex;

    fn assemble(body: &str, split: usize) -> (Result<Answer, ProviderError>, Vec<String>) {
        let seen = Mutex::new(Vec::new());
        let on_text = |t: &str| seen.lock().unwrap().push(t.to_owned());
        let mut assembler = Assembler::default();
        let mut result = Ok(());
        for piece in body.as_bytes().chunks(split) {
            result = result.and_then(|()| assembler.feed(piece, &on_text));
        }
        let answer = result.and_then(|()| assembler.finish(&on_text));
        (answer, seen.into_inner().unwrap())
    }

    const BODY: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n\
: keep-alive\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\",\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\": \\\"a\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n\
data: [DONE]\n\n";

    #[test]
    fn chunks_split_anywhere_assemble_to_the_same_answer() {
        for split in [1, 2, 3, 7, 64, BODY.len()] {
            let (answer, seen) = assemble(BODY, split);
            let answer = answer.unwrap();
            assert_eq!(answer.text, "Hello");
            assert_eq!(seen, vec!["Hel", "lo"]);
            assert_eq!(answer.tool_calls.len(), 1);
            assert_eq!(answer.tool_calls[0].arguments, "{\"path\": \"a\"}");
            assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
            assert_eq!(answer.usage.unwrap().prompt_tokens, Some(5));
        }
    }

    #[test]
    fn a_cut_stream_is_an_error() {
        let cut = &BODY[..BODY.find("finish_reason").unwrap() - 20];
        let cut = &cut[..cut.rfind("\n\n").unwrap() + 2];
        let (answer, seen) = assemble(cut, 5);
        assert_eq!(
            answer.unwrap_err().to_string(),
            "the provider's reply is malformed: the stream ended before the answer was complete"
        );
        assert_eq!(seen, vec!["Hel", "lo"]);
    }

    #[test]
    fn a_chunk_that_is_not_json_is_an_error() {
        let (answer, _) = assemble("data: {\"choices\": [\n\n", 4);
        assert!(answer.unwrap_err().to_string().starts_with(
            "the provider's reply is malformed: a stream chunk is not the JSON expected"
        ));
    }

    #[test]
    fn an_error_event_fails_the_call_with_its_message() {
        let (answer, _) = assemble(
            "data: {\"error\":{\"message\":\"model overloaded\"}}\n\n",
            9,
        );
        assert_eq!(
            answer.unwrap_err(),
            ProviderError::Failed("model overloaded".into())
        );
    }
}
