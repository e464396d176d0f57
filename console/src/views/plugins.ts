// The plugins view: load order, kind, language, hooks, raw hooks, events, status (each loaded
// plugin's state now: loaded, restarting, exited or suspended, with why and since when) and trust
// (from `GET /v1/plugins`), and per plugin and hook the calls, skips by reason and latency p50 / p99
// (from `GET /metrics`), with a small latency chart. Fetched when the view opens and again when a
// turn finishes while it is open: never on a timer.

import { clock, h, svg } from "../dom";
import { formatSeconds, hookStats, hooksOf, isPluginRow, parseMetrics, totalSkips, type HookStats } from "../metrics";
import type { DiskPlugin, PluginsView } from "../model";
import { errorText, rebuild, type App, type View } from "../view";

/** One row of the plugins table, disk and in-process plugins alike. */
interface PluginRow {
  order: number;
  name: string;
  kind: string;
  language: string;
  hooks: string[];
  rawHooks: string[];
  events: string[];
  status: string;
  /** Why it is not `loaded` now, and since when (empty when there is nothing to say). */
  statusDetail: string;
  trust: string;
}

/** `suspended since 10:42:07: its process exited 3 times in 300 s, ...`, without the state. */
export function statusDetail(p: DiskPlugin, clockOf: (ms: number) => string = clock): string {
  if (p.state === "loaded" || (!p.stateReason && !p.stateSince)) return "";
  const since = p.stateSince ? Date.parse(p.stateSince) : NaN;
  const when = Number.isFinite(since) ? `since ${clockOf(since)}` : "";
  return [when, p.stateReason ?? ""].filter((t) => t !== "").join(": ");
}

/** The rows, in load order: plugins on disk, then in-process ones. */
export function pluginRows(view: PluginsView): PluginRow[] {
  const rows: PluginRow[] = view.plugins.map((p: DiskPlugin, i) => ({
    order: i + 1,
    name: p.name,
    kind: "external",
    language: p.kind ?? "unknown",
    hooks: p.hello?.hooks ?? [],
    rawHooks: p.hello?.rawHooks ?? [],
    events: p.hello?.events ?? [],
    status: p.state ?? "unknown",
    statusDetail: statusDetail(p),
    trust: p.trust ?? "unknown",
  }));
  for (const p of view.inProcess) {
    const named = typeof p === "string" ? { name: p } : p;
    rows.push({
      order: rows.length + 1,
      name: named.name,
      kind: "in-process",
      language: "rust",
      hooks: "hooks" in named && named.hooks ? named.hooks : [],
      rawHooks: "rawHooks" in named && named.rawHooks ? named.rawHooks : [],
      events: "events" in named && named.events ? named.events : [],
      status: "loaded",
      statusDetail: "",
      trust: "built-in",
    });
  }
  return rows;
}

function list(items: string[], empty = "–"): HTMLElement {
  return items.length === 0 ? h("span", { class: "sub" }, empty) : h("span", { class: "mono" }, items.join(", "));
}

/** An in-process plugin's hooks, from the counters the server registers for each (it lists none). */
function fromMetrics(hooks: string[]): HTMLElement {
  return h("span", {},
    h("span", { class: "sub" }, hooks.length === 0 ? "none" : "from metrics: "),
    hooks.length === 0 ? null : h("span", { class: "mono" }, hooks.join(", ")));
}

