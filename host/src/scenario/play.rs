//! Playing a checked scenario on a host, step by step.

use hookline_messages::event::{CustomKey, MessageSentContext, MessageStage};
use hookline_messages::scenario::{Action, Scenario, SlashCommand, Step};

use crate::approval::ScriptedOperator;
use crate::producers::InboundMessage;
use crate::provider::ScriptedProvider;
use crate::session::{HostError, HostEvent, ManualClock, SessionCommand};
use crate::turn::UserInput;
use crate::Host;

/// What a scenario drives besides the host: the scripted model, operator and clock.
#[derive(Clone, Default)]
pub struct Script {
    /// The scripted model.
    pub provider: ScriptedProvider,
    /// The scripted operator.
    pub operator: ScriptedOperator,
    /// The clock `advanceMs` steps move (give it to [`Host::builder`]'s `clock`).
    pub clock: ManualClock,
}

/// What playing produced: every event, in order.
#[derive(Debug, Default)]
pub struct Played {
    /// The events, in order.
    pub events: Vec<HostEvent>,
}

/// Plays `scenario`'s steps on `host` (whose session must be open). Each step's model replies
/// and operator answers are queued before it runs; what a step did not use is dropped, so it
/// never answers a later step. A user step is an inbound chat message (`message:received`, and
/// `message:transcribed` with a transcript) and each model answer an outbound one
/// (`message:sent`); a command step is an inbound message whose command body is the command.
///
/// # Errors
/// [`HostError`] when a step cannot run (an unknown session for `/resume`, a store failure).
/// Events up to the failing step are in `played`.
pub async fn play(
    host: &mut Host,
    script: &Script,
    scenario: &Scenario,
    played: &mut Played,
) -> Result<(), HostError> {
    let (provider, operator) = (&script.provider, &script.operator);
    played.events.extend(host.take_events());
    for (n, step) in scenario.steps.iter().enumerate() {
        provider.push_replies(step.replies.iter().cloned());
        operator.push_answers(step.operator.iter().copied());
        let action = step.action();
        let result = match action {
            Ok(Action::User(text, mode)) => {
                let mode = if step.mode.is_some() {
                    mode
                } else {
                    host.session_mode()
                };
                user_step(host, step, text, mode, played).await
            }
            Ok(Action::Side(question)) => host.side_question(question).await.map(drop),
            Ok(Action::Command(command)) => {
                let line = step.command.clone().unwrap_or_default();
                let message = inbound(host, step, None, Some(line));
                host.inbound(message);
                command_step(host, provider, scenario, command, played).await
            }
            Ok(Action::Emit(emit)) => match CustomKey::new(emit.key.as_str()) {
                Ok(key) => host.emit_custom(key, emit.context).await,
                Err(problem) => {
                    played.events.push(HostEvent::Info {
                        text: format!("Step {} was skipped: {problem}", n + 1),
                    });
                    Ok(())
                }
            },
            Ok(Action::Advance(ms)) => {
                script.clock.advance(ms);
                played.events.push(HostEvent::Info {
                    text: format!("The clock moved forward {ms} ms."),
                });
                Ok(())
            }
            // `load` checked every step; an unchecked scenario's bad step is skipped, said so.
            Err(problem) => {
                played.events.push(HostEvent::Info {
                    text: format!("Step {} was skipped: {problem}", n + 1),
                });
                Ok(())
            }
        };
        played.events.extend(host.take_events());
        result?;
        let unused = provider.clear_replies();
        operator.clear_answers();
        if unused > 0 {
            played.events.push(HostEvent::Info {
                text: format!(
                    "Step {} left {unused} scripted model replies unused.",
                    n + 1
                ),
            });
        }
    }
    Ok(())
}

/// A user turn fed through the chat channel: received (and transcribed) before it, one
/// `message:sent` per model answer after it.
async fn user_step(
    host: &mut Host,
    step: &Step,
    text: String,
    mode: hookline_messages::prompt::PromptMode,
    played: &mut Played,
) -> Result<(), HostError> {
    let message = inbound(host, step, Some(text.clone()), None);
    let (channel_id, from) = (message.channel_id.clone(), message.from.clone());
    host.inbound(message);
    if let Some(transcript) = step.inbound.as_ref().and_then(|i| i.transcript.clone()) {
        let stage = MessageStage {
            channel_id: channel_id.clone(),
            from: Some(from.clone()),
            body: Some(text.clone()),
            ..MessageStage::default()
        };
        host.transcribed(stage, transcript);
    }
    let images = step.images.clone();
    let result = host.user_turn(UserInput { text, images, mode }).await;
    let events = host.take_events();
    let answers: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Assistant { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    played.events.extend(events);
    for content in answers {
        host.outbound(MessageSentContext {
            to: from.clone(),
            content,
            success: true,
            channel_id: channel_id.clone(),
            conversation_id: step
                .inbound
                .as_ref()
                .and_then(|i| i.conversation_id.clone()),
            ..MessageSentContext::default()
        });
    }
    result.map(drop)
}

/// The inbound chat message a step stands for: from its `inbound` channel, else from the host's
/// own chat path.
fn inbound(
    host: &Host,
    step: &Step,
    raw_body: Option<String>,
    command_body: Option<String>,
) -> InboundMessage {
    let (channel_id, from) = match &step.inbound {
        Some(spec) => (spec.channel.clone(), spec.from.clone()),
        None => {
            let sender = host.chat_origin().sender_id();
            let from = sender.unwrap_or_else(|| "operator".into());
            (host.chat_channel().to_owned(), from)
        }
    };
    InboundMessage {
        from,
        channel_id,
        command_body,
        raw_body,
        message_id: step.inbound.as_ref().and_then(|i| i.message_id.clone()),
        conversation_id: step
            .inbound
            .as_ref()
            .and_then(|i| i.conversation_id.clone()),
        ..InboundMessage::default()
    }
}

async fn command_step(
    host: &mut Host,
    provider: &ScriptedProvider,
    scenario: &Scenario,
    command: SlashCommand,
    played: &mut Played,
) -> Result<(), HostError> {
    let command = match command {
        SlashCommand::Model(name) => {
            let images = scenario.models.get(&name).is_some_and(|m| m.images);
            provider.set_takes_images(images);
            let kind = if images {
                "takes images"
            } else {
                "is text only"
            };
            played.events.push(HostEvent::Info {
                text: format!("Model '{name}' is active; it {kind}."),
            });
            SessionCommand::Model(name)
        }
        SlashCommand::Stop => {
            played.events.push(HostEvent::Info {
                text: "No turn is running; /stop stops nothing.".into(),
            });
            SessionCommand::Stop
        }
        other => SessionCommand::from(other),
    };
    host.command(command).await
}
