// One session's timeline, turn by turn: the user text as typed and as stored, every hook that
// changed a value (with a word diff of its text), every note, tool calls and their rewrites,
// approvals, tool runs and results, the model's answer, and the stop reason. Fed by the live
// events, after the earlier turns read from the store's archive when the view opens (their hook
// changes are not stored); the stored records (what the server keeps) can be loaded below it.

import { diffWords, patchChanges, patchText, valueTexts } from "../diff";
import { button, clock, h, json, type Child } from "../dom";
import { historyTurns, mergeTurns, type ArchiveEntry, type History } from "../history";
import type { HostEvent, PatchOp, StoredRecord, ToolCall } from "../model";
import type { Entry, SessionView, Turn } from "../state";
import { usageText } from "../usage";
import { activityLabel, errorText, rebuild, type App, type View } from "../view";
import { approvalCard, approvalsOf } from "./approvals";

/** Unchanged lines kept on each side of a change; longer unchanged runs are folded. */
const CONTEXT_LINES = 2;

/** An unchanged run, its middle folded when long (`first`/`last`: it opens or ends the text). */
function same(text: string, first: boolean, last: boolean): Child[] {
  const lines = text.split("\n");
  const shownHead = first ? 0 : CONTEXT_LINES + 1;
  const shownTail = last ? 0 : CONTEXT_LINES + 1;
  const folded = lines.length - shownHead - shownTail;
  if ((first && last) || folded < 3) return [text];
  return [
    first ? "" : `${lines.slice(0, shownHead).join("\n")}\n`,
    h("span", { class: "folded" }, `… ${folded} unchanged lines …`),
    last ? "" : `\n${lines.slice(lines.length - shownTail).join("\n")}`,
  ];
}

/** A before/after diff, as <del> and <ins> runs in one block, long unchanged runs folded. */
export function diffBlock(before: string, after: string, label: string, key: string): HTMLElement {
  const diff = diffWords(before, after);
  const parts = diff.map((p, i) =>
    p.kind === "same"
      ? same(p.text, i === 0, i === diff.length - 1)
      : h(p.kind === "removed" ? "del" : "ins", {}, p.text));
  return h("div", { class: "diff", role: "group", "aria-label": label },
    h("pre", { class: "code" }, ...parts),
    h("details", { "data-key": `raw:${key}` },
      h("summary", {}, "Before and after in full"),
      h("div", { class: "before-after" },
        h("div", {}, h("h5", {}, "Before"), h("pre", { class: "code" }, before)),
        h("div", {}, h("h5", {}, "After"), h("pre", { class: "code" }, after)))));
}

/** A hook's change from its JSON Patch: each changed place by its path, as a word diff. */
function patchBlock(patch: PatchOp[], hook: string, key: string): HTMLElement {
  const changes = patchChanges(patch);
  return h("div", { class: "patch" }, ...changes.map((change, i) =>
    h("div", { class: "patch-change" },
      h("p", { class: "sub mono" }, change.from !== undefined ? `${change.path} from ${change.from}` : change.path),
      change.from !== undefined
        ? null
        : diffBlock(patchText(change.before), patchText(change.after), `what ${hook} changed at ${change.path}`, `${key}:${i}`))));
}

function item(kind: string, title: Child, ...body: Child[]): HTMLLIElement {
  return h("li", { class: `event ev-${kind}`, "data-event": kind },
    h("div", { class: "event-title" }, h("span", { class: "kind" }, kind), " ", title),
    ...body);
}

function callText(call: ToolCall): string {
  return `${call.name} ${JSON.stringify(call.arguments)}`;
}

