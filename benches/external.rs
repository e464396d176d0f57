//! One external plugin over the protocol, beside the pipe's physical limit and the
//! spawn-per-call design, all measured in the same run (issue 7). For Rust and for Python:
//!
//! - `raw_pipe_echo`: a long-lived child that echoes each NDJSON line (no JSON parsed on either
//!   side): what any out-of-process design pays at least;
//! - `protocol_plugin`: the same kind of child speaking the protocol, called through a
//!   [`Pipeline`] holding one [`ExternalPlugin`] (ids matched by a reader task, writes coalesced);
//! - `spawn_per_call`: a new process per hook call, request on stdin, reply on stdout (how Claude
//!   Code and Codex run hooks). Sequential only.
//!
//! Single round trips (`external_round_trip`) and many calls in flight (`external_pipelined`,
//! [`IN_FLIGHT`] calls) are separate groups. The children are `benches/plugins/echo.rs` (the
//! `hookline-bench-echo` binary of this package) and `benches/plugins/echo.py`.
//!
//! Locating the Rust child: cargo builds a package's binaries before its benches and sets
//! `CARGO_BIN_EXE_<name>` for benches as for integration tests, so `env!` finds it; no extra
//! `cargo build` step is needed. Run with `cargo bench --bench external`.
#![allow(missing_docs)] // criterion's macros generate undocumented items
#![allow(clippy::expect_used)] // a bench that cannot start its children has nothing to measure

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::ffi::OsString;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookline::actors::Pipeline;
use hookline::cli::bench::{drive_calls, PAYLOAD};
use hookline::host::external::{ExternalConfig, ExternalPlugin};
use hookline::messages::hook::HookKind;
use hookline::messages::protocol::{HookRequest, HostMessage};
use hookline::messages::user::UserMessage;

/// Calls in flight at once in the pipelined group.
const IN_FLIGHT: usize = 1000;

const RUST_ECHO: &str = env!("CARGO_BIN_EXE_hookline-bench-echo");

/// One child kind: how to start it in a given mode.
#[derive(Clone)]
struct Kind {
    label: &'static str,
    program: PathBuf,
    args: Vec<OsString>,
}

impl Kind {
    fn rust() -> Self {
        Self {
            label: "rust",
            program: RUST_ECHO.into(),
            args: Vec::new(),
        }
    }

    fn python() -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/plugins/echo.py");
        Self {
            label: "python",
            program: "python3".into(),
            args: vec![script.into()],
        }
    }

    fn command(&self, mode: &str) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg(mode);
        command
    }
}

/// The request line every design is sent: an `on_user_message` hook call on the ~64-byte text.
fn request_line() -> String {
    let value = serde_json::to_value(UserMessage::new(PAYLOAD)).expect("a user message is JSON");
    let request = HostMessage::Hook(HookRequest {
        id: 1,
        hook: HookKind::OnUserMessage,
        session: "bench".into(),
        value,
        traceparent: None,
    });
    let mut line = serde_json::to_string(&request).expect("a request is JSON");
    line.push('\n');
    line
}

/// A long-lived raw echo child, driven with blocking I/O from the bench thread.
struct RawEcho {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl RawEcho {
    fn start(kind: &Kind) -> Self {
        let mut child = kind
            .command("raw")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the echo child starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// `calls` round trips, one after another.
    fn sequential(&mut self, line: &str, calls: u64) -> Duration {
        let mut reply = String::new();
        let started = Instant::now();
        for _ in 0..calls {
            self.stdin.write_all(line.as_bytes()).expect("write");
            self.stdin.flush().expect("flush");
            reply.clear();
            self.stdout.read_line(&mut reply).expect("read");
        }
        started.elapsed()
    }

    /// `calls` lines written by a second thread while this one reads the echoes: the pipe full.
    fn pipelined(&mut self, line: &str, calls: u64) -> Duration {
        let (stdin, stdout) = (&mut self.stdin, &mut self.stdout);
        let started = Instant::now();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for _ in 0..calls {
                    stdin.write_all(line.as_bytes()).expect("write");
                }
                stdin.flush().expect("flush");
            });
            let mut reply = String::new();
            for _ in 0..calls {
                reply.clear();
                stdout.read_line(&mut reply).expect("read");
            }
        });
        started.elapsed()
    }
}

impl Drop for RawEcho {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One call to a freshly spawned process: start, write the request, read the reply, reap.
fn spawn_per_call(kind: &Kind, line: &str) {
    let mut child = kind
        .command("once")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the echo child starts");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(line.as_bytes()).expect("write");
    }
    let output = child.wait_with_output().expect("the child exits");
    black_box(output.stdout);
}

/// A pipeline with one external protocol plugin of `kind`.
fn protocol_pipeline(system: &actix::SystemRunner, kind: &Kind) -> (Pipeline, Arc<ExternalPlugin>) {
    system.block_on(async {
        let mut config = ExternalConfig::new(
            format!("echo-{}", kind.label),
            which(&kind.program),
            env!("CARGO_MANIFEST_DIR"),
        );
        config.args = kind.args.clone();
        config.args.push("protocol".into());
        let plugin = ExternalPlugin::start(config)
            .await
            .expect("the protocol child says hello");
        let pipeline = Pipeline::builder()
            .plugin(plugin.registration())
            .start()
            .expect("the pipeline starts");
        (pipeline, plugin)
    })
}

/// `program` resolved on `PATH` when it is a bare name (the child's environment is allowlisted).
fn which(program: &Path) -> PathBuf {
    if program.components().count() > 1 {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}

fn round_trip(c: &mut Criterion) {
    let line = request_line();
    let system = actix::System::new();
    for kind in [Kind::rust(), Kind::python()] {
        let mut group = c.benchmark_group(format!("external_round_trip_{}", kind.label));
        let mut raw = RawEcho::start(&kind);
        let (pipeline, plugin) = protocol_pipeline(&system, &kind);
        group.bench_function("raw_pipe_echo", |b| {
            b.iter_custom(|iters| raw.sequential(&line, iters))
        });
        group.bench_function("protocol_plugin", |b| {
            b.iter_custom(|iters| system.block_on(drive_calls(&pipeline, 1, iters)))
        });
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(4));
        group.bench_function("spawn_per_call", |b| {
            b.iter(|| spawn_per_call(&kind, &line))
        });
        group.finish();
        system.block_on(async {
            pipeline.stop().await;
            plugin.shutdown().await;
        });
    }
}

fn pipelined(c: &mut Criterion) {
    let line = request_line();
    let system = actix::System::new();
    for kind in [Kind::rust(), Kind::python()] {
        let mut group = c.benchmark_group(format!("external_pipelined_{}", kind.label));
        group.throughput(Throughput::Elements(1));
        // Few, long samples: each sample then makes many calls per session, so the start and
        // the drain of the 1000 in flight are a small part of it.
        group.sample_size(10);
        let mut raw = RawEcho::start(&kind);
        let (pipeline, plugin) = protocol_pipeline(&system, &kind);
        group.bench_function("raw_pipe_echo", |b| {
            b.iter_custom(|iters| raw.pipelined(&line, iters))
        });
        group.bench_function(format!("protocol_plugin_{IN_FLIGHT}_in_flight"), |b| {
            b.iter_custom(|iters| system.block_on(drive_calls(&pipeline, IN_FLIGHT, iters)))
        });
        group.finish();
        system.block_on(async {
            pipeline.stop().await;
            plugin.shutdown().await;
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = round_trip, pipelined
}
criterion_main!(benches);
