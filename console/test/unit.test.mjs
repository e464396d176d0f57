// The console's pure parts, loaded from their TypeScript sources (bundled in memory by esbuild:
// nothing is written): the SSE parser, the Prometheus parser and its per hook figures, the diff,
// and the store's approvals as the server lists them.

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const src = join(dirname(fileURLToPath(import.meta.url)), "..", "src");

async function load(name) {
  const out = await esbuild.build({
    entryPoints: [join(src, name)], bundle: true, format: "esm", write: false, platform: "neutral", logLevel: "error",
  });
  const code = Buffer.from(out.outputFiles[0].contents).toString("base64");
  return import(`data:text/javascript;base64,${code}`);
}

const { SseParser } = await load("sse.ts");
const { parseMetrics, hookStats, hooksOf, totalSkips, formatSeconds } = await load("metrics.ts");
const { diffWords, valueTexts, patchChanges, patchText } = await load("diff.ts");
const { Store, approvalKey } = await load("state.ts");
const { usageText } = await load("usage.ts");
const { Api, freshKey } = await load("api.ts");
const { historyTurns, mergeTurns } = await load("history.ts");
const { pluginRows } = await load("views/plugins.ts");

test("api: every turn is sent with a fresh Idempotency-Key", async () => {
  assert.match(freshKey(), /^[0-9a-f]{32}$/);
  const sent = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (path, init) => {
    sent.push({ path, key: init.headers.get("Idempotency-Key"), type: init.headers.get("Content-Type") });
    return new Response("{}", { status: 200 });
  };
  try {
    const api = new Api("t");
    await api.turn("s1", "hello");
    await api.turn("s1", "hello");
  } finally {
    globalThis.fetch = realFetch;
  }
  assert.equal(sent.length, 2);
  assert.equal(sent[0].path, "/v1/sessions/s1/turns");
  assert.equal(sent[0].type, "application/json");
  assert.match(sent[0].key, /^[0-9a-f]{32}$/);
  assert.notEqual(sent[0].key, sent[1].key);
});

test("usage: reported counts are shown, unreported ones left out, none said so", () => {
  assert.equal(usageText({ inputTokens: 1234, outputTokens: 56, modelCalls: 3 }), "1,234 in · 56 out · 3 model calls");
  assert.equal(usageText({ inputTokens: 7, modelCalls: 1 }), "7 in · 1 model call");
  assert.equal(usageText(undefined), "not reported by the model");
});

test("sse: events split across chunks and line endings are put together", () => {
  const parser = new SseParser();
  const got = [
    ...parser.push("event: session\r\ndata: {\"a\""),
    ...parser.push(":1}\r"),
    ...parser.push("\n\r\n: keep-alive\n\nevent: note\ndata: one\ndata: two\n"),
    ...parser.push("\n"),
  ];
  assert.deepEqual(got, [
    { event: "session", data: '{"a":1}' },
    { event: "note", data: "one\ntwo" },
  ]);
});

test("sse: a block without data dispatches nothing; a nameless event is a message", () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push("event: x\n\ndata:plain\n\n"), [{ event: "message", data: "plain" }]);
});

const METRICS = `# TYPE hookline_hook_calls_total counter
hookline_hook_calls_total{hook="on_user_message"} 4
# TYPE hookline_hook_skips_total counter
hookline_hook_skips_total{hook="on_user_message",reason="failed"} 2
hookline_hook_skips_total{hook="on_tool_call",plugin="guard",reason="timed-out"} 1
# TYPE hookline_hook_seconds summary
hookline_hook_seconds{hook="on_tool_call",plugin="guard",quantile="0.5"} 0.000012
hookline_hook_seconds{hook="on_tool_call",plugin="guard",quantile="0.99"} 0.0031
hookline_hook_seconds_sum{hook="on_tool_call",plugin="guard"} 0.004
hookline_hook_seconds_count{hook="on_tool_call",plugin="guard"} 3
hookline_hook_seconds{hook="on_prompt",plugin="we \\"quote\\", and, comma",quantile="0.5"} NaN
hookline_turns_total{stop_reason="completed"} 2 1700000000000
`;

test("metrics: samples with labels, escapes, NaN and timestamps are read", () => {
  const samples = parseMetrics(METRICS);
  assert.equal(samples.length, 9);
  const odd = samples.find((s) => s.labels.hook === "on_prompt");
  assert.equal(odd.labels.plugin, 'we "quote", and, comma');
  assert.ok(Number.isNaN(odd.value));
  assert.equal(samples.at(-1).value, 2);
});