/** One event of a turn. */
export function renderEvent(event: HostEvent, key: string): HTMLLIElement {
  switch (event.event) {
    case "user":
      return item("user", "the user's message",
        event.original !== null && event.original !== event.text
          ? diffBlock(event.original, event.text, "typed, then stored", key)
          : null,
        h("dl", { class: "facts" },
          h("dt", {}, "As typed"), h("dd", {}, h("pre", { class: "code typed" }, event.original ?? event.text)),
          h("dt", {}, "As stored"), h("dd", {}, h("pre", { class: "code stored" }, event.text))));
    case "hook-changed":
      return item("hook-changed", [h("span", { class: "mono" }, event.hook), " changed by ",
        h("span", { class: "mono" }, event.changedBy.join(", "))],
        event.before !== undefined && event.after !== undefined
          ? diffBlock(...valueTexts(event.before, event.after), `what ${event.hook} changed`, key)
          : patchBlock(event.patch ?? [], event.hook, key));
    case "note":
      return item("note", h("span", { class: "mono" }, event.note.kind), h("p", { class: "note-text" }, event.text));
    case "tool-call":
      return item("tool-call", [h("span", { class: "mono" }, event.call.name), " ", h("span", { class: "sub mono" }, event.call.callId)],
        event.rewrittenFrom
          ? h("div", {}, h("p", { class: "sub" }, "Rewritten by on_tool_call:"),
              diffBlock(callText(event.rewrittenFrom), callText(event.call), `tool call ${event.call.callId} rewritten`, key))
          : h("pre", { class: "code" }, json(event.call.arguments)));
    case "approval-requested":
      return item("approval-requested", [h("span", { class: "mono" }, event.tool), " asks the operator"],
        h("p", {}, `${event.classification.risk} · ${event.classification.authority} · ${event.classification.summary}`));
    case "approval":
      return item("approval", [h("span", { class: `badge decision-${event.decision}` }, event.decision),
        " ", h("span", { class: "mono" }, event.tool), ` by ${event.decidedBy}`],
        h("p", { class: "sub" }, `${event.classification.risk} · ${event.classification.authority} · ${event.classification.summary}`));
    case "tool-run":
      return item("tool-run", [h("span", { class: "mono" }, event.tool), event.success ? " succeeded" : " failed"],
        h("pre", { class: "code" }, event.text));
    case "tool-result":
      return item("tool-result", [h("span", { class: "mono" }, event.name), ` (${event.approval})`],
        h("pre", { class: "code" }, event.text));
    case "assistant":
      return item("assistant", "the model's answer", h("pre", { class: "code answer" }, event.text));
    case "model-failed":
      return item("model-failed", `the ${event.purpose} call failed`, h("p", { class: "error" }, event.error));
    case "model-call":
      return item("model-call", `${event.purpose} call with ${event.items} items`);
    case "system-text":
      return item("system-text", `${event.mode} system text`,
        h("details", { "data-key": `sys:${key}` }, h("summary", {}, "Show"), h("pre", { class: "code" }, event.text)));
    case "turn-finished":
      return item("turn-finished", [h("span", { class: `badge stop-${event.stopReason}` }, event.stopReason)]);
    case "gateway-event":
      return item("gateway-event", [h("span", { class: "mono" }, event.key), ` (${event.wait})`],
        typeof event.calls === "number" ? h("p", { class: "sub" }, `${event.calls} handler calls`) : null);
    case "info":
      return item("info", event.text);
    case "side":
      return item("side", event.question, h("pre", { class: "code" }, event.answer));
    case "compacted":
      return item("compacted", `${event.folded} records folded`, h("pre", { class: "code" }, event.summary));
    case "bootstrap":
      return item("bootstrap", "workspace files", h("p", { class: "mono" }, event.files.join(", ")));
    case "session-started":
    case "session-ended":
      return item(event.event, h("span", { class: "mono" }, event.sessionId), h("p", { class: "sub mono" }, event.workspaceRoot));
    default:
      return item("event", "", h("pre", { class: "code" }, json(event)));
  }
}

/** Archive entries read when a session's view opens, at most. */
const MAX_HISTORY_ENTRIES = 5000;
/** Entries per archive page read. */
const HISTORY_PAGE = 1000;

