//! hookline-bench-echo: the minimal Rust children `benches/external.rs` measures, one binary with
//! three modes (the first argument):
//!
//! - `protocol`: a long-lived protocol plugin implementing `on_user_message` (appends ` #e`),
//!   `on_prompt` and `on_tool_call` (both kept);
//! - `raw`: echoes every NDJSON line back unchanged (the pipe's physical limit, no JSON at all);
//! - `once`: answers one hook request read from stdin and exits (a process spawned per call, as
//!   Claude Code and Codex run hooks).
//!
//! Input is read a pipe's worth (64 KiB) at a time and output buffered as much and flushed only
//! when no more input is waiting, so a burst of requests is one read and its replies one write
//! (as `examples/plugins/rust-guard` does).

use std::io::{self, BufRead, BufReader, BufWriter, Write};

use serde_json::{json, Value};

const HELLO: &str =
    r#"{"type":"hello","protocol":1,"hooks":["on_user_message","on_prompt","on_tool_call"]}"#;

/// The reply to one request line, or `None` for a line that needs none (cancel, goodbye).
fn answer(line: &str) -> Option<Value> {
    let mut request: Value = serde_json::from_str(line).ok()?;
    let id = request.get("id")?.as_u64()?;
    if request.get("hook").and_then(Value::as_str) != Some("on_user_message") {
        return Some(json!({"type": "keep", "id": id}));
    }
    let mut value = request.get_mut("value")?.take();
    if let Some(Value::String(text)) = value.get_mut("text") {
        text.push_str(" #e");
    }
    Some(json!({"type": "replace", "id": id, "value": value}))
}

/// A pipe's worth on Linux.
const BUFFER: usize = 64 * 1024;

fn serve(protocol: bool) -> io::Result<()> {
    let mut input = BufReader::with_capacity(BUFFER, io::stdin().lock());
    let mut out = BufWriter::with_capacity(BUFFER, io::stdout().lock());
    if protocol {
        writeln!(out, "{HELLO}")?;
        out.flush()?;
    }
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return out.flush();
        }
        if !protocol {
            out.write_all(line.as_bytes())?;
        } else if let Some(reply) = answer(&line) {
            serde_json::to_writer(&mut out, &reply)?;
            out.write_all(b"\n")?;
        }
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
}

fn once() -> io::Result<()> {
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line)?;
    let mut out = io::stdout().lock();
    if let Some(reply) = answer(&line) {
        serde_json::to_writer(&mut out, &reply)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

fn main() -> io::Result<()> {
    match std::env::args().nth(1).as_deref() {
        Some("protocol") => serve(true),
        Some("raw") => serve(false),
        Some("once") => once(),
        _ => {
            eprintln!("usage: hookline-bench-echo protocol|raw|once");
            std::process::exit(2)
        }
    }
}
