//! Embedding hookline in a plain tokio program: the host lives on its own thread with its own
//! actix system; the tokio side talks to it over bounded channels and never owns its runtime.
//!
//! Run: `cargo run -p hookline-embed-tokio` (its own package, on `hookline` with
//! `default-features = false`: the lean runtime an embedder links).

use std::sync::Arc;

use hookline::host::provider::ScriptedProvider;
use hookline::host::turn::UserInput;
use hookline::host::Host;
use hookline::messages::scenario::ScriptedReply;
use tokio::sync::{mpsc, oneshot};

/// One request to the host thread: a user message and where to send the stop reason.
type Ask = (String, oneshot::Sender<String>);

/// Starts the host thread; it runs until the returned sender is dropped, then closes the session.
fn spawn_host(workspace: std::path::PathBuf) -> (mpsc::Sender<Ask>, std::thread::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Ask>(8);
    let thread = std::thread::spawn(move || {
        actix::System::new().block_on(async move {
            let provider = ScriptedProvider::new(false);
            let Ok(mut host) = Host::builder()
                .provider(Arc::new(provider.clone()))
                .workspace(workspace)
                .start()
            else {
                return;
            };
            if host.open().await.is_err() {
                return;
            }
            while let Some((text, reply)) = rx.recv().await {
                provider.push_replies([ScriptedReply {
                    text: format!("You said: {text}"),
                    ..ScriptedReply::default()
                }]);
                let answer = match host.user_turn(UserInput::work(text)).await {
                    Ok(stop) => format!("{stop:?}"),
                    Err(e) => e.to_string(),
                };
                let _ = reply.send(answer);
            }
            // The tokio side hung up: close the session (its end hook runs).
            let _ = host.close().await;
        });
    });
    (tx, thread)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace =
        std::env::temp_dir().join(format!("hookline-embed-tokio-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;
    let (host, thread) = spawn_host(workspace.clone());
    for text in ["hello", "goodbye"] {
        let (reply, answer) = oneshot::channel();
        host.send((text.to_owned(), reply)).await?;
        let stop = tokio::time::timeout(std::time::Duration::from_secs(10), answer).await??;
        println!("{text}: turn finished {stop}");
    }
    // Hanging up lets the host close the session; then the scratch workspace goes with the run.
    drop(host);
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    let _ = std::fs::remove_dir_all(&workspace);
    Ok(())
}