function pluginsTable(rows: PluginRow[], stats: HookStats[]): HTMLElement {
  return h("div", { class: "scroll" }, h("table", { class: "plugins" },
    h("caption", {}, "Plugins, in load order"),
    h("thead", {}, h("tr", {}, ...["#", "Plugin", "Kind", "Language", "Hooks", "Raw hooks", "Events", "Status", "Trust"]
      .map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ...rows.map((r) => h("tr", { "data-plugin": r.name },
      h("td", { class: "num" }, r.order),
      h("th", { scope: "row", class: "mono" }, r.name),
      h("td", {}, r.kind),
      h("td", {}, r.language),
      h("td", {}, r.hooks.length > 0 || r.kind !== "in-process" ? list(r.hooks) : fromMetrics(hooksOf(stats, r.name))),
      h("td", {}, list(r.rawHooks)),
      h("td", {}, list(r.events)),
      h("td", { "data-figure": "status" }, h("span", { class: `badge plugin-${r.status}` }, r.status),
        r.statusDetail === "" ? null : h("div", { class: "sub" }, r.statusDetail)),
      h("td", {}, r.trust))))));
}

/** `2 failed, 1 timed-out`, or `0`. */
export function skipsText(stats: HookStats): string {
  if (stats.skips.size === 0) return "0";
  return [...stats.skips].map(([reason, n]) => `${n} ${reason}`).join(", ");
}

/** Per plugin and hook: calls, skips by reason, latency p50 / p99 and how many calls were timed. */
function figuresTable(stats: HookStats[]): HTMLElement {
  return h("div", { class: "scroll" }, h("table", { class: "hook-figures" },
    h("caption", {}, "Calls, skips by reason and latency per plugin and hook"),
    h("thead", {}, h("tr", {}, ...["Plugin", "Hook", "Calls", "Skips by reason", "p50", "p99", "Timed"]
      .map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ...stats.map((s) => h("tr", { "data-plugin": s.plugin, "data-hook": s.hook },
      h("th", { scope: "row", class: "mono" }, s.plugin),
      h("td", { class: "mono" }, s.hook),
      h("td", { class: "num", "data-figure": "calls" }, s.calls ?? "–"),
      h("td", { "data-figure": "skips" }, skipsText(s)),
      h("td", { class: "num", "data-figure": "p50" }, formatSeconds(s.p50)),
      h("td", { class: "num", "data-figure": "p99" }, formatSeconds(s.p99)),
      h("td", { class: "num", "data-figure": "timed" }, s.samples))))));
}

/**
 * The pipeline's calls per hook (each call once, however many plugins it went through), with the
 * skips of every plugin on that hook.
 */
function pipelineTable(pipeline: HookStats[], perPlugin: HookStats[]): HTMLElement {
  const skipped = (hook: string): HookStats => {
    const skips = new Map<string, number>();
    for (const s of [...pipeline, ...perPlugin].filter((s) => s.hook === hook)) {
      for (const [reason, n] of s.skips) skips.set(reason, (skips.get(reason) ?? 0) + n);
    }
    return { plugin: "", hook, calls: null, skips, p50: null, p99: null, samples: 0 };
  };
  return h("div", { class: "scroll" }, h("table", { class: "hook-pipeline" },
    h("caption", {}, "Pipeline calls per hook"),
    h("thead", {}, h("tr", {}, ...["Hook", "Calls", "Skips by reason, every plugin"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ...pipeline.map((s) => h("tr", { "data-hook": s.hook },
      h("th", { scope: "row", class: "mono" }, s.hook),
      h("td", { class: "num" }, s.calls ?? "–"),
      h("td", {}, skipsText(skipped(s.hook))))))));
}

/** Plugins in load order (unknown names last), then hooks by name. */
function inLoadOrder(rows: PluginRow[]): (a: HookStats, b: HookStats) => number {
  const order = new Map(rows.map((r) => [r.name, r.order]));
  const rank = (s: HookStats): number => order.get(s.plugin) ?? Number.MAX_SAFE_INTEGER;
  return (a, b) => rank(a) - rank(b) || a.plugin.localeCompare(b.plugin) || a.hook.localeCompare(b.hook);
}

/** The figures of the hooks that ran: per plugin and hook, the chart, then the pipeline's. */
function figures(rows: PluginRow[], stats: HookStats[]): HTMLElement[] {
  const ran = (s: HookStats): boolean => (s.calls ?? 0) > 0 || totalSkips(s) > 0 || s.samples > 0;
  const perPlugin = stats.filter((s) => isPluginRow(s) && ran(s)).sort(inLoadOrder(rows));
  const pipeline = stats.filter((s) => !isPluginRow(s) && ran(s)).sort((a, b) => a.hook.localeCompare(b.hook));
  if (perPlugin.length === 0 && pipeline.length === 0) return [h("p", { class: "empty" }, "No hook has run yet.")];
  const out: HTMLElement[] = [];
  if (perPlugin.length > 0) out.push(figuresTable(perPlugin));
  const timed = perPlugin.filter((s) => s.p50 !== null || s.p99 !== null);
  if (timed.length > 0) {
    out.push(h("figure", { class: "chart-figure" },
      latencyChart(timed), h("figcaption", { class: "sub" }, "p50 (solid) and p99 (light) per plugin and hook")));
  }
  if (pipeline.length > 0) out.push(pipelineTable(pipeline, perPlugin));
  return out;
}

/** A horizontal bar chart of p50 (solid) and p99 (light) per plugin and hook, as inline SVG. */
export function latencyChart(stats: HookStats[]): SVGElement {
  const rows = stats.filter((s) => s.p50 !== null || s.p99 !== null);
  const max = Math.max(1e-9, ...rows.map((s) => Math.max(s.p99 ?? 0, s.p50 ?? 0)));
  const labelW = 230;
  const barW = 300;
  const rowH = 22;
  const height = rows.length * rowH + 24;
  const chart = svg("svg", {
    class: "chart", viewBox: `0 0 ${labelW + barW + 90} ${height}`, role: "img",
    "aria-labelledby": "chart-title", preserveAspectRatio: "xMinYMin meet",
  }, svg("title", { id: "chart-title" }, "Hook latency per plugin: p50 solid, p99 light"));
  rows.forEach((s, i) => {
    const y = i * rowH + 4;
    const w99 = ((s.p99 ?? 0) / max) * barW;
    const w50 = ((s.p50 ?? 0) / max) * barW;
    chart.append(
      svg("text", { x: labelW - 6, y: y + 14, "text-anchor": "end", class: "chart-label" }, `${s.plugin} ${s.hook}`),
      svg("rect", { x: labelW, y: y + 2, width: Math.max(1, w99).toFixed(1), height: rowH - 6, class: "bar-p99" }),
      svg("rect", { x: labelW, y: y + 5, width: Math.max(1, w50).toFixed(1), height: rowH - 12, class: "bar-p50" }),
      svg("text", { x: labelW + Math.max(w99, w50) + 6, y: y + 14, class: "chart-value" },
        `${formatSeconds(s.p50)} / ${formatSeconds(s.p99)}`));
  });
  chart.append(svg("text", { x: labelW, y: height - 4, class: "chart-axis" }, `0 to ${formatSeconds(max)}`));
  return chart;
}

/** The view. */
export function pluginsView(app: App): View {
  const body = h("div", { id: "plugins-body" }, h("p", { class: "sub" }, "Loading…"));
  const fetched = h("p", { class: "sub", role: "status" });
  const element = h("section", { "aria-labelledby": "plugins-heading" },
    h("h2", { id: "plugins-heading" }, "Plugins"), fetched, body);
  let inFlight = false;
  let again = false;
  let disposed = false;
  const load = async (): Promise<void> => {
    // One fetch at a time; a turn finishing meanwhile asks for one more, not one each.
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    try {
      const [view, text] = await Promise.all([app.api.plugins(), app.api.metrics()]);
      if (disposed) return;
      const stats = hookStats(parseMetrics(text));
      const rows = pluginRows(view);
      rebuild(body,
        pluginsTable(rows, stats),
        view.loadNotes.length > 0
          ? h("section", { "aria-label": "Load notes" }, h("h3", {}, "Load notes"),
              h("ul", { class: "notes" }, ...view.loadNotes.map((n) => h("li", {}, n))))
          : null,
        h("h3", {}, "Hooks at work"),
        figures(rows, stats));
      fetched.textContent = `Figures as of ${clock(Date.now())}.`;
    } catch (error) {
      if (!disposed) rebuild(body, h("p", { class: "error" }, errorText(error)));
    } finally {
      inFlight = false;
      if (again && !disposed) {
        again = false;
        void load();
      }
    }
  };
  void load();
  return {
    element,
    title: "Plugins",
    update: (changes) => {
      if (changes.some((c) => c.kind === "turn-finished")) void load();
    },
    dispose: () => {
      disposed = true;
    },
  };
}
