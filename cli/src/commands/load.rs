//! `hookline load --url URL --sessions N --turns M [--transport ws] [--idempotency]
//! [--token-file FILE] [--keep] [--stub-url URL] [--json]`:
//! drives a running `hookline serve` over real HTTP (or one WebSocket per session) with a
//! progress bar, then prints turns/s, hook calls/s, turn latency p50/p99, errors and the server's
//! resident memory (issue 11 item 5); with 100 turns or more per session also the mean time and
//! answer size of turns 51-100 and of the last 50, and memory per session (issue 22); with
//! `--stub-url` the model stub asked directly with the same conversations, the overhead over it
//! and the stub's own time beside each window (issue 47). Exit status 1 when any request failed.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::progress::Bar;
use crate::load::{fresh_key_prefix, run as drive, LoadOptions, LoadReport, Transport};

/// Arguments of `hookline load`.
#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// The server.
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    url: String,
    /// Sessions opened and driven at once.
    #[arg(long, default_value_t = 100)]
    sessions: usize,
    /// Turns per session, one after another.
    #[arg(long, default_value_t = 10)]
    turns: usize,
    /// How turns travel.
    #[arg(long, value_enum, default_value_t = Transport::Http)]
    transport: Transport,
    /// A file holding the bearer credential: the server's token, an API key (`hookline keys`)
    /// or a JWT. A credential below admin may not read `/metrics`: hook calls/s and memory are
    /// then not reported.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Leave the sessions open at the end.
    #[arg(long)]
    keep: bool,
    /// Send every turn with a fresh idempotency key (`Idempotency-Key`, or `key` on a
    /// WebSocket), to measure what keys cost.
    #[arg(long)]
    idempotency: bool,
    /// The model stub the server answers with (an OpenAI-compatible base URL,
    /// `http://127.0.0.1:8765/v1`): asked directly after the served turns, as many requests at
    /// the same concurrency, each with its conversation so far (as the server asks it), so the
    /// report says what a served turn adds over it, and the stub's time beside each window of
    /// turns.
    #[arg(long, value_name = "URL")]
    stub_url: Option<String>,
    /// Print one JSON report.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub(crate) fn run(args: &LoadArgs) -> ExitCode {
    let token = match &args.token_file {
        Some(file) => match std::fs::read_to_string(file) {
            Ok(token) => Some(token.trim().to_owned()),
            Err(error) => {
                eprintln!("hookline load: cannot read {}: {error}", file.display());
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("hookline load: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let total = (args.sessions * args.turns) as u64;
    let bar = Arc::new(Bar::counting("turns", total, args.json));
    let options = LoadOptions {
        url: args.url.clone(),
        sessions: args.sessions,
        turns: args.turns,
        transport: args.transport,
        token,
        keep: args.keep,
        idempotency: args.idempotency.then(fresh_key_prefix),
        stub_url: args.stub_url.clone(),
    };
    let report = runtime.block_on(drive(options, bar.clone()));
    bar.finish();
    match report {
        Ok(report) => {
            let text = if args.json {
                serde_json::to_string_pretty(&report).unwrap_or_default()
            } else {
                human(&report)
            };
            let _ = writeln!(std::io::stdout().lock(), "{text}");
            if report.error_count() == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(error) => {
            eprintln!("hookline load: {error}");
            ExitCode::from(2)
        }
    }
}

fn human(report: &LoadReport) -> String {
    let mut out = format!(
        "sessions        {}\nturns           {} in {:.2} s\nturns/s         {:.0}\nhook calls/s    {:.0}\nturn latency    p50 {:.2} ms, p99 {:.2} ms\nerrors          {}",
        report.sessions,
        report.turns,
        report.seconds,
        report.turns_per_second,
        report.hook_calls_per_second,
        report.p50_ms,
        report.p99_ms,
        report.error_count(),
    );
    for (code, count) in &report.errors {
        out.push_str(&format!("\n  {code}: {count}"));
    }
    if report.metrics_refused {
        out.push_str("\nmetrics         not readable with this credential (admins only): hook calls/s not measured");
    }
    if let Some(bytes) = report.server_resident_bytes {
        out.push_str(&format!(
            "\nserver resident {:.1} MiB",
            bytes as f64 / (1024.0 * 1024.0)
        ));
    }
    if let Some(bytes) = report.resident_bytes_per_session {
        out.push_str(&format!(
            "\n  per session   {:.1} KiB",
            bytes as f64 / 1024.0
        ));
    }
    if let Some(stub) = &report.stub {
        out.push_str(&format!(
            "\nstub alone      p50 {:.2} ms, p99 {:.2} ms, {:.0} requests/s ({} failed), each request with its conversation so far\noverhead        p50 {:.2} ms over the stub",
            stub.p50_ms,
            stub.p99_ms,
            stub.requests_per_second,
            stub.errors,
            report.overhead_p50_ms.unwrap_or_default(),
        ));
    }
    let stub = report.stub.as_ref();
    let windows = [
        (&report.early, stub.and_then(|s| s.early.as_ref())),
        (&report.last, stub.and_then(|s| s.last.as_ref())),
    ];
    for (window, beside) in windows {
        let Some(window) = window else { continue };
        out.push_str(&format!(
            "\nturns {}-{}{}p50 {:.2} ms, mean {:.2} ms, {:.1} KB answered per turn",
            window.first,
            window.last,
            " ".repeat(10usize.saturating_sub(format!("{}-{}", window.first, window.last).len())),
            window.p50_ms,
            window.mean_ms,
            window.mean_answer_bytes / 1000.0,
        ));
        if let Some(stub) = beside {
            out.push_str(&format!("; the stub p50 {:.2} ms", stub.p50_ms));
        }
    }
    if let (Some(early), Some(last)) = (&report.early, &report.last) {
        if early.mean_ms > 0.0 && early.mean_answer_bytes > 0.0 {
            out.push_str(&format!(
                "\n  last / early  {:.2}x p50, {:.2}x mean time, {:.2}x answer size",
                last.p50_ms / early.p50_ms.max(f64::MIN_POSITIVE),
                last.mean_ms / early.mean_ms,
                last.mean_answer_bytes / early.mean_answer_bytes,
            ));
        }
    }
    if let Some((early, last)) = stub.and_then(|s| s.early.as_ref().zip(s.last.as_ref())) {
        out.push_str(&format!(
            "\n  the stub's    {:.2}x p50 (its requests grow with the conversation)",
            last.p50_ms / early.p50_ms.max(f64::MIN_POSITIVE),
        ));
    }
    out
}
