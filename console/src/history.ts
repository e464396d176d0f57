// A session's past, from its stored archive (`GET /v1/sessions/{id}/archive`): each entry made
// into the event the timeline draws, grouped into turns numbered as the session numbers them,
// and merged with the turns the console saw live (which carry more: the hooks' changes).
// Pure: no DOM, no fetch (tested in test/unit.test.mjs).

import { isObject, type Classification, type HostEvent, type PatchOp, type ToolCall } from "./model";
import { MAX_TURN_EVENTS, MAX_TURNS, shapesUserMessage, type Entry, type Turn } from "./state";

/** One stored archive entry (Rust `ArchiveEntry`, tagged by `kind`). */
export type ArchiveEntry = { kind: string } & Record<string, unknown>;

/** `GET /v1/sessions/{id}/archive`. */
export interface ArchivePage {
  sessionId: string | null;
  total: number;
  offset: number;
  /** User messages before `offset`. */
  turnsBefore: number;
  items: ArchiveEntry[];
}

/** A session's past as read from the store. */
export interface History {
  /** The groups, oldest first (at most [`MAX_TURNS`]). */
  turns: Turn[];
  /** Older groups not kept, and entries before the pages read. */
  droppedTurns: number;
  /** The active session the archive was of. */
  sessionId: string | null;
}

const text = (value: unknown): string => (typeof value === "string" ? value : "");

function call(value: unknown): ToolCall {
  const v = isObject(value) ? value : {};
  return { callId: text(v["callId"]), name: text(v["name"]), arguments: v["arguments"] ?? null };
}

function classification(value: unknown): Classification {
  const v = isObject(value) ? value : {};
  return {
    risk: text(v["risk"]), authority: text(v["authority"]), summary: text(v["summary"]),
    requiresPrompt: v["requiresPrompt"] === true,
  };
}

/** The assistant texts of a stored model response. */
function answers(entry: ArchiveEntry): string[] {
  const items = Array.isArray(entry["items"]) ? entry["items"] : [];
  return items.filter((i) => isObject(i) && i["kind"] === "assistant").map((i) => text((i as Record<string, unknown>)["text"]));
}

/** Makes archive entries into timeline events, keeping what a tool call's id names. */
class Reader {
  private readonly tools = new Map<string, string>();
  private side: string | null = null;

  /** The events one entry shows as (none for the bookkeeping ones). */
  events(entry: ArchiveEntry): HostEvent[] {
    const e = entry;
    switch (e.kind) {
      case "session-started":
      case "session-ended":
        return [{
          event: e.kind, workspaceRoot: text(e["workspaceRoot"]), sessionId: text(e["sessionId"]),
          approvalMode: text(e["approvalMode"]),
        }];
      case "user-message":
        return [{ event: "user", session: "", text: text(e["text"]), original: typeof e["original"] === "string" ? e["original"] : null }];
      case "system-text":
        return [{ event: "system-text", mode: text(e["mode"]), text: text(e["text"]) }];
      case "model-request": {
        // The one hook change the archive keeps: from the request built from the stored
        // records to the one sent (rebuild_model, transform_model and the provider's needs).
        const changes = Array.isArray(e["changes"]) ? (e["changes"] as PatchOp[]) : [];
        if (changes.length === 0) return [];
        return [{ event: "hook-changed", hook: "model request", changedBy: ["rebuild_model, transform_model and the provider's preparation"], patch: changes }];
      }
      case "model-response": {
        const texts = answers(e);
        if (e["purpose"] === "side") {
          const question = this.side;
          this.side = null;
          return question === null ? [] : [{ event: "side", question, answer: texts.join("\n") }];
        }
        if (e["purpose"] === "compaction") return [];
        return texts.map((t) => ({ event: "assistant", text: t }));
      }
      case "model-failure":
        return [{ event: "model-failed", purpose: text(e["purpose"]), error: text(e["error"]) }];
      case "side-question":
        this.side = text(e["question"]);
        return [];
      case "tool-call": {
        const made = call(e["call"]);
        this.tools.set(made.callId, made.name);
        return [{ event: "tool-call", call: made, rewrittenFrom: isObject(e["rewrittenFrom"]) ? call(e["rewrittenFrom"]) : null }];
      }
      case "approval-asked": {
        const asked = call(e["call"]);
        return [{
          event: "approval-requested", callId: asked.callId, tool: asked.name, arguments: asked.arguments,
          classification: classification(e["classification"]), timeoutMs: 0,
        }];
      }
      case "approval":
        return [{
          event: "approval", callId: text(e["callId"]), tool: text(e["tool"]),
          classification: classification(e["classification"]),
          decision: e["decision"] === "allow" ? "allow" : "deny", decidedBy: text(e["decidedBy"]),
        }];
      case "tool-output":
        return [{
          event: "tool-run", callId: text(e["callId"]), tool: this.tools.get(text(e["callId"])) ?? "",
          arguments: null, success: e["success"] === true, text: text(e["text"]),
        }];
      case "tool-result":
        return [{
          event: "tool-result", callId: text(e["callId"]), name: text(e["name"]), text: text(e["text"]),
          success: e["success"] === true, approval: text(e["approval"]),
        }];
      case "compaction":
        return [{ event: "compacted", folded: typeof e["folded"] === "number" ? e["folded"] : 0, summary: text(e["summary"]) }];
      case "turn-finished":
        return [{ event: "turn-finished", stopReason: text(e["stopReason"]) }];
      case "note":
        return [{ event: "note", note: isObject(e["note"]) ? (e["note"] as { kind: string }) : { kind: "note" }, text: text(e["text"]) }];
      case "gateway-event": {
        const emitted = isObject(e["event"]) ? e["event"] : {};
        return [{ event: "gateway-event", key: text(emitted["key"]), wait: "awaited", ...(typeof e["calls"] === "number" ? { calls: e["calls"] } : {}) }];
      }
      case "approvals-set":
        return [{ event: "info", text: `The approval mode was set to ${text(e["mode"])}.` }];
      case "seeded": {
        const records = Array.isArray(e["records"]) ? e["records"].length : 0;
        return [{ event: "info", text: `The session started with ${records} records copied from another one.` }];
      }
      case "bootstrap":
        return [{ event: "info", text: typeof e["text"] === "string" ? "The workspace's bootstrap text was read." : "No bootstrap file has content." }];
      default:
        return [{ event: "info", text: `A stored ${e.kind} entry.` }];
    }
  }
}

