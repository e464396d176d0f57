//! The bundled demo: a scenario and example plugins (plus one plugin-contributed tool) that
//! exercise every hook and raw hook, and a gateway event subscriber. `hookline run` with no
//! argument plays it.

mod events;
mod plugins;
mod word_count;

use std::sync::Arc;

pub use events::AUDIT_FILE;
pub use plugins::example_plugins;
pub use word_count::WordCount;

use crate::tools::{ToolError, ToolRegistry};

/// The demo scenario's JSON.
pub const DEMO_SCENARIO: &str = include_str!("demo.json");

/// The name the demo scenario goes by in messages.
pub const DEMO_NAME: &str = "<bundled demo scenario>";

/// The built-in tools plus the example plugins' tool (SPEC P1.3: hooked like any other).
///
/// # Errors
/// [`ToolError`] if a built-in already has the plugin tool's name.
pub fn example_tools() -> Result<ToolRegistry, ToolError> {
    let mut tools = ToolRegistry::with_builtins();
    tools.register(Arc::new(WordCount::new()))?;
    Ok(tools)
}
