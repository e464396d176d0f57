//! A benchmark run's report: latency percentiles, throughput, and the ratio to the baseline.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use super::counted;
use super::driver::Measured;
use super::source::PluginMemory;

/// Latency percentiles of one run, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Slowest call.
    pub max_ns: u64,
}

/// One peer measured in the same run as hookline, and hookline's ratios to it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeerFigures {
    /// The peer (`naive actix chain`, `actix relay chain`).
    pub peer: String,
    /// The peer's calls per second.
    pub calls_per_second: f64,
    /// The peer's latency percentiles.
    pub latency: Latency,
    /// hookline's calls/s divided by the peer's (above 1: hookline moves more calls).
    pub throughput_ratio: f64,
    /// The peer's p50 divided by hookline's (above 1: hookline's single call is faster).
    pub p50_speedup: f64,
    /// A pipe peer (issue 35) or another kind of plugin (issue 36): hookline's per-plugin step
    /// (p50 over the plugins) as a multiple of the peer's (1.0 = the peer's own cost).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_multiple: Option<f64>,
}

impl PeerFigures {
    /// The peer's figures beside hookline's report.
    pub fn new(peer: &str, measured: &Measured, hookline: &BenchReport) -> Self {
        let latency = Latency::of(measured);
        let calls_per_second = per_second(measured);
        Self {
            peer: peer.to_owned(),
            calls_per_second,
            latency,
            throughput_ratio: hookline.calls_per_second / calls_per_second.max(f64::MIN_POSITIVE),
            p50_speedup: latency.p50_ns as f64 / (hookline.latency.p50_ns.max(1)) as f64,
            step_multiple: None,
        }
    }

    /// The same figures with hookline's per-plugin step as a multiple of the peer's, when
    /// `gives` (both go through the same number of plugins, so it is the ratio of the p50s).
    #[must_use]
    pub fn with_step_multiple(mut self, gives: bool) -> Self {
        self.step_multiple = gives.then(|| 1.0 / self.p50_speedup.max(f64::MIN_POSITIVE));
        self
    }
}

impl Latency {
    fn of(measured: &Measured) -> Self {
        let h = &measured.histogram;
        Self {
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            max_ns: h.max(),
        }
    }
}

fn per_second(measured: &Measured) -> f64 {
    let seconds = measured.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    measured.calls as f64 / seconds
}

/// What `hookline bench` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    /// The hook called.
    pub hook: String,
    /// Where the plugins came from (`in-process`, `external-rust`, ...).
    pub source: String,
    /// Arbiters (threads) the run used, each with its own pipeline and share of the sessions.
    pub arbiters: usize,
    /// Plugins per call.
    pub plugins: usize,
    /// Sessions in flight.
    pub sessions: usize,
    /// Rounds the run was split into, each running hookline and then its peers (`--rounds`).
    pub rounds: u32,
    /// Offered rate (calls/s) for an open-loop run; absent for a closed loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<u64>,
    /// Calls completed.
    pub calls: u64,
    /// Calls refused as overloaded (open loop); their latency is not in the percentiles.
    pub shed: u64,
    /// Calls per second achieved.
    pub calls_per_second: f64,
    /// Latency percentiles.
    pub latency: Latency,
    /// The direct loop's time per call, measured in the same run.
    pub direct_ns_per_call: f64,
    /// The direct loop's calls per second.
    pub direct_calls_per_second: f64,
    /// Pipeline throughput divided by the direct loop's (1.0 = as fast as the limit).
    pub throughput_ratio: f64,
    /// Pipeline p50 divided by the direct loop's time per call.
    pub latency_ratio: f64,
    /// The peers measured in the same run (closed loops on `on_user_message` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<PeerFigures>,
    /// What each WebAssembly plugin costs in memory (`--source wasm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_memory: Option<PluginMemory>,
}

impl BenchReport {
    /// Builds the report from a run and the baseline's time per call.
    pub fn new(
        hook: &str,
        plugins: usize,
        sessions: usize,
        offered_rate: Option<u64>,
        measured: &Measured,
        direct_per_call: Duration,
    ) -> Self {
        let latency = Latency::of(measured);
        let calls_per_second = per_second(measured);
        let direct_ns = (direct_per_call.as_nanos() as f64).max(1.0);
        let direct_calls_per_second = 1e9 / direct_ns;
        Self {
            hook: hook.to_owned(),
            source: "in-process".to_owned(),
            arbiters: 1,
            plugins,
            sessions,
            rounds: 1,
            offered_rate,
            calls: measured.calls,
            shed: measured.shed,
            calls_per_second,
            latency,
            direct_ns_per_call: direct_ns,
            direct_calls_per_second,
            throughput_ratio: calls_per_second / direct_calls_per_second,
            latency_ratio: latency.p50_ns as f64 / direct_ns,
            peers: Vec::new(),
            plugin_memory: None,
        }
    }