/**
 * The turns of archive entries `items` (in order), the first user message among them starting
 * turn `turnsBefore + 1`: a user message starts a turn, `turn-finished` ends it, anything else
 * outside a turn goes to a group between turns. A last turn without its end is still open.
 */
export function historyTurns(items: ArchiveEntry[], turnsBefore: number): History {
  const reader = new Reader();
  const turns: Turn[] = [];
  let number = turnsBefore;
  let current: Turn | null = null;
  const open = (isTurn: boolean): Turn => {
    const turn: Turn = { isTurn, number: isTurn ? ++number : 0, open: true, entries: [], dropped: 0, stopReason: null, streaming: "" };
    turns.push(turn);
    return turn;
  };
  for (const entry of items) {
    for (const event of reader.events(entry)) {
      if (event.event === "user") {
        // The notes of on_user_message come before the text is stored: they go with its turn.
        let carried: Entry[] = [];
        if (current && !current.isTurn) {
          let from = current.entries.length;
          while (from > 0 && shapesUserMessage(current.entries[from - 1]?.event)) from--;
          carried = current.entries.splice(from);
          if (current.entries.length === 0) turns.pop();
        }
        if (current) current.open = false;
        current = open(true);
        current.entries.push(...carried);
      } else if (!current || !current.open) {
        current = open(false);
      }
      if (current.entries.length < MAX_TURN_EVENTS) current.entries.push({ at: 0, event });
      else current.dropped++;
      if (event.event === "turn-finished") {
        current.stopReason = event.stopReason;
        current.open = false;
      }
    }
  }
  // Between-turns groups end where the next group starts.
  for (const turn of turns) if (!turn.isTurn && turn !== turns[turns.length - 1]) turn.open = false;
  const dropped = Math.max(0, turns.length - MAX_TURNS);
  return { turns: turns.slice(dropped), droppedTurns: dropped, sessionId: null };
}

/**
 * The groups to show: the stored ones up to the first turn the console saw live, then the live
 * ones (which carry the hooks' changes). The live groups before that turn are the same events as
 * the stored ones between turns just before it, so those stored ones give way; an open stored
 * turn takes the live events that followed it when no live turn started since.
 */
export function mergeTurns(history: Turn[], live: Turn[]): Turn[] {
  if (history.length === 0) return live;
  if (live.length === 0) return history;
  const firstLive = live.find((t) => t.isTurn)?.number;
  const kept: Turn[] = [];
  for (const turn of history) {
    if (firstLive !== undefined && turn.isTurn && turn.number >= firstLive) break;
    kept.push(turn);
  }
  const leading = live.findIndex((t) => t.isTurn);
  const before = leading === -1 ? live : live.slice(0, leading);
  const after = leading === -1 ? [] : live.slice(leading);
  const last = kept[kept.length - 1];
  if (firstLive === undefined && last && last.isTurn && last.open) {
    // The console opened while this turn ran: what it saw since is the rest of it.
    const rest = before.flatMap((t) => t.entries);
    const finished = before.find((t) => t.stopReason !== null)?.stopReason ?? null;
    const whole: Turn = {
      ...last, entries: [...last.entries, ...rest], stopReason: finished ?? last.stopReason,
      open: finished === null && before.some((t) => t.open), streaming: before.map((t) => t.streaming).join(""),
    };
    return [...kept.slice(0, -1), whole, ...after];
  }
  if (before.length > 0) {
    while (kept.length > 0 && !kept[kept.length - 1]?.isTurn) kept.pop();
  }
  return [...kept, ...before, ...after];
}
