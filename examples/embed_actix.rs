//! Embedding hookline in an actix application: the app holds the coordinator's address and sends
//! `Call` messages itself, and drives a `Host` for whole turns.
//!
//! Run: `cargo run --example embed_actix`

use std::sync::Arc;

use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration, Reply};
use hookline::actors::Call;
use hookline::host::provider::ScriptedProvider;
use hookline::host::turn::UserInput;
use hookline::host::Host;
use hookline::messages::hook::{HookContext, HookKind, HookSet, OnUserMessage};
use hookline::messages::scenario::ScriptedReply;
use hookline::messages::user::UserMessage;

struct Polite;

#[async_trait::async_trait]
impl Plugin for Polite {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage])
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        m: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        Ok(Reply::Replace(UserMessage::new(format!(
            "{} please",
            m.text
        ))))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace =
        std::env::temp_dir().join(format!("hookline-embed-actix-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;
    actix::System::new().block_on(async move {
        let provider = ScriptedProvider::new(false);
        let mut host = Host::builder()
            .plugin(PluginRegistration::new("polite").with_hooks(Arc::new(Polite)))
            .provider(Arc::new(provider.clone()))
            .workspace(&workspace)
            .start()?;
        let session = host.open().await?;

        // The app's own message to the coordinator, as any actix actor would send it.
        let call = Call::<OnUserMessage> {
            session: session.clone(),
            context: (),
            value: UserMessage::new("tea"),
        };
        let outcome = host.pipeline().coordinator().send(call).await??;
        println!("coordinator answered: {}", outcome.value.text);

        // A whole turn through the host.
        provider.push_replies([ScriptedReply {
            text: "Here is your tea.".into(),
            ..ScriptedReply::default()
        }]);
        let stop = host.user_turn(UserInput::work("tea")).await?;
        println!("turn finished: {stop:?}");
        for event in host.take_events() {
            println!("{}", serde_json::to_string(&event)?);
        }
        host.close().await?;
        Ok(())
    })
}