    /// The same report, saying where the plugins came from and how many arbiters ran.
    #[must_use]
    pub fn on(mut self, source: &str, arbiters: usize) -> Self {
        self.source = source.to_owned();
        self.arbiters = arbiters;
        self
    }

    /// The same report, saying the run was split into `rounds` rounds.
    #[must_use]
    pub fn in_rounds(mut self, rounds: u32) -> Self {
        self.rounds = rounds;
        self
    }
}

fn micros(ns: u64) -> String {
    format!("{:.2} µs", ns as f64 / 1000.0)
}

impl BenchReport {
    /// Whether each call leaves the process (external plugins): then the pipe peers are the
    /// yardstick, and the in-process direct loop only gives the scale.
    fn out_of_process(&self) -> bool {
        matches!(
            self.source.as_str(),
            "external-rust" | "external-python" | "examples"
        )
    }

    fn peer_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for peer in &self.peers {
            write!(
                f,
                "\n{:<23} {:.0} calls/s, p50 {}, p99 {}: hookline {:.2}x its throughput, p50 {:.2}x as fast",
                peer.peer,
                peer.calls_per_second,
                micros(peer.latency.p50_ns),
                micros(peer.latency.p99_ns),
                peer.throughput_ratio,
                peer.p50_speedup
            )?;
            if let Some(multiple) = peer.step_multiple {
                let plugins = self.plugins.max(1) as u64;
                write!(
                    f,
                    "\n{:<23} per plugin {} against {}: {:.2}x the peer's step",
                    "",
                    micros(self.latency.p50_ns / plugins),
                    micros(peer.latency.p50_ns / plugins),
                    multiple
                )?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = &self.latency;
        write!(
            f,
            "hook {} through {}, {} in flight on {}",
            self.hook,
            counted(self.plugins as u64, &format!("{} plugin", self.source)),
            counted(self.sessions as u64, "session"),
            counted(self.arbiters as u64, "arbiter")
        )?;
        if self.rounds > 1 {
            write!(f, ", in {} rounds alternating with the peers", self.rounds)?;
        }
        writeln!(f)?;
        if let Some(rate) = self.offered_rate {
            writeln!(f, "offered load   {rate} calls/s (open loop)")?;
        }
        writeln!(f, "calls          {}", self.calls)?;
        if self.shed > 0 {
            writeln!(f, "shed           {} (refused as overloaded)", self.shed)?;
        }
        writeln!(f, "throughput     {:.0} calls/s", self.calls_per_second)?;
        write!(
            f,
            "latency        p50 {}  p90 {}  p99 {}  max {}",
            micros(l.p50_ns),
            micros(l.p90_ns),
            micros(l.p99_ns),
            micros(l.max_ns)
        )?;
        if self.out_of_process() {
            // A process hop against an in-process loop says nothing: the pipe peers first, the
            // direct loop for scale only, and no ratio to it.
            self.peer_lines(f)?;
            write!(
                f,
                "\ndirect loop    {:.3} µs/call, {:.0} calls/s (same run; in-process, no process \
                 hop: for scale only, not this kind's yardstick)",
                self.direct_ns_per_call / 1000.0,
                self.direct_calls_per_second
            )?;
        } else {
            write!(
                f,
                "\ndirect loop    {:.3} µs/call, {:.0} calls/s (same run)",
                self.direct_ns_per_call / 1000.0,
                self.direct_calls_per_second
            )?;
            write!(
                f,
                "\nratio          throughput {:.3}x the direct loop; p50 {:.1}x its time per call",
                self.throughput_ratio, self.latency_ratio
            )?;
        }
        if let Some(memory) = self.plugin_memory {
            write!(
                f,
                "\nmemory         per plugin {} KiB of linear memory, {} KiB resident at load",
                memory.linear_bytes / 1024,
                memory.resident_bytes / 1024
            )?;
        }
        if !self.out_of_process() {
            self.peer_lines(f)?;
        }
        Ok(())
    }
}