/** Reads the last [`MAX_HISTORY_ENTRIES`] entries of `key`'s archive as turns. */
async function readHistory(app: App, key: string): Promise<History> {
  const first = await app.api.archive(key, 0, 1);
  const from = Math.max(0, first.total - MAX_HISTORY_ENTRIES);
  const items: ArchiveEntry[] = [];
  let turnsBefore = 0;
  for (let offset = from; offset < first.total; offset += HISTORY_PAGE) {
    const page = await app.api.archive(key, offset, HISTORY_PAGE);
    if (offset === from) turnsBefore = page.turnsBefore;
    items.push(...page.items);
    if (page.items.length === 0) break;
  }
  const history = historyTurns(items, turnsBefore);
  return { ...history, droppedTurns: history.droppedTurns + (from > 0 ? 1 : 0), sessionId: first.sessionId };
}

function turnSection(key: string, turn: Turn, index: number, stored: boolean): HTMLElement {
  const title = turn.isTurn ? `Turn ${turn.number}` : "Between turns";
  const headingId = `group-${index}`;
  return h("section", {
    class: turn.isTurn ? "turn" : "turn between", "aria-labelledby": headingId,
    "data-turn": turn.isTurn ? turn.number : null,
  },
    h("h3", { id: headingId }, title, " ",
      turn.stopReason ? h("span", { class: `badge stop-${turn.stopReason}` }, turn.stopReason)
        : turn.isTurn && turn.open ? h("span", { class: "badge state-turn" }, "running") : null,
      " ", stored
        ? h("span", { class: "sub", "data-stored": "true" }, "from the store")
        : h("span", { class: "sub" }, clock(turn.entries[0]?.at ?? 0))),
    h("ol", { class: "events" }, ...turn.entries.map((e: Entry, i) => renderEvent(e.event, `${key}:${index}:${i}`)),
      turn.streaming ? h("li", { class: "event ev-model-text" }, h("div", { class: "event-title" }, h("span", { class: "kind" }, "model-text"), " streaming"), h("pre", { class: "code" }, turn.streaming)) : null),
    turn.dropped > 0 ? h("p", { class: "sub" }, `${turn.dropped} more events not kept.`) : null);
}

function records(items: StoredRecord[]): HTMLElement {
  return h("ol", { class: "records" }, ...items.map((r) =>
    h("li", { "data-record": r.kind },
      h("span", { class: "kind" }, r.kind), " ",
      r.name ? h("span", { class: "mono" }, `${r.name} `) : null,
      r.text !== undefined ? h("pre", { class: "code" }, r.text) : null,
      r.arguments !== undefined ? h("pre", { class: "code" }, json(r.arguments)) : null)));
}

