//! Streaming for the Messages API: each event (`message_start`, `content_block_start` /
//! `_delta` / `_stop`, `message_delta`, `message_stop`, `ping`, `error`) folded into one
//! [`Answer`], each `text_delta` offered to the caller as it arrives, `input_json_delta` pieces
//! joined into their tool call's input.
//!
//! The stream must end with `message_stop`; one that stops before it was cut, and is an error
//! rather than a shorter answer. An `error` event fails the call with its message.

use super::mapping::{Answer, CallParts, MAX_BLOCKS};
use super::wire::{BlockOut, Delta, Event, UsageIn};
use crate::family::Assemble;
use crate::sse::SseReader;
use hookline_host::provider::{OnText, ProviderError};

/// What a block index stands for.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Text,
    Thinking,
    /// The tool call at this position of the answer's calls.
    Call(usize),
    Ignored,
}

/// Folds a stream's events into the answer.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    reader: SseReader,
    answer: Answer,
    slots: Vec<Slot>,
    started: bool,
    done: bool,
}

impl Assemble for Assembler {
    type Answer = Answer;

    /// Feeds the next piece of the body; text deltas go to `on_text`.
    fn feed(&mut self, bytes: &[u8], on_text: OnText<'_>) -> Result<(), ProviderError> {
        let Self {
            reader,
            answer,
            slots,
            started,
            done,
        } = self;
        let mut state = State {
            answer,
            slots,
            started,
            done,
        };
        reader.feed(bytes, &mut |data| state.event(&data, on_text))
    }

    /// Whether the stream said it is complete.
    fn is_done(&self) -> bool {
        self.done
    }

    /// The answer, once the body has ended.
    fn finish(mut self, on_text: OnText<'_>) -> Result<Answer, ProviderError> {
        let mut state = State {
            answer: &mut self.answer,
            slots: &mut self.slots,
            started: &mut self.started,
            done: &mut self.done,
        };
        self.reader
            .finish(&mut |data| state.event(&data, on_text))?;
        if !self.done {
            return Err(ProviderError::Malformed(
                "the stream ended before the answer was complete".into(),
            ));
        }
        Ok(self.answer)
    }
}

/// The assembler's state apart from its reader (borrowed while the reader hands out events).
struct State<'a> {
    answer: &'a mut Answer,
    slots: &'a mut Vec<Slot>,
    started: &'a mut bool,
    done: &'a mut bool,
}

