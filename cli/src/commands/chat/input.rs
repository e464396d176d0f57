//! The terminal's lines, read on their own thread (stdin blocks) and handed to the chat through
//! a bounded channel. End of input (Ctrl-D on an empty line) is the last message.

use tokio::sync::mpsc;

/// How many typed lines may wait for the chat.
const QUEUE: usize = 32;

/// One thing the terminal said.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Input {
    /// A line, without its line end.
    Line(String),
    /// End of input.
    End,
}

/// Starts the reader; its lines arrive on the returned channel.
pub(super) fn lines() -> mpsc::Receiver<Input> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let spawned = std::thread::Builder::new()
        .name("hookline-chat-stdin".into())
        .spawn(move || read(&tx));
    if spawned.is_err() {
        // No thread, no input: the chat sees the end at once and closes the session.
        drop(rx);
        let (tx, rx) = mpsc::channel(1);
        let _ = tx.try_send(Input::End);
        return rx;
    }
    rx
}

fn read(tx: &mpsc::Sender<Input>) {
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        line.clear();
        let input = match stdin.read_line(&mut line) {
            Ok(0) | Err(_) => Input::End,
            Ok(_) => Input::Line(line.trim_end_matches(['\n', '\r']).to_owned()),
        };
        let end = input == Input::End;
        // The chat has gone: nobody to read for.
        if tx.blocking_send(input).is_err() || end {
            return;
        }
    }
}
