// What the console knows, fed only by `/v1/events` and the answers to its own requests: the
// sessions, each session's timeline (grouped by turn), the approvals waiting for an operator,
// and the gateway's events. Every list is bounded, so a console left open for days stays small.

import type { History } from "./history";
import type {
  Classification, EventOf, FeedItem, HostEvent, Note, PendingApproval, ServerApproval, SessionStatus,
} from "./model";

/** Turns kept per session; older ones are dropped (and counted). */
export const MAX_TURNS = 200;
/** Events kept per turn; later ones are counted, not kept. */
export const MAX_TURN_EVENTS = 500;
/** Closed sessions kept in the list. */
export const MAX_CLOSED = 50;
/** Gateway events kept. */
export const MAX_GATEWAY = 500;

/** One event as the console received it. */
export interface Entry {
  at: number;
  event: HostEvent;
}

/**
 * One group of a timeline: a turn (from the user's message, with the hooks that shaped it, to
 * the stop reason), or the events between turns (a session opened, a command, a gateway event).
 */
export interface Turn {
  /** Whether a user message started it. */
  isTurn: boolean;
  /** Turns: 1-based, the session's own number (the `user` event's `turn`); between turns: 0. */
  number: number;
  /** Still taking events. */
  open: boolean;
  entries: Entry[];
  /** Events past [`MAX_TURN_EVENTS`] not kept. */
  dropped: number;
  stopReason: string | null;
  /** The model's text so far, while it streams. */
  streaming: string;
}

/** A session as the console shows it. */
export interface SessionView {
  status: SessionStatus;
  turns: Turn[];
  /** Older turns dropped past [`MAX_TURNS`]. */
  droppedTurns: number;
  seenAt: number;
  /** Its earlier turns as the store keeps them, once read (`GET /v1/sessions/{id}/archive`). */
  history: History | null;
}

/** One approval an operator may answer. */
export interface Approval {
  session: string;
  callId: string;
  /** Unknown when the console learned of it from `pendingApprovals` rather than the event. */
  tool: string | null;
  arguments: unknown;
  classification: Classification | null;
  timeoutMs: number | null;
  /** When it is denied unanswered, as the server listed it (`GET /v1/approvals`). */
  deadlineMs: number | null;
  receivedAt: number;
  state: "pending" | "sending" | "failed";
  error: string | null;
}

/** A gateway event with the handler notes that followed it. */
export interface GatewayEntry {
  at: number;
  session: string | null;
  key: string;
  wait: string;
  calls: number | null;
  notes: string[];
}

/** Something a view may want to react to. */
export type Change =
  | { kind: "sessions" }
  | { kind: "timeline"; session: string }
  | { kind: "approvals"; added: Approval | null }
  | { kind: "gateway" }
  | { kind: "turn-finished"; session: string }
  | { kind: "lagged"; missed: number };

/** Notes about event handlers, shown beside the gateway event they concern. */
const HANDLER_NOTES = new Set(["event-handler-skipped", "event-wait-timed-out", "events-dropped", "unknown-subscription"]);

/** The console's state. */
export class Store {
  readonly sessions = new Map<string, SessionView>();
  readonly approvals = new Map<string, Approval>();
  readonly gateway: GatewayEntry[] = [];
  missed = 0;
  private readonly listeners = new Set<(change: Change) => void>();

