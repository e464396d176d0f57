// `GET /metrics` (Prometheus text exposition format 0.0.4) parsed into per plugin and hook
// figures: calls, skips by reason, latency p50 / p99. Metric names: docs/serve.md, "Metrics".

/** One sample line. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * The figures of one plugin's hook, or with `plugin` empty, of one hook over the whole pipeline
 * (`hookline_hook_calls_total{hook}` counts the pipeline's calls of a hook, once per call).
 */
export interface HookStats {
  plugin: string;
  hook: string;
  /**
   * Calls counted: the plugin's own (`hookline_plugin_hook_calls_total`), or the pipeline's for
   * `plugin` "". Null when the server reports no such series; 0 for a hook the plugin
   * implements that has not run yet (the server registers a plugin's counters at start).
   */
  calls: number | null;
  skips: Map<string, number>;
  /** Seconds; null when the server reported none (or none lately: quantiles cover a window). */
  p50: number | null;
  p99: number | null;
  /** Latency samples behind p50 / p99 (the pipeline times a share of calls, not every one). */
  samples: number;
}

/** Latency summaries, newest name first. */
const LATENCY = ["hookline_hook_latency_seconds", "hookline_hook_seconds"];
/** A plugin's calls of a hook, labelled `{plugin, hook}`. */
const PLUGIN_CALLS = "hookline_plugin_hook_calls_total";
/** The pipeline's calls of a hook, labelled `{hook}` (a server may label it by plugin too). */
const CALLS = "hookline_hook_calls_total";
/** Skipped calls, labelled `{plugin, hook, reason}` (`plugin` missing on older servers). */
const SKIPS = "hookline_hook_skips_total";

/** Parses the exposition text; lines it cannot read are left out. */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const sample = parseLine(line);
    if (sample) samples.push(sample);
  }
  return samples;
}

function parseLine(line: string): Sample | null {
  const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
  if (!name) return null;
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith("{")) {
    const end = readLabels(rest, labels);
    if (end < 0) return null;
    rest = rest.slice(end);
  }
  const value = parseValue(rest.trim().split(/\s+/)[0] ?? "");
  return value === null ? null : { name, labels, value };
}

/** Reads `{a="b",...}` at the start of `text` into `labels`; returns the index after `}`. */
function readLabels(text: string, labels: Record<string, string>): number {
  let i = 1;
  for (;;) {
    while (text[i] === " " || text[i] === ",") i++;
    if (text[i] === "}") return i + 1;
    const key = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text.slice(i))?.[0];
    if (!key) return -1;
    i += key.length;
    if (text[i] !== "=" || text[i + 1] !== '"') return -1;
    i += 2;
    let value = "";
    for (;;) {
      const c = text[i];
      if (c === undefined) return -1;
      if (c === '"') break;
      if (c === "\\") {
        const next = text[i + 1];
        value += next === "n" ? "\n" : (next ?? "");
        i += 2;
      } else {
        value += c;
        i++;
      }
    }
    labels[key] = value;
    i++;
  }
}

function parseValue(text: string): number | null {
  if (text === "NaN") return Number.NaN;
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (!/^[-+0-9.eE]+$/.test(text)) return null;
  const value = Number(text);
  return Number.isNaN(value) ? null : value;
}

/** Per plugin and hook figures; rows the server reports without a plugin label have `plugin` "". */
export function hookStats(samples: Sample[]): HookStats[] {
  const rows = new Map<string, HookStats>();
  const row = (plugin: string, hook: string): HookStats => {
    const key = `${plugin}\u0000${hook}`;
    let found = rows.get(key);
    if (!found) {
      found = { plugin, hook, calls: null, skips: new Map(), p50: null, p99: null, samples: 0 };
      rows.set(key, found);
    }
    return found;
  };
  for (const s of samples) {
    const hook = s.labels["hook"];
    if (hook === undefined) continue;
    const plugin = s.labels["plugin"] ?? "";
    const base = LATENCY.find((n) => s.name === n || s.name === `${n}_count`);
    if (base !== undefined && s.name === base) {
      const q = s.labels["quantile"];
      const seconds = Number.isFinite(s.value) ? s.value : null;
      if (q === "0.5") row(plugin, hook).p50 = seconds;
      if (q === "0.99") row(plugin, hook).p99 = seconds;
    } else if (base !== undefined) {
      row(plugin, hook).samples = s.value;
    } else if (s.name === PLUGIN_CALLS || s.name === CALLS) {
      row(plugin, hook).calls = s.value;
    } else if (s.name === SKIPS) {
      const reason = s.labels["reason"] ?? "unknown";
      const skips = row(plugin, hook).skips;
      skips.set(reason, (skips.get(reason) ?? 0) + s.value);
    }
  }
  // The exporter reports 0 for every quantile of a summary with no sample in its rolling window
  // (one never timed, or not lately): that is no figure, not a latency of 0.
  for (const r of rows.values()) {
    if (r.samples === 0 || r.p50 === 0) r.p50 = null;
    if (r.samples === 0 || r.p99 === 0) r.p99 = null;
  }
  return [...rows.values()];
}

/** Whether `stats` is one plugin's (not the pipeline's, over every plugin). */
export function isPluginRow(stats: HookStats): boolean {
  return stats.plugin !== "";
}

/** The hooks `plugin` has figures for (a counter registered at start, or latency samples). */
export function hooksOf(stats: HookStats[], plugin: string): string[] {
  return stats
    .filter((s) => s.plugin === plugin && (s.calls !== null || s.samples > 0))
    .map((s) => s.hook)
    .sort();
}

/** The skips of `stats`, summed over reasons. */
export function totalSkips(stats: HookStats): number {
  let total = 0;
  for (const n of stats.skips.values()) total += n;
  return total;
}

/** A latency for people: `840 µs`, `12.4 ms`, `1.20 s`. */
export function formatSeconds(seconds: number | null): string {
  if (seconds === null) return "–";
  if (seconds < 1e-3) return `${Math.round(seconds * 1e6)} µs`;
  if (seconds < 1) return `${(seconds * 1e3).toFixed(seconds < 0.01 ? 2 : 1)} ms`;
  return `${seconds.toFixed(2)} s`;
}