test("metrics: per plugin and hook calls, skips by reason and quantiles", () => {
  const stats = hookStats(parseMetrics(METRICS));
  const guard = stats.find((s) => s.plugin === "guard" && s.hook === "on_tool_call");
  assert.equal(guard.samples, 3);
  assert.equal(guard.calls, null);
  assert.equal(guard.p50, 0.000012);
  assert.equal(guard.p99, 0.0031);
  assert.deepEqual([...guard.skips], [["timed-out", 1]]);
  const every = stats.find((s) => s.plugin === "" && s.hook === "on_user_message");
  assert.equal(every.calls, 4);
  assert.deepEqual([...every.skips], [["failed", 2]]);
  const nan = stats.find((s) => s.hook === "on_prompt");
  assert.equal(nan.p50, null);
});

test("metrics: a counter naming the plugin counts that plugin's calls, apart from latency samples", () => {
  const text = `hookline_hook_calls_total{hook="on_prompt",plugin="a"} 7\nhookline_hook_seconds_count{hook="on_prompt",plugin="a"} 5\n`;
  const [row] = hookStats(parseMetrics(text));
  assert.equal(row.calls, 7);
  assert.equal(row.samples, 5);
});

// What `hookline serve` exports today (docs/serve.md, "Metrics"): the pipeline's calls per hook,
// each plugin's calls and skips by reason per hook, latency per plugin and hook.
const SERVED = `# TYPE hookline_hook_calls_total counter
hookline_hook_calls_total{hook="on_user_message"} 3
# TYPE hookline_plugin_hook_calls_total counter
hookline_plugin_hook_calls_total{plugin="house-style",hook="on_user_message"} 3
hookline_plugin_hook_calls_total{plugin="flaky",hook="on_user_message"} 3
hookline_plugin_hook_calls_total{plugin="house-style",hook="on_prompt"} 0
# TYPE hookline_hook_skips_total counter
hookline_hook_skips_total{plugin="flaky",hook="on_user_message",reason="failed"} 2
hookline_hook_skips_total{plugin="flaky",hook="on_user_message",reason="panicked"} 1
# TYPE hookline_hook_seconds summary
hookline_hook_seconds{hook="on_user_message",plugin="flaky",quantile="0.5"} 0.000004
hookline_hook_seconds{hook="on_user_message",plugin="flaky",quantile="0.99"} 0.00002
hookline_hook_seconds_sum{hook="on_user_message",plugin="flaky"} 0.00003
hookline_hook_seconds_count{hook="on_user_message",plugin="flaky"} 2
hookline_hook_seconds{hook="on_turn_started",plugin="house-style",quantile="0.5"} 0
hookline_hook_seconds_count{hook="on_turn_started",plugin="house-style"} 0
`;

test("metrics: each plugin's calls and skips by reason per hook, beside the pipeline's calls", () => {
  const stats = hookStats(parseMetrics(SERVED));
  const flaky = stats.find((s) => s.plugin === "flaky" && s.hook === "on_user_message");
  assert.equal(flaky.calls, 3);
  assert.deepEqual([...flaky.skips], [["failed", 2], ["panicked", 1]]);
  assert.equal(totalSkips(flaky), 3);
  assert.equal(flaky.p50, 0.000004);
  assert.equal(flaky.p99, 0.00002);
  assert.equal(flaky.samples, 2);
  const house = stats.find((s) => s.plugin === "house-style" && s.hook === "on_user_message");
  assert.equal(house.calls, 3);
  assert.equal(totalSkips(house), 0);
  // An empty summary's quantiles read 0: no figure.
  const empty = stats.find((s) => s.plugin === "house-style" && s.hook === "on_turn_started");
  assert.equal(empty.p50, null);
  assert.equal(empty.samples, 0);
  const pipeline = stats.find((s) => s.plugin === "" && s.hook === "on_user_message");
  assert.equal(pipeline.calls, 3);
  assert.equal(pipeline.skips.size, 0);
});

test("metrics: a plugin's hooks are the ones it has a counter for, run or not, or latency samples of", () => {
  const stats = hookStats(parseMetrics(SERVED));
  // on_prompt: registered, not run yet; on_turn_started: an empty summary only, so not listed.
  assert.deepEqual(hooksOf(stats, "house-style"), ["on_prompt", "on_user_message"]);
  assert.deepEqual(hooksOf(stats, "flaky"), ["on_user_message"]);
  assert.deepEqual(hooksOf(stats, "nobody"), []);
});

