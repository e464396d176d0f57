//! Fail-closed guards (operator opt-in): the plugins whose `on_tool_call` or `on_approval` hook,
//! when it fails, denies the tool call instead of being skipped with a note (the default of
//! SPEC P1.4).

use std::collections::HashSet;
use std::sync::Arc;

use hookline_actors::plugin::PluginRegistration;
use hookline_messages::hook::HookKind;

/// The hooks a fail-closed mark guards; a mark on another hook changes nothing.
pub const GUARD_HOOKS: [HookKind; 2] = [HookKind::OnToolCall, HookKind::OnApproval];

/// Which plugins are fail-closed on which guard hook.
#[derive(Clone, Debug, Default)]
pub(crate) struct Guards {
    tool_call: HashSet<Arc<str>>,
    approval: HashSet<Arc<str>>,
}

impl Guards {
    /// The marks of `plugins` (see [`PluginRegistration::fail_closed`]).
    pub(crate) fn of(plugins: &[PluginRegistration]) -> Self {
        let mut guards = Self::default();
        for plugin in plugins {
            let marked = plugin.fail_closed_hooks();
            let name: Arc<str> = plugin.name().into();
            if marked.contains(HookKind::OnToolCall) {
                guards.tool_call.insert(name.clone());
            }
            if marked.contains(HookKind::OnApproval) {
                guards.approval.insert(name);
            }
        }
        guards
    }

    /// The first plugin among `failed` (in load order) that is fail-closed on `hook`.
    pub(crate) fn tripped<'a>(
        &self,
        hook: HookKind,
        failed: impl IntoIterator<Item = &'a Arc<str>>,
    ) -> Option<Arc<str>> {
        let marked = match hook {
            HookKind::OnToolCall => &self.tool_call,
            HookKind::OnApproval => &self.approval,
            _ => return None,
        };
        failed
            .into_iter()
            .find(|name| marked.contains(*name))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_marked_plugins_on_guard_hooks_trip() {
        let plugins = [
            PluginRegistration::new("guard").fail_closed(HookKind::OnToolCall),
            PluginRegistration::new("prompt").fail_closed(HookKind::OnPrompt),
            PluginRegistration::new("plain"),
        ];
        let guards = Guards::of(&plugins);
        let failed: Vec<Arc<str>> = vec!["plain".into(), "guard".into(), "prompt".into()];
        assert_eq!(
            guards.tripped(HookKind::OnToolCall, &failed).as_deref(),
            Some("guard")
        );
        assert_eq!(guards.tripped(HookKind::OnApproval, &failed), None);
        assert_eq!(guards.tripped(HookKind::OnPrompt, &failed), None);
    }
}
