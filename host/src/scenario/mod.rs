//! Scenarios: reading and checking a scenario file (format in `docs/scenario.md`), and playing it
//! on a [`Host`](crate::Host). Bad input is a [`ScenarioError`] naming the file and the problem.

mod play;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hookline_messages::scenario::{Action, ModelSpec, Scenario, SlashCommand};

use crate::tools::ToolRegistry;

pub use play::{play, Played, Script};

/// The model a scenario gets when it names none.
pub const DEFAULT_MODEL: &str = "scripted";

/// A scenario that cannot be played: which file, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", file.display())]
pub struct ScenarioError {
    /// The scenario file.
    pub file: PathBuf,
    /// The problem, in English.
    pub problem: String,
}

/// Reads and checks the scenario at `file`.
///
/// # Errors
/// [`ScenarioError`] for an unreadable file, bad JSON, an unknown step or command, an unknown
/// model, or a tool call naming a tool `tools` does not have.
pub fn load(file: &Path, tools: &ToolRegistry) -> Result<Scenario, ScenarioError> {
    use std::io::Read;
    let cannot = |e: std::io::Error| error(file, format!("cannot read it: {e}"));
    let mut text = String::new();
    // Bounded before parsing: a huge file is refused, not read whole.
    std::fs::File::open(file)
        .map_err(cannot)?
        .take(MAX_SCENARIO_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(error(
            file,
            format!("it is over {MAX_SCENARIO_BYTES} bytes"),
        ));
    }
    parse(file, &text, tools)
}

/// The largest scenario file read.
pub const MAX_SCENARIO_BYTES: u64 = 16 * 1024 * 1024;

/// Parses and checks scenario `text`; `file` names it in errors.
///
/// # Errors
/// As [`load`].
pub fn parse(file: &Path, text: &str, tools: &ToolRegistry) -> Result<Scenario, ScenarioError> {
    let mut scenario: Scenario =
        serde_json::from_str(text).map_err(|e| error(file, format!("bad JSON: {e}")))?;
    if scenario.models.is_empty() {
        scenario.models = BTreeMap::from([(DEFAULT_MODEL.to_owned(), ModelSpec { images: true })]);
    }
    if let Some(model) = &scenario.model {
        known_model(&scenario, model).map_err(|p| error(file, p))?;
    }
    for (n, step) in scenario.steps.iter().enumerate() {
        check_step(&scenario, step, tools)
            .map_err(|p| error(file, format!("step {}: {p}", n + 1)))?;
    }
    Ok(scenario)
}

/// The model a scenario starts with.
pub fn first_model(scenario: &Scenario) -> ModelSpec {
    scenario
        .model
        .as_ref()
        .and_then(|name| scenario.models.get(name))
        .or_else(|| scenario.models.values().next())
        .copied()
        .unwrap_or_default()
}

fn check_step(
    scenario: &Scenario,
    step: &hookline_messages::scenario::Step,
    tools: &ToolRegistry,
) -> Result<(), String> {
    match step.action()? {
        Action::Command(SlashCommand::Model(name)) => known_model(scenario, &name)?,
        Action::Emit(emit) => {
            // SPEC G4.2: a custom emit never spells a core key or family.
            hookline_messages::event::CustomKey::new(emit.key.as_str())
                .map_err(|e| format!("cannot emit '{}': {e}", emit.key))?;
        }
        _ => {}
    }
    if step.inbound.is_some() && step.user.is_none() {
        return Err("only a user step may come from an inbound channel".into());
    }
    for call in step.replies.iter().flat_map(|r| &r.tool_calls) {
        if tools.get(&call.name).is_none() {
            return Err(format!("the tool '{}' does not exist", call.name));
        }
    }
    Ok(())
}

fn known_model(scenario: &Scenario, name: &str) -> Result<(), String> {
    if scenario.models.contains_key(name) {
        Ok(())
    } else {
        Err(format!(
            "the model '{name}' is not among the scenario's models"
        ))
    }
}

fn error(file: &Path, problem: String) -> ScenarioError {
    ScenarioError {
        file: file.to_owned(),
        problem,
    }
}