impl State<'_> {
    fn event(&mut self, data: &str, on_text: OnText<'_>) -> Result<(), ProviderError> {
        let event: Event = serde_json::from_str(data).map_err(|e| {
            ProviderError::Malformed(format!("a stream event is not the JSON expected ({e})"))
        })?;
        match event {
            Event::Error { error } => {
                return Err(ProviderError::Failed(error.message().to_owned()))
            }
            Event::Ping => {}
            Event::MessageStart { message } => {
                *self.started = true;
                self.usage(message.usage);
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block)?,
            Event::ContentBlockDelta { index, delta } => self.delta(index, delta, on_text)?,
            Event::ContentBlockStop { .. } => {}
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.answer.stop_reason = Some(reason);
                }
                self.usage(usage);
            }
            Event::MessageStop => {
                if !*self.started {
                    return Err(ProviderError::Malformed(
                        "the stream ended a message it never started".into(),
                    ));
                }
                *self.done = true;
            }
        }
        Ok(())
    }

    /// Counts reported later replace earlier ones (`message_delta` holds the final output count).
    fn usage(&mut self, usage: Option<UsageIn>) {
        let Some(usage) = usage else { return };
        let total = self.answer.usage.get_or_insert_with(UsageIn::default);
        if usage.input_tokens.is_some() {
            total.input_tokens = usage.input_tokens;
        }
        if usage.output_tokens.is_some() {
            total.output_tokens = usage.output_tokens;
        }
    }

    fn start(&mut self, index: usize, block: BlockOut) -> Result<(), ProviderError> {
        if index >= MAX_BLOCKS {
            return Err(ProviderError::Unrepresentable(format!(
                "the answer has more than {MAX_BLOCKS} content blocks"
            )));
        }
        let slot = match block {
            BlockOut::Text { text } => {
                self.answer.text.push_str(&text);
                Slot::Text
            }
            BlockOut::Thinking { thinking } => {
                self.answer.reasoning.push_str(&thinking);
                Slot::Thinking
            }
            BlockOut::ToolUse { id, name, input } => {
                self.answer.tool_calls.push(CallParts {
                    id,
                    name,
                    input,
                    partial_json: String::new(),
                });
                Slot::Call(self.answer.tool_calls.len() - 1)
            }
            BlockOut::Other => Slot::Ignored,
        };
        if self.slots.len() <= index {
            self.slots.resize(index + 1, Slot::Ignored);
        }
        self.slots[index] = slot;
        Ok(())
    }

    fn delta(
        &mut self,
        index: usize,
        delta: Delta,
        on_text: OnText<'_>,
    ) -> Result<(), ProviderError> {
        let slot = self.slots.get(index).copied().ok_or_else(|| {
            ProviderError::Malformed(format!(
                "a delta came for block {index}, which never started"
            ))
        })?;
        match (slot, delta) {
            (Slot::Text, Delta::Text { text }) => {
                if !text.is_empty() {
                    on_text(&text);
                    self.answer.text.push_str(&text);
                }
            }
            (Slot::Thinking, Delta::Thinking { thinking }) => {
                self.answer.reasoning.push_str(&thinking);
            }
            (Slot::Call(at), Delta::InputJson { partial_json }) => {
                if let Some(call) = self.answer.tool_calls.get_mut(at) {
                    call.partial_json.push_str(&partial_json);
                }
            }
            (_, Delta::Other) | (Slot::Ignored, _) => {}
            (_, _) => {
                return Err(ProviderError::Malformed(format!(
                    "block {index} got a delta of another kind"
                )))
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

    const BODY: &str = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: ping\n\
data: {\"type\":\"ping\"}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read_file\",\"input\":{}}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"pa\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"th\\\": \\\"a\\\"}\"}}\n\n\
data: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";

    #[test]
    fn events_split_anywhere_assemble_to_the_same_answer() {
        for split in [1, 2, 3, 7, 64, BODY.len()] {
            let (answer, seen) = assemble(BODY, split);
            let answer = answer.unwrap();
            assert_eq!(answer.text, "Hello");
            assert_eq!(seen, vec!["Hel", "lo"]);
            assert_eq!(answer.tool_calls.len(), 1);
            assert_eq!(answer.tool_calls[0].partial_json, "{\"path\": \"a\"}");
            assert_eq!(answer.stop_reason.as_deref(), Some("tool_use"));
            let usage = answer.usage.unwrap();
            assert_eq!(
                (usage.input_tokens, usage.output_tokens),
                (Some(25), Some(15))
            );
        }
    }

    #[test]
    fn a_stream_cut_mid_event_is_an_error() {
        let cut = &BODY[..BODY.find("message_delta").unwrap() + 20];
        let (answer, seen) = assemble(cut, 5);
        assert_eq!(
            answer.unwrap_err().to_string(),
            "the provider's reply is malformed: a stream event is not the JSON expected (EOF while parsing a string at line 1 column 29)"
        );
        assert_eq!(seen, vec!["Hel", "lo"]);
        // Cut between events: no message_stop.
        let cut = &BODY[..BODY.find("event: message_stop").unwrap()];
        assert_eq!(
            assemble(cut, 9).0.unwrap_err().to_string(),
            "the provider's reply is malformed: the stream ended before the answer was complete"
        );
    }

    #[test]
    fn an_error_event_fails_the_call_with_its_message() {
        let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let (answer, _) = assemble(body, 9);
        assert_eq!(
            answer.unwrap_err(),
            ProviderError::Failed("Overloaded".into())
        );
    }
}
