//! Embedding hookline in an actix application: the app writes an in-process plugin on the fast
//! path, sends `Call` messages to the coordinator of the session's shard itself, and drives a
//! `Host` for whole turns.
//!
//! Run: `cargo run -p hookline-embed-actix` (its own package, on `hookline` with
//! `default-features = false`: the lean runtime an embedder links).

use std::sync::Arc;

use hookline::actors::plugin::{PluginRegistration, Reply};
use hookline::actors::Call;
use hookline::host::provider::ScriptedProvider;
use hookline::host::turn::UserInput;
use hookline::host::Host;
use hookline::messages::hook::OnUserMessage;
use hookline::messages::scenario::ScriptedReply;
use hookline::messages::user::UserMessage;

/// `polite`: one hook on the fast path. It sees the message by reference and answers at once;
/// the hooks that run are exactly the ones registered.
fn polite() -> PluginRegistration {
    PluginRegistration::new("polite").on(OnUserMessage, |_, m: &UserMessage| {
        Ok(Reply::Replace(UserMessage::new(format!(
            "{} please",
            m.text
        ))))
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace =
        std::env::temp_dir().join(format!("hookline-embed-actix-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;
    let scratch = workspace.clone();
    let outcome = actix::System::new().block_on(async move {
        let provider = ScriptedProvider::new(false);
        let mut host = Host::builder()
            .plugin(polite())
            .provider(Arc::new(provider.clone()))
            .workspace(&workspace)
            .start()?;
        let session = host.open().await?;

        // The app's own message to the coordinator of the session's shard, as any actix actor
        // would send it.
        let call = Call::<OnUserMessage> {
            session: session.clone(),
            context: (),
            value: UserMessage::new("tea"),
        };
        let outcome = host
            .pipeline()
            .coordinator_for(&session)
            .send(call)
            .await??;
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
    });
    // The scratch workspace (the session's store in it) goes with the run.
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}
