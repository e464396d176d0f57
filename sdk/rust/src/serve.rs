//! The protocol loop: read requests, run each in its own task, write replies through one writer
//! task (coalesced: flushed when no reply is waiting), abort a call on `cancel`, stop on
//! `goodbye` or end of input.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use hookline_messages::protocol::{
    HostMessage, PluginMessage, ReplyBody, RequestId, ToolOutput, ToolRequest,
};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::{Context, Plugin, ToolContext};

/// Replies waiting for the writer; a full queue makes the tasks wait, never grow it.
const OUTBOX: usize = 1024;

type InFlight = Arc<Mutex<HashMap<RequestId, AbortHandle>>>;

pub(crate) async fn serve<R, W>(plugin: Arc<Plugin>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, replies) = mpsc::channel(OUTBOX);
    let writer = tokio::spawn(write(output, PluginMessage::Hello(plugin.hello()), replies));
    let in_flight: InFlight = Arc::default();
    let mut lines = BufReader::new(input).lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let message = match serde_json::from_str::<HostMessage>(&line) {
            Ok(HostMessage::Goodbye) => break,
            Ok(message) => message,
            Err(error) => {
                eprintln!("hookline-plugin: unreadable request: {error}");
                continue;
            }
        };
        if let HostMessage::Cancel { id } = message {
            if let Some(task) = lock(&in_flight).remove(&id) {
                task.abort();
            }
            continue;
        }
        start(&plugin, message, &outbox, &in_flight);
    }
    for (_, task) in lock(&in_flight).drain() {
        task.abort();
    }
    drop(outbox);
    writer
        .await
        .unwrap_or_else(|_| Err(std::io::Error::other("the writer panicked")))
}

fn lock(in_flight: &InFlight) -> std::sync::MutexGuard<'_, HashMap<RequestId, AbortHandle>> {
    in_flight.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts one request's task; it sends its reply and forgets its id when done.
fn start(
    plugin: &Arc<Plugin>,
    message: HostMessage,
    outbox: &mpsc::Sender<PluginMessage>,
    in_flight: &InFlight,
) {
    let Some(id) = id_of(&message) else {
        return;
    };
    let (plugin, outbox, registry) = (plugin.clone(), outbox.clone(), in_flight.clone());
    // The registry lock is held while spawning, so the task cannot forget its id before it is
    // remembered.
    let mut guard = lock(in_flight);
    let task = tokio::spawn(async move {
        let body = answer(&plugin, message).await;
        let reply = into_message(id, body);
        // Forget the id first: a cancel that comes now finds nothing to abort.
        if lock(&registry).remove(&id).is_some() {
            let _ = outbox.send(reply).await;
        }
    });
    guard.insert(id, task.abort_handle());
}

fn id_of(message: &HostMessage) -> Option<RequestId> {
    match message {
        HostMessage::Hook(request) => Some(request.id),
        HostMessage::Tool(request) => Some(request.id),
        HostMessage::Event(request) => Some(request.id),
        HostMessage::Cancel { .. } | HostMessage::Goodbye => None,
    }
}

async fn answer(plugin: &Plugin, message: HostMessage) -> ReplyBody {
    match message {
        HostMessage::Hook(request) => {
            let cx = Context {
                id: request.id,
                name: request.hook.wire_name().to_owned(),
                session: request.session,
                traceparent: request.traceparent,
            };
            match plugin.hooks.get(&request.hook) {
                Some(handler) => handler(request.value, cx).await,
                None => ReplyBody::Keep,
            }
        }
        HostMessage::Event(request) => {
            let cx = Context {
                id: request.id,
                name: request.key.clone(),
                session: String::new(),
                traceparent: request.traceparent,
            };
            match plugin.event_handler(&request.key) {
                Some(handler) => handler(request.context, cx).await,
                None => ReplyBody::Keep,
            }
        }
        HostMessage::Tool(request) => tool(plugin, request).await,
        HostMessage::Cancel { .. } | HostMessage::Goodbye => ReplyBody::Keep,
    }
}

async fn tool(plugin: &Plugin, request: ToolRequest) -> ReplyBody {
    let Some((_, handler)) = plugin.tools.iter().find(|(d, _)| d.name == request.tool) else {
        return ReplyBody::Error(format!("there is no tool '{}'", request.tool));
    };
    let cx = ToolContext {
        id: request.id,
        tool: request.tool,
        session: request.session,
        workspace_root: request.workspace_root,
        approval_mode: request.approval_mode,
        traceparent: request.traceparent,
    };
    let output = match handler(request.arguments, cx).await {
        Ok(text) => ToolOutput {
            text,
            success: true,
        },
        Err(text) => ToolOutput {
            text,
            success: false,
        },
    };
    match serde_json::to_value(output) {
        Ok(value) => ReplyBody::Replace(value),
        Err(error) => ReplyBody::Error(error.to_string()),
    }
}

fn into_message(id: RequestId, body: ReplyBody) -> PluginMessage {
    match body {
        ReplyBody::Keep => PluginMessage::Keep { id },
        ReplyBody::Replace(value) => PluginMessage::Replace { id, value },
        ReplyBody::Error(message) => PluginMessage::Error { id, message },
    }
}

/// Writes the hello, then each reply; flushes whenever no further reply is waiting.
async fn write<W: AsyncWrite + Unpin>(
    output: W,
    hello: PluginMessage,
    mut replies: mpsc::Receiver<PluginMessage>,
) -> std::io::Result<()> {
    let mut out = BufWriter::new(output);
    line(&mut out, &hello).await?;
    out.flush().await?;
    while let Some(reply) = replies.recv().await {
        line(&mut out, &reply).await?;
        if replies.is_empty() {
            out.flush().await?;
        }
    }
    out.flush().await
}

async fn line<W: AsyncWrite + Unpin>(out: &mut W, message: &PluginMessage) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    out.write_all(&bytes).await
}