test("metrics: latencies read as people write them", () => {
  assert.equal(formatSeconds(0.000012), "12 µs");
  assert.equal(formatSeconds(0.0031), "3.10 ms");
  assert.equal(formatSeconds(0.25), "250.0 ms");
  assert.equal(formatSeconds(1.5), "1.50 s");
  assert.equal(formatSeconds(null), "–");
});

test("diff: a hook's appended line shows as added, the rest the same", () => {
  const parts = diffWords("hello world", "hello world\n(checked by guard)");
  assert.deepEqual(parts, [
    { kind: "same", text: "hello world" },
    { kind: "added", text: "\n(checked by guard)" },
  ]);
});

test("diff: a replaced word is removed then added; joining each side gives the texts back", () => {
  const before = "fix my password hunter2 now";
  const after = "fix my [password redacted] now";
  const parts = diffWords(before, after);
  const side = (kind) => parts.filter((p) => p.kind === "same" || p.kind === kind).map((p) => p.text).join("");
  assert.equal(side("removed"), before);
  assert.equal(side("added"), after);
  assert.deepEqual(parts, [
    { kind: "same", text: "fix my " },
    { kind: "removed", text: "password hunter2" },
    { kind: "added", text: "[password redacted]" },
    { kind: "same", text: " now" },
  ]);
});

test("diff: texts past the size bound still diff, as one removal and one insertion", () => {
  const before = Array.from({ length: 800 }, (_, i) => `a${i}`).join(" ");
  const after = Array.from({ length: 800 }, (_, i) => `b${i}`).join(" ");
  const parts = diffWords(before, after);
  assert.deepEqual(parts.map((p) => p.kind), ["removed", "added"]);
});

test("diff: a value whose text alone changed shows its text; others show field by field", () => {
  assert.deepEqual(valueTexts({ sideQuestion: false, text: "a" }, { sideQuestion: false, text: "b" }), ["a", "b"]);
  assert.deepEqual(valueTexts("x", "y"), ["x", "y"]);
  const [before, after] = valueTexts(
    { appended: [], mode: "work", text: "line one\nline two" },
    { appended: ["House style."], mode: "work", text: "line one\nline two" },
  );
  assert.equal(before, "appended: []\nmode: work\ntext:\nline one\nline two");
  assert.equal(after, 'appended: [\n  "House style."\n]\nmode: work\ntext:\nline one\nline two');
  const [call] = valueTexts({ callId: "c1", arguments: { path: "../x" } }, { callId: "c1", arguments: { path: "x" } });
  assert.equal(call, 'callId: c1\narguments: {\n  "path": "../x"\n}');
});

test("diff: a patch's changes pair each tested old value with its replacement", () => {
  const changes = patchChanges([
    { op: "test", path: "/items/3/text", value: "hello" },
    { op: "replace", path: "/items/3/text", value: "hello (be brief)" },
    { op: "add", path: "/items/4", value: { id: "operator-reminder", kind: "user", text: "Reminder" } },
    { op: "test", path: "/images/0", value: { number: 1 } },
    { op: "remove", path: "/images/0" },
    { op: "replace", path: "/mode", value: "plan" },
  ]);
  assert.deepEqual(changes, [
    { path: "/items/3/text", before: "hello", after: "hello (be brief)" },
    { path: "/items/4", after: { id: "operator-reminder", kind: "user", text: "Reminder" } },
    { path: "/images/0", before: { number: 1 } },
    { path: "/mode", after: "plan" },
  ]);
  assert.equal(patchText("x"), "x");
  assert.equal(patchText(undefined), "");
  assert.equal(patchText({ a: 1 }), '{\n  "a": 1\n}');
});

const listed = (session, callId, deadlineMs) => ({
  session, callId, tool: "write_file", arguments: { path: "x.txt" }, risk: "write", authority: "workspace",
  summary: "write x.txt", deadlineMs,
});