  /** Calls `listener` on every change; returns the unsubscribe function. */
  subscribe(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(change: Change): void {
    for (const listener of this.listeners) listener(change);
  }

  /** A session's status, from `event: session` or a list. */
  status(status: SessionStatus): void {
    const view = this.sessions.get(status.key);
    if (view) view.status = status;
    else this.sessions.set(status.key, { status, turns: [], droppedTurns: 0, seenAt: Date.now(), history: null });
    if (status.activity === "closed") {
      this.dropApprovals(status.key);
      this.pruneClosed();
    }
    this.emit({ kind: "sessions" });
  }

  /** Every open session, from `GET /v1/sessions`; sessions missing from it are closed. */
  statuses(all: SessionStatus[]): void {
    const open = new Set(all.map((s) => s.key));
    for (const view of this.sessions.values()) {
      if (!open.has(view.status.key) && view.status.activity !== "closed") {
        view.status = { ...view.status, activity: "closed" };
        this.dropApprovals(view.status.key);
      }
    }
    for (const status of all) this.status(status);
    this.emit({ kind: "sessions" });
  }

  /** Approvals a session's detail names as waiting, which the console has no event for: in
   * full when the server lists them (`approvals`), else by call id only. */
  pending(session: string, callIds: string[], full: PendingApproval[] = []): void {
    let added = false;
    for (const approval of full) added = this.known(session, approval) || added;
    for (const callId of callIds) {
      const key = approvalKey(session, callId);
      if (this.approvals.has(key)) continue;
      this.approvals.set(key, {
        session, callId, tool: null, arguments: null, classification: null, timeoutMs: null,
        deadlineMs: null, receivedAt: Date.now(), state: "pending", error: null,
      });
      added = true;
    }
    if (added) this.emit({ kind: "approvals", added: null });
  }

  /** Every approval the server waits for (`GET /v1/approvals`, read after the feed was
   * subscribed): any other the console holds was settled meanwhile. */
  waiting(all: ServerApproval[]): void {
    const listed = new Set(all.map((a) => approvalKey(a.session, a.callId)));
    let changed = false;
    for (const key of [...this.approvals.keys()]) {
      if (!listed.has(key)) changed = this.approvals.delete(key) || changed;
    }
    for (const approval of all) changed = this.known(approval.session, approval) || changed;
    if (changed) this.emit({ kind: "approvals", added: null });
  }

  /** Takes one listed approval; whether anything changed. */
  private known(session: string, listed: PendingApproval): boolean {
    const key = approvalKey(session, listed.callId);
    const held = this.approvals.get(key);
    if (held && held.tool !== null && held.deadlineMs === listed.deadlineMs) return false;
    this.approvals.set(key, {
      session, callId: listed.callId, tool: listed.tool, arguments: listed.arguments,
      classification: {
        risk: listed.risk, authority: listed.authority, summary: listed.summary, requiresPrompt: true,
      },
      timeoutMs: held?.timeoutMs ?? null, deadlineMs: listed.deadlineMs,
      receivedAt: held?.receivedAt ?? Date.now(), state: held?.state ?? "pending", error: held?.error ?? null,
    });
    return true;
  }

  /** One `/v1/events` event. */
  event(item: FeedItem): void {
    const { session, event } = item;
    if (event.event === "gateway-event") this.gatewayEvent(session, event);
    else if (event.event === "note" && HANDLER_NOTES.has(event.note.kind)) this.handlerNote(session, event.note, event.text);
    if (session === null) {
      if (event.event !== "gateway-event" && !(event.event === "note" && HANDLER_NOTES.has(event.note.kind))) {
        this.pushGateway({ at: Date.now(), session, key: event.event, wait: "", calls: null, notes: [describe(event)] });
      }
      return;
    }
    this.timelineEvent(session, event);
  }

  private timelineEvent(session: string, event: HostEvent): void {
    const view = this.sessionView(session);
    const turn = this.currentTurn(view, event);
    if (event.event === "model-text") {
      turn.streaming += event.delta;
    } else if (turn.entries.length < MAX_TURN_EVENTS) {
      if (event.event === "assistant") turn.streaming = "";
      turn.entries.push({ at: Date.now(), event });
    } else {
      turn.dropped++;
    }
    if (event.event === "approval-requested") this.requested(session, event);
    if (event.event === "approval") this.settled(session, event.callId);
    if (event.event === "note" && event.note.kind === "approval-timed-out") {
      const callId = event.note["callId"] ?? event.note["call_id"];
      if (typeof callId === "string") this.settled(session, callId);
    }
    this.emit({ kind: "timeline", session });
    if (event.event === "turn-finished") {
      turn.stopReason = event.stopReason;
      turn.open = false;
      turn.streaming = "";
      this.dropApprovals(session);
      this.emit({ kind: "turn-finished", session });
    }
  }

  private sessionView(session: string): SessionView {
    let view = this.sessions.get(session);
    if (!view) {
      // Events of a session whose status has not arrived yet: a placeholder until it does.
      view = {
        status: {
          key: session, sessionId: null, workspace: "", approvalMode: "", model: null,
          activity: "turn", turns: 0, lastActivityMs: Date.now(), records: 0,
        },
        turns: [], droppedTurns: 0, seenAt: Date.now(), history: null,
      };
      this.sessions.set(session, view);
      this.emit({ kind: "sessions" });
    }
    return view;
  }

  /**
   * The group `event` belongs to. A user message starts a turn, taking along the events just
   * before it that shaped it (`on_user_message` changes and skips run before the text is stored);
   * `turn-finished` ends it; anything else outside a turn goes to a group between turns.
   */
  private currentTurn(view: SessionView, event: HostEvent): Turn {
    const last = view.turns[view.turns.length - 1];
    if (event.event !== "user") {
      if (last && last.open) return last;
      return this.pushTurn(view, false, []);
    }
    if (last && last.open && last.isTurn) {
      last.open = false;
      if (last.stopReason === null) last.stopReason = "unknown";
    }
    let carried: Entry[] = [];
    if (last && last.open && !last.isTurn) {
      let from = last.entries.length;
      while (from > 0 && shapesUserMessage(last.entries[from - 1]?.event)) from--;
      carried = last.entries.splice(from);
      last.open = false;
      if (last.entries.length === 0) {
        view.turns.pop();
      }
    }
    return this.pushTurn(view, true, carried, typeof event.turn === "number" ? event.turn : null);
  }

  private pushTurn(view: SessionView, isTurn: boolean, entries: Entry[], number: number | null = null): Turn {
    const previous = [...view.turns].reverse().find((t) => t.isTurn);
    const turn: Turn = {
      isTurn, number: isTurn ? (number ?? (previous?.number ?? 0) + 1) : 0, open: true,
      entries, dropped: 0, stopReason: null, streaming: "",
    };
    view.turns.push(turn);
    if (view.turns.length > MAX_TURNS) {
      view.turns.shift();
      view.droppedTurns++;
    }
    return turn;
  }

  private requested(session: string, event: EventOf<"approval-requested">): void {
    const approval: Approval = {
      session, callId: event.callId, tool: event.tool, arguments: event.arguments,
      classification: event.classification, timeoutMs: event.timeoutMs, deadlineMs: null,
      receivedAt: Date.now(), state: "pending", error: null,
    };
    this.approvals.set(approvalKey(session, event.callId), approval);
    this.emit({ kind: "approvals", added: approval });
  }

  /** The approval `callId` was decided (by anyone) or timed out: nothing waits for it. */
  settled(session: string, callId: string): void {
    if (this.approvals.delete(approvalKey(session, callId))) this.emit({ kind: "approvals", added: null });
  }

  /** Marks an approval as being answered, or failed with `error`. */
  answering(approval: Approval, state: Approval["state"], error: string | null = null): void {
    approval.state = state;
    approval.error = error;
    this.emit({ kind: "approvals", added: null });
  }

  private dropApprovals(session: string): void {
    let dropped = false;
    for (const [key, approval] of this.approvals) {
      if (approval.session === session) {
        this.approvals.delete(key);
        dropped = true;
      }
    }
    if (dropped) this.emit({ kind: "approvals", added: null });
  }

  private gatewayEvent(session: string | null, event: EventOf<"gateway-event">): void {
    this.pushGateway({
      at: Date.now(), session, key: event.key, wait: event.wait,
      calls: typeof event.calls === "number" ? event.calls : null, notes: [],
    });
  }

  /** A handler note goes with the latest gateway event of its key (or stands alone). */
  private handlerNote(session: string | null, note: Note, text: string): void {
    const key = typeof note["event"] === "string" ? note["event"] : null;
    for (let i = this.gateway.length - 1; i >= 0; i--) {
      const entry = this.gateway[i];
      if (entry && (key === null || entry.key === key)) {
        entry.notes.push(text);
        this.emit({ kind: "gateway" });
        return;
      }
    }
    this.pushGateway({ at: Date.now(), session, key: key ?? note.kind, wait: "", calls: null, notes: [text] });
  }

  private pushGateway(entry: GatewayEntry): void {
    this.gateway.push(entry);
    if (this.gateway.length > MAX_GATEWAY) this.gateway.shift();
    this.emit({ kind: "gateway" });
  }

  /** Session `session`'s earlier turns, read from the store. */
  history(session: string, history: History): void {
    this.sessionView(session).history = history;
    this.emit({ kind: "timeline", session });
  }

  /** The server dropped `missed` events for this console (it read too slowly). */
  lagged(missed: number): void {
    this.missed += missed;
    this.emit({ kind: "lagged", missed });
  }

  private pruneClosed(): void {
    const closed = [...this.sessions.values()].filter((v) => v.status.activity === "closed");
    closed.sort((a, b) => a.status.lastActivityMs - b.status.lastActivityMs);
    for (const view of closed.slice(0, Math.max(0, closed.length - MAX_CLOSED))) {
      this.sessions.delete(view.status.key);
    }
  }
}

/** Whether `event` is part of storing the user's message (it comes before the `user` event). */
export function shapesUserMessage(event: HostEvent | undefined): boolean {
  if (!event) return false;
  if (event.event === "hook-changed") return event.hook === "on_user_message";
  if (event.event === "note") return event.note["hook"] === "on_user_message";
  return false;
}

/** The map key of an approval. */
export function approvalKey(session: string, callId: string): string {
  return `${session}\u0000${callId}`;
}

/** One line about an event that belongs to no session. */
function describe(event: HostEvent): string {
  switch (event.event) {
    case "note":
    case "info":
      return event.text;
    default:
      return JSON.stringify(event);
  }
}
