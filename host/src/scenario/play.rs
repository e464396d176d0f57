//! Playing a checked scenario on a host, step by step.

use hookline_messages::scenario::{Action, Scenario, SlashCommand};
use hookline_messages::session::SessionId;

use crate::approval::ScriptedOperator;
use crate::provider::ScriptedProvider;
use crate::session::{Event, Host, HostError, SessionCommand};
use crate::turn::UserInput;

/// What playing produced: every event, in order.
#[derive(Debug, Default)]
pub struct Played {
    /// The events, in order.
    pub events: Vec<Event>,
}

/// Plays `scenario`'s steps on `host` (whose session must be open). Each step's model replies
/// and operator answers are queued before it runs; what a step did not use is dropped, so it
/// never answers a later step.
///
/// # Errors
/// [`HostError`] when a step cannot run (an unknown session for `/resume`, a store failure).
/// Events up to the failing step are in `played`.
pub async fn play(
    host: &mut Host,
    provider: &ScriptedProvider,
    operator: &ScriptedOperator,
    scenario: &Scenario,
    played: &mut Played,
) -> Result<(), HostError> {
    played.events.extend(host.take_events());
    for (n, step) in scenario.steps.iter().enumerate() {
        provider.push_replies(step.replies.iter().cloned());
        operator.push_answers(step.operator.iter().copied());
        let action = step.action();
        let result = match action {
            Ok(Action::User(text, mode)) => host
                .user_turn(UserInput {
                    text,
                    images: step.images.clone(),
                    mode,
                })
                .await
                .map(drop),
            Ok(Action::Side(question)) => host.side_question(question).await.map(drop),
            Ok(Action::Command(command)) => {
                command_step(host, provider, scenario, command, played).await
            }
            // `load` checked every step; an unchecked scenario's bad step is skipped, said so.
            Err(problem) => {
                played.events.push(Event::Info {
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
            played.events.push(Event::Info {
                text: format!(
                    "Step {} left {unused} scripted model replies unused.",
                    n + 1
                ),
            });
        }
    }
    Ok(())
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
            played.events.push(Event::Info {
                text: format!("Model '{name}' is active; it {kind}."),
            });
            return Ok(());
        }
        SlashCommand::Stop => {
            played.events.push(Event::Info {
                text: "No turn is running; /stop does nothing.".into(),
            });
            return Ok(());
        }
        SlashCommand::New => SessionCommand::New,
        SlashCommand::Clear => SessionCommand::Clear,
        SlashCommand::Resume(id) => SessionCommand::Resume(SessionId::new(id)),
        SlashCommand::Fork => SessionCommand::Fork,
        SlashCommand::Cd(dir) => SessionCommand::Cd(dir.into()),
        SlashCommand::Space(name) => SessionCommand::Space(name),
        SlashCommand::Compact => SessionCommand::Compact,
    };
    host.command(command).await
}
