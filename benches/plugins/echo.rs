//! hookline-bench-echo: the minimal Rust children `benches/external.rs` measures, one binary with
//! three modes (the first argument):
//!
//! - `protocol`: a long-lived protocol plugin implementing `on_user_message` (appends ` #e`),
//!   `on_prompt` and `on_tool_call` (both kept);
//! - `raw`: echoes every NDJSON line back unchanged (the pipe's physical limit, no JSON at all);
//! - `once`: answers one hook request read from stdin and exits (a process spawned per call, as
//!   Claude Code and Codex run hooks).
//!
//! Output is buffered and flushed only when no more input is waiting, so a burst of requests is
//! answered with one write (as `examples/plugins/rust-guard` does).

use std::io::{self, BufRead, BufReader, BufWriter, Write};

use serde_json::{json, Value};

const HELLO: &str =
    r#"{"type":"hello","protocol":1,"hooks":["on_user_message","on_prompt","on_tool_call"]}"#;

/// The reply to one request line, or `None` for a line that needs none (cancel, goodbye).
fn answer(line: &str) -> Option<Value> {
    let request: Value = serde_json::from_str(line).ok()?;
    let id = request.get("id")?.as_u64()?;
    if request.get("hook").and_then(Value::as_str) != Some("on_user_message") {
        return Some(json!({"type": "keep", "id": id}));
    }
    let mut value = request.get("value")?.clone();
    if let Some(Value::String(text)) = value.get_mut("text") {
        text.push_str(" #e");
    }
    Some(json!({"type": "replace", "id": id, "value": value}))
}

fn serve(protocol: bool) -> io::Result<()> {
    let mut input = BufReader::new(io::stdin().lock());
    let mut out = BufWriter::new(io::stdout().lock());
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