/** The view of session `key`. */
export function timelineView(app: App, key: string): View {
  const status = h("div", { class: "status-line" });
  const pending = h("div", { class: "session-approvals" });
  const timeline = h("div", { class: "timeline", id: "timeline" });
  const stored = h("div", { class: "stored" });
  const input = h("input", { id: "turn-text", name: "text", type: "text", autocomplete: "off", spellcheck: "false" });
  const sendMessage = h("p", { class: "form-message", role: "status" });
  const form = h("form", { class: "inline-form", "aria-label": "Send a message" },
    h("label", { for: "turn-text" }, "Message"), input, h("button", { type: "submit" }, "Send"), sendMessage);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value;
    if (text.trim() === "") return;
    input.value = "";
    sendMessage.textContent = "Sent; the turn runs below.";
    app.api.turn(key, text).then(
      () => { sendMessage.textContent = ""; },
      (error: unknown) => { sendMessage.textContent = errorText(error); },
    );
  });
  const loadRecords = (): void => {
    rebuild(stored, h("p", { class: "sub" }, "Loading…"));
    app.api.session(key, 0, 100).then(
      (detail) => {
        app.store.pending(key, detail.pendingApprovals, detail.approvals);
        rebuild(stored,
          h("p", { class: "sub" }, `${detail.records.total} stored records${detail.records.total > detail.records.items.length ? `, the first ${detail.records.items.length} shown` : ""}.`),
          records(detail.records.items));
      },
      (error: unknown) => rebuild(stored, h("p", { class: "error" }, errorText(error))),
    );
  };
  const element = h("section", { "aria-labelledby": "session-heading" },
    h("h2", { id: "session-heading" }, "Session ", h("span", { class: "mono" }, key)),
    status, pending, form,
    h("h3", {}, "Timeline"),
    timeline,
    h("details", { class: "stored-records" },
      h("summary", {}, "Stored records"),
      button("Load stored records", loadRecords, { "data-key": "load-records" }),
      stored));
  const drawStatus = (view: SessionView | undefined): void => {
    if (!view) {
      rebuild(status, h("p", { class: "empty" }, "This console has not seen this session. It may be closed."));
      return;
    }
    const s = view.status;
    rebuild(status, h("dl", { class: "facts inline" },
      h("dt", {}, "State"), h("dd", {}, h("span", { class: `badge state-${s.activity}` }, activityLabel(s.activity))),
      h("dt", {}, "Workspace"), h("dd", { class: "mono" }, s.workspace || "–"),
      h("dt", {}, "Active session"), h("dd", { class: "mono" }, s.sessionId ?? "–"),
      h("dt", {}, "Approval mode"), h("dd", {}, s.approvalMode || "–"),
      h("dt", {}, "Model"), h("dd", { class: "mono" }, s.model ?? "–"),
      h("dt", {}, "Turns"), h("dd", {}, s.turns),
      h("dt", {}, "Tokens"), h("dd", { "data-key": "usage" }, usageText(s.usage)),
      h("dt", {}, "Last activity"), h("dd", {}, clock(s.lastActivityMs))));
  };
  let historyProblem: string | null = null;
  const drawTimeline = (view: SessionView | undefined): void => {
    const live = view?.turns ?? [];
    const past = view?.history?.turns ?? [];
    const turns = mergeTurns(past, live);
    const stored = new Set(past);
    const fromStore = turns.filter((t) => stored.has(t));
    rebuild(timeline,
      historyProblem === null ? null : h("p", { class: "error" }, `The earlier turns could not be read: ${historyProblem}`),
      fromStore.length > 0
        ? h("p", { class: "sub history-note" },
            "The groups marked “from the store” are read from the session's archive: the hook changes of those turns are not stored, so they do not show (a user text a hook replaced, a rewritten tool call and what changed in a model request do). Turns run while this page is open show every change.")
        : null,
      view && view.droppedTurns + (view.history?.droppedTurns ?? 0) > 0
        ? h("p", { class: "sub" }, `${view.droppedTurns + (view.history?.droppedTurns ?? 0)} older groups not shown.`)
        : null,
      turns.length === 0
        ? h("p", { class: "empty" }, view?.history
            ? "Nothing has happened in this session yet. Events show here as they happen."
            : historyProblem === null ? "Reading the session's earlier turns…" : "No event seen yet. Events show here as they happen.")
        : turns.map((t, i) => turnSection(key, t, i, stored.has(t))));
  };
  const drawApprovals = (): void => {
    const mine = approvalsOf(app, key);
    rebuild(pending, mine.length === 0 ? null : [h("h3", {}, "Waiting for you"), ...mine.map((a) => approvalCard(app, a, false))]);
  };
  const draw = (): void => {
    const view = app.store.sessions.get(key);
    drawStatus(view);
    drawApprovals();
    drawTimeline(view);
  };
  draw();
  // Its earlier turns, from the store (issue 46 item 3).
  readHistory(app, key).then(
    (history) => app.store.history(key, history),
    (error: unknown) => {
      historyProblem = errorText(error);
      drawTimeline(app.store.sessions.get(key));
    },
  );
  // Approvals asked before this page opened are known only from the session's detail.
  app.api.session(key, 0, 1).then((d) => app.store.pending(key, d.pendingApprovals, d.approvals), () => undefined);
  return {
    element,
    title: `Session ${key}`,
    update: (changes) => {
      const view = app.store.sessions.get(key);
      if (changes.some((c) => c.kind === "sessions")) drawStatus(view);
      if (changes.some((c) => c.kind === "approvals")) drawApprovals();
      if (changes.some((c) => c.kind === "timeline" && c.session === key)) drawTimeline(view);
    },
  };
}