test("approvals: the server's list is taken in full and drops what it no longer waits for", () => {
  const store = new Store();
  let changes = 0;
  store.subscribe((c) => { if (c.kind === "approvals") changes++; });
  // Known only by call id (a session's detail from an older answer), and one settled meanwhile.
  store.pending("s1", ["c1", "gone"]);
  store.waiting([listed("s1", "c1", 2000), listed("s2", "c9", 1000)]);
  assert.deepEqual([...store.approvals.keys()].sort(), [approvalKey("s1", "c1"), approvalKey("s2", "c9")].sort());
  const c1 = [...store.approvals.values()].find((a) => a.callId === "c1");
  assert.equal(c1.tool, "write_file");
  assert.deepEqual(c1.arguments, { path: "x.txt" });
  assert.deepEqual(c1.classification, { risk: "write", authority: "workspace", summary: "write x.txt", requiresPrompt: true });
  assert.equal(c1.deadlineMs, 2000);
  const seen = changes;
  // The same list again changes nothing.
  store.waiting([listed("s1", "c1", 2000), listed("s2", "c9", 1000)]);
  assert.equal(changes, seen);
  // A session's detail in full fills an approval the console knew by id only.
  store.pending("s3", ["c5"], [{ ...listed("s3", "c5", 3000), session: undefined }]);
  const c5 = [...store.approvals.values()].find((a) => a.callId === "c5");
  assert.equal(c5.session, "s3");
  assert.equal(c5.tool, "write_file");
  store.waiting([]);
  assert.equal(store.approvals.size, 0);
});

// Issue 46 item 3: a session's earlier turns from its stored archive.
const CLASSIFIED = { risk: "write", authority: "workspace", summary: "writes x.txt", requiresPrompt: true };
const ARCHIVE = [
  { kind: "session-started", workspaceRoot: "/w", sessionId: "s1", approvalMode: "ask-above-read" },
  { kind: "bootstrap" },
  { kind: "user-message", text: "hello [redacted]", original: "hello secret" },
  { kind: "system-text", mode: "work", text: "be good" },
  { kind: "model-request", purpose: "work", acceptsImages: false, sha256: "ab", changes: [{ op: "replace", path: "/items/1/text", value: "hello (be brief)" }] },
  { kind: "model-response", purpose: "work", finishReason: "stop", items: [{ id: "i1", kind: "assistant", text: "echo: hello" }], usage: {} },
  { kind: "turn-finished", stopReason: "completed" },
  { kind: "note", note: { kind: "plugin-skipped", plugin: "flaky" }, text: "flaky was skipped." },
  { kind: "note", note: { kind: "plugin-skipped", plugin: "flaky", hook: "on_user_message" }, text: "flaky was skipped on the message." },
  { kind: "user-message", text: "call write_file {}" },
  { kind: "model-request", purpose: "work", acceptsImages: false, sha256: "cd" },
  { kind: "model-response", purpose: "work", finishReason: "tool-calls", items: [{ id: "i2", kind: "tool-call", callId: "call-2", name: "write_file", arguments: {} }], usage: {} },
  { kind: "tool-call", call: { callId: "call-2", name: "write_file", arguments: { path: "x.txt" } }, rewrittenFrom: { callId: "call-2", name: "write_file", arguments: {} } },
  { kind: "approval-asked", call: { callId: "call-2", name: "write_file", arguments: { path: "x.txt" } }, classification: CLASSIFIED, askedMs: 1 },
  { kind: "approval", callId: "call-2", tool: "write_file", classification: CLASSIFIED, decision: "allow", decidedBy: "operator" },
  { kind: "tool-output", callId: "call-2", text: "wrote", success: true },
  { kind: "tool-result", callId: "call-2", name: "write_file", text: "wrote (checked)", success: true, approval: "approved" },
  { kind: "side-question", question: "why?" },
  { kind: "model-response", purpose: "side", finishReason: "stop", items: [{ id: "i3", kind: "assistant", text: "because" }], usage: {} },
  { kind: "model-response", purpose: "work", finishReason: "stop", items: [{ id: "i4", kind: "assistant", text: "done" }], usage: {} },
  { kind: "turn-finished", stopReason: "completed" },
  { kind: "user-message", text: "third" },
];

