// The wire shapes of `hookline serve` (docs/serve.md, /v1/*), as the console reads them.
// Rust: hookline_host::gateway::SessionStatus, hookline_host::HostEvent (host/src/state/events.rs).
// Everything here is data from the server: render it as text, never as HTML.

/** What a session is doing (Rust `Activity`). */
export type Activity = "idle" | "turn" | "approval" | "closed";

/** A session's status (Rust `SessionStatus`). */
export interface SessionStatus {
  key: string;
  sessionId: string | null;
  workspace: string;
  approvalMode: string;
  model: string | null;
  activity: Activity;
  turns: number;
  lastActivityMs: number;
  records: number;
  /** Token usage summed over the session's model calls; absent when the provider reported none. */
  usage?: Usage;
}

/** Token usage (Rust `UsageTotals`): a count the provider did not report is absent, not 0. */
/** `GET /v1/whoami`: who the console is signed in as, and what it may use (docs/serve.md, "Auth"). */
export interface WhoAmI {
  tenant: string;
  principal: string;
  role: "client" | "operator" | "admin";
  /** Whether it may answer the approvals of the sessions it sees. */
  answersApprovals: boolean;
  /** Whether it may read plugins, metrics and the gateway's own events. */
  admin: boolean;
  /** Whether the server asks for credentials at all. */
  authenticated: boolean;
}

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  modelCalls: number;
}

/** The approval classification (Rust `Classification`). */
export interface Classification {
  risk: string;
  authority: string;
  summary: string;
  requiresPrompt: boolean;
}

/** A tool call (Rust `ToolCall`). */
export interface ToolCall {
  callId: string;
  name: string;
  arguments: unknown;
  provider?: string;
}

/** A note (Rust `Note`, tagged by `kind`). */
export interface Note {
  kind: string;
  [field: string]: unknown;
}

/** One op of an RFC 6902 JSON Patch (a `hook-changed` event's change). */
export interface PatchOp {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  value?: unknown;
  from?: string;
}

/** One HostEvent, tagged by `event` (kebab-case). Only the fields the console reads are typed. */
export type HostEvent =
  | { event: "session-started" | "session-ended"; workspaceRoot: string; sessionId: string; approvalMode: string }
  | { event: "user"; session: string; text: string; original: string | null; turn?: number }
  | { event: "hook-changed"; hook: string; changedBy: string[]; patch: PatchOp[]; before?: unknown; after?: unknown }
  | { event: "system-text"; mode: string; text: string }
  | { event: "model-call"; purpose: string; items: number }
  | { event: "assistant"; text: string }
  | { event: "model-failed"; purpose: string; error: string }
  | { event: "tool-call"; call: ToolCall; rewrittenFrom: ToolCall | null }
  | {
      event: "approval";
      callId: string;
      tool: string;
      classification: Classification;
      decision: "allow" | "deny";
      decidedBy: string;
    }
  | { event: "tool-run"; callId: string; tool: string; arguments: unknown; success: boolean; text: string }
  | { event: "tool-result"; callId: string; name: string; text: string; success: boolean; approval: string }
  | { event: "side"; question: string; answer: string }
  | { event: "compacted"; folded: number; summary: string }
  | { event: "turn-finished"; stopReason: string }
  | { event: "note"; note: Note; text: string }
  | { event: "info"; text: string }
  | { event: "gateway-event"; key: string; wait: string; calls?: number }
  | {
      event: "approval-requested";
      callId: string;
      tool: string;
      arguments: unknown;
      classification: Classification;
      timeoutMs: number;
    }
  | { event: "model-text"; delta: string }
  | { event: "bootstrap"; files: string[] };

/** The tag of every HostEvent. */
export type EventKind = HostEvent["event"];

/** One HostEvent of a given kind. */
export type EventOf<K extends EventKind> = Extract<HostEvent, { event: K }>;

/** `data` of an `/v1/events` event other than `session` and `lagged`. */
export interface FeedItem {
  session: string | null;
  event: HostEvent;
}

/** A stored record (Rust `Record`, tagged by `kind`). */
export interface StoredRecord {
  kind: string;
  text?: string;
  name?: string;
  callId?: string;
  arguments?: unknown;
  success?: boolean;
  mode?: string;
}

/** `GET /v1/sessions/{id}`. */
export interface SessionDetail {
  session: SessionStatus;
  records: { total: number; offset: number; items: StoredRecord[] };
  pendingApprovals: string[];
  /** The same approvals in full. */
  approvals?: PendingApproval[];
}

/** An approval the server waits for (Rust `PendingApproval`), as `GET /v1/sessions/{id}` lists it. */
export interface PendingApproval {
  callId: string;
  tool: string;
  arguments: unknown;
  risk: string;
  authority: string;
  summary: string;
  /** When it is denied unanswered (ms since the Unix epoch, the server's clock). */
  deadlineMs: number;
}

/** A waiting approval and its session, as `GET /v1/approvals` lists it. */
export interface ServerApproval extends PendingApproval {
  session: string;
}

/** A plugin on disk as `hookline hooks list --json` prints it (Rust `PluginStatus`). */
export interface DiskPlugin {
  name: string;
  dir?: string;
  source?: string;
  kind?: string;
  description?: string | null;
  hello?: { hooks?: string[]; rawHooks?: string[]; events?: string[]; tools?: { name?: string }[] } | null;
  trust?: string;
  /** `loaded`, `disabled`, `skipped`, or what became of a loaded plugin since: `restarting`, `exited`, `suspended`. */
  state?: string;
  problem?: unknown;
  /** Why it is `restarting`, `exited` or `suspended` (an English phrase). */
  stateReason?: string;
  /** Since when a loaded plugin is in its state (RFC 3339). */
  stateSince?: string;
}

/** `GET /v1/plugins` (Rust `PluginsView`). */
export interface PluginsView {
  plugins: DiskPlugin[];
  inProcess: (string | { name: string; hooks?: string[]; rawHooks?: string[]; events?: string[] })[];
  loadNotes: string[];
}

/** The error shape of every API error. */
export interface ErrorBody {
  error: { code: string; message: string };
}

/** Whether `value` is a plain object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
