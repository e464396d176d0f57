//! [`ScriptedProvider`], the embedded default, whose replies come from a scenario and which
//! records every outbound request exactly as sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use hookline_messages::model::{Item, ItemBody, ModelRequest, ModelResponse};
use hookline_messages::scenario::ScriptedReply;

use super::{Provider, ProviderError};

#[derive(Default)]
struct Script {
    replies: VecDeque<ScriptedReply>,
    sent: Vec<ModelRequest>,
    takes_images: bool,
}

/// A provider that answers from a script and records each request it is sent. Cloning shares the
/// script.
#[derive(Clone, Default)]
pub struct ScriptedProvider {
    script: Arc<Mutex<Script>>,
}

impl ScriptedProvider {
    /// A provider with no replies whose model takes images or not.
    pub fn new(takes_images: bool) -> Self {
        let provider = Self::default();
        provider.lock().takes_images = takes_images;
        provider
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        // A poisoned lock only means another thread panicked mid-push; the data is still usable.
        self.script
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues replies for the next calls.
    pub fn push_replies(&self, replies: impl IntoIterator<Item = ScriptedReply>) {
        self.lock().replies.extend(replies);
    }

    /// Drops replies the last step did not use, so they never answer a later step's calls.
    pub fn clear_replies(&self) -> usize {
        let mut script = self.lock();
        let left = script.replies.len();
        script.replies.clear();
        left
    }

    /// Switches the model's image support (`/model`).
    pub fn set_takes_images(&self, takes_images: bool) {
        self.lock().takes_images = takes_images;
    }

    /// Every request sent so far, exactly as sent.
    pub fn sent(&self) -> Vec<ModelRequest> {
        self.lock().sent.clone()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn takes_images(&self) -> bool {
        self.lock().takes_images
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let reply = {
            let mut script = self.lock();
            script.sent.push(request.clone());
            script.replies.pop_front()
        };
        let reply = reply.ok_or(ProviderError::NoReplyLeft)?;
        if reply.stop {
            return Err(ProviderError::Stopped);
        }
        if let Some(error) = &reply.fail {
            return Err(ProviderError::Failed(error.clone()));
        }
        Ok(response(request, &reply))
    }
}

/// The response a scripted reply stands for. Its item ids (`resp-<k>`) name items of the
/// response only: the host gives stored records their own ids when it builds a request.
fn response(request: &ModelRequest, reply: &ScriptedReply) -> ModelResponse {
    let mut items = Vec::new();
    let id = |k: usize| format!("resp-{}", k);
    if let Some(reasoning) = &reply.reasoning {
        items.push(Item::new(
            id(items.len()),
            ItemBody::Reasoning {
                text: reasoning.clone(),
                provider_state: None,
            },
        ));
    }
    if !reply.text.is_empty() {
        items.push(Item::new(
            id(items.len()),
            ItemBody::Assistant {
                text: reply.text.clone(),
                images: Vec::new(),
            },
        ));
    }
    for call in &reply.tool_calls {
        items.push(Item::new(
            id(items.len()),
            ItemBody::ToolCall {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
        ));
    }
    ModelResponse {
        purpose: request.purpose,
        finish_reason: reply.finish_reason(),
        items,
        usage: reply.usage,
    }
}