test("history: stored entries become turns numbered as the session numbers them", () => {
  const { turns, droppedTurns } = historyTurns(ARCHIVE, 4);
  assert.equal(droppedTurns, 0);
  assert.deepEqual(turns.map((t) => [t.isTurn, t.number, t.open, t.stopReason]), [
    [false, 0, false, null], [true, 5, false, "completed"], [false, 0, false, null], [true, 6, false, "completed"], [true, 7, true, null],
  ]);
  const kinds = (t) => t.entries.map((e) => e.event.event);
  assert.deepEqual(kinds(turns[0]), ["session-started", "info"]);
  assert.deepEqual(kinds(turns[1]), ["user", "system-text", "hook-changed", "assistant", "turn-finished"]);
  assert.deepEqual(kinds(turns[2]), ["note"]);
  assert.deepEqual(kinds(turns[3]), ["note", "user", "tool-call", "approval-requested", "approval", "tool-run", "tool-result", "side", "assistant", "turn-finished"]);
  const [user] = turns[1].entries;
  assert.deepEqual(user.event, { event: "user", session: "", text: "hello [redacted]", original: "hello secret" });
  assert.deepEqual(turns[1].entries[2].event.patch, [{ op: "replace", path: "/items/1/text", value: "hello (be brief)" }]);
  const byKind = (t, kind) => t.entries.find((e) => e.event.event === kind).event;
  assert.equal(byKind(turns[3], "approval").decidedBy, "operator");
  assert.equal(byKind(turns[3], "tool-run").tool, "write_file", "the tool's name from its call");
  assert.deepEqual(byKind(turns[3], "tool-call").rewrittenFrom, { callId: "call-2", name: "write_file", arguments: {} });
  assert.deepEqual(byKind(turns[3], "side"), { event: "side", question: "why?", answer: "because" });
  assert.equal(byKind(turns[3], "assistant").text, "done");
  assert.equal(byKind(turns[2], "note").text, "flaky was skipped.");
});

test("history: the live turns take over from their number on", () => {
  const stored = historyTurns(ARCHIVE.slice(0, 8), 0).turns; // between, turn 1, between (the note)
  const liveTurn = (number, open = false) => ({ isTurn: true, number, open, entries: [], dropped: 0, stopReason: open ? null : "completed", streaming: "" });
  const between = (entries = []) => ({ isTurn: false, number: 0, open: true, entries, dropped: 0, stopReason: null, streaming: "" });
  // Nothing live: the stored groups.
  assert.deepEqual(mergeTurns(stored, []), stored);
  // Turn 2 seen live: the stored ones before it, then the live ones.
  const two = liveTurn(2);
  assert.deepEqual(mergeTurns(stored, [two]), [...stored, two]);
  // A live turn the store has too: the live one (with its hook changes) is shown, once.
  const one = liveTurn(1);
  assert.deepEqual(mergeTurns(stored, [one, two]), [stored[0], one, two]);
  // Live events between turns before the first live turn are the stored ones just before it.
  const seen = between();
  assert.deepEqual(mergeTurns(stored, [seen, two]), [stored[0], stored[1], seen, two]);
  assert.deepEqual(mergeTurns(stored, [seen]), [stored[0], stored[1], seen]);
  // A stored turn still open takes the live events that followed it.
  const running = historyTurns(ARCHIVE, 0).turns;
  const rest = between([{ at: 1, event: { event: "assistant", text: "late" } }, { at: 2, event: { event: "turn-finished", stopReason: "completed" } }]);
  rest.stopReason = "completed";
  rest.open = false;
  const merged = mergeTurns(running, [rest]);
  const last = merged[merged.length - 1];
  assert.equal(merged.length, running.length);
  assert.equal(last.number, 3);
  assert.equal(last.stopReason, "completed");
  assert.equal(last.open, false);
  assert.deepEqual(last.entries.map((e) => e.event.event), ["user", "assistant", "turn-finished"]);
});

test("store: a live turn takes the session's number from its user event", () => {
  const store = new Store();
  store.event({ session: "k", event: { event: "user", session: "k", text: "hi", original: null, turn: 7 } });
  store.event({ session: "k", event: { event: "turn-finished", stopReason: "completed" } });
  store.event({ session: "k", event: { event: "user", session: "k", text: "again", original: null } });
  assert.deepEqual(store.sessions.get("k").turns.map((t) => t.number), [7, 8]);
});

test("plugins: a loaded plugin's state now is its status, with why and since when", () => {
  const rows = pluginRows({
    plugins: [
      { name: "steady", kind: "python3", state: "loaded", stateSince: "2026-12-05T08:00:00.000Z" },
      {
        name: "crashy", kind: "python3", state: "suspended", stateSince: "2026-12-05T08:01:02.000Z",
        stateReason: "its process exited 3 times in 300 s, so the runtime stopped calling it",
      },
      { name: "off", kind: "node", state: "disabled" },
    ],
    inProcess: ["house-style"],
    loadNotes: [],
  });
  assert.deepEqual(rows.map((r) => [r.name, r.status]),
    [["steady", "loaded"], ["crashy", "suspended"], ["off", "disabled"], ["house-style", "loaded"]]);
  assert.equal(rows[0].statusDetail, "");
  assert.match(rows[1].statusDetail, /^since .+: its process exited 3 times in 300 s, so the runtime stopped calling it$/);
  assert.equal(rows[2].statusDetail, "");
  assert.equal(rows[3].statusDetail, "");
});
