//! `gateway-audit`: the demo's gateway event subscriber. It subscribes to a family
//! (`command`), exact keys (`session:compact:after`, `agent:bootstrap`, `acme:deployed`, a custom
//! key the demo emits explicitly) and `session:compact`, which the gateway never emits, so the
//! load warning shows (SPEC G1.2, G1.4, G4.1, G4.2).

use async_trait::async_trait;
use hookline_actors::events::{EventHandler, EventReply};
use hookline_actors::plugin::HookResult;
use hookline_messages::event::{BootstrapFile, Event};

/// The name of the virtual bootstrap file the audit plugin adds.
pub const AUDIT_FILE: &str = "AUDIT.md";

/// Logs every event it receives and adds a short audit note to the bootstrap files.
pub(crate) struct GatewayAudit;

#[async_trait]
impl EventHandler for GatewayAudit {
    fn subscriptions(&self) -> Vec<String> {
        [
            "command",
            "session:compact:after",
            "agent:bootstrap",
            "acme:deployed",
            "session:compact",
        ]
        .map(String::from)
        .to_vec()
    }

    async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
        tracing::info!(key = %event.key(), context = %event.context_json(), "gateway-audit");
        let Event::AgentBootstrap(context) = event else {
            return Ok(EventReply::Done);
        };
        // SPEC G5.4: a handler may extend the list; the host still filters and budgets it.
        let mut files = context.bootstrap_files.clone();
        files.push(BootstrapFile {
            name: AUDIT_FILE.into(),
            path: format!("{}/{AUDIT_FILE}", context.workspace_dir),
            missing: false,
            content: Some("Gateway events in this session are audited.".into()),
        });
        Ok(EventReply::ReplaceBootstrapFiles(files))
    }
}
