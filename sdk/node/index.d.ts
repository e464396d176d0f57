// Types of hookline-plugin (index.js). The wire types are generated from the protocol's JSON
// Schemas into protocol.d.ts.
import type { Readable, Writable } from "node:stream";
import type { Hello, HookRequest, ToolDecl, ToolRequest } from "./protocol.js";

export * from "./protocol.js";

/** The protocol version this kit speaks. */
export declare const PROTOCOL_VERSION: 1;
/** Every hook wire name the protocol knows. */
export type HookName = HookRequest["hook"];
/** Ordinary hooks (SPEC P2). */
export declare const HOOKS: readonly HookName[];
/** Raw hooks (SPEC R). */
export declare const RAW_HOOKS: readonly HookName[];

/** A plugin defined wrongly (an unknown hook, a name registered twice). */
export declare class PluginError extends Error {}

/** What a hook or event handler knows about its call. */
export interface Context {
  /** The request id. */
  id: number;
  /** The hook's wire name, or the event key. */
  name: string;
  /** The session the call belongs to ("" for events). */
  session: string;
  /**
   * The W3C trace context of the host's span for this call (`00-<trace>-<span>-<flags>`), when
   * the host exports traces; start your own spans under it to join the turn's trace.
   */
  traceparent?: string;
  /** Aborted when the host cancels the call (or says goodbye); no reply is sent then. */
  signal: AbortSignal;
}

/** What a tool knows about its call: the session facts hooks read (SPEC P2.1). */
export interface ToolContext extends Context {
  /** The session's workspace root. */
  workspaceRoot: string;
  /** The session's approval mode at the time of the call. */
  approvalMode: ToolRequest["approval_mode"];
}

/** A tool's answer; a handler may also return a plain string (a success). */
export declare class ToolResult {
  constructor(text: string, success?: boolean);
  text: string;
  success: boolean;
}

/** A hook or event handler: `undefined`/`null` keeps the value, anything else replaces it; a
 * thrown error answers `error` (the host skips the hook with that note). */
export type Handler<C = Context> = (value: any, cx: C) => unknown | Promise<unknown>;

/** A tool handler: a string or a ToolResult; a thrown error is a failed result. */
export type ToolHandler = (
  args: any,
  cx: ToolContext,
) => string | ToolResult | Promise<string | ToolResult>;

/** A tool declaration; `risk` defaults to read and `authority` to workspace. */
export type ToolDeclaration = Pick<ToolDecl, "name"> & Partial<Omit<ToolDecl, "name">>;

/** A plugin: register handlers, then run(). */
export declare class Plugin {
  constructor(name?: string);
  /** The plugin's name (the host passes it in HOOKLINE_PLUGIN). */
  readonly name: string;
  hook(name: HookName, handler: Handler): this;
  rawHook(name: HookName, handler: Handler): this;
  event(key: string, handler: Handler): this;
  tool(decl: ToolDeclaration, handler: ToolHandler): this;
  /** The hello: exactly what is registered. */
  hello(): { type: "hello" } & Hello;
  /** Writes a log line to stderr. */
  log(...parts: unknown[]): void;
  /** Serves the protocol until goodbye or the end of input. */
  run(input?: Readable, output?: Writable): Promise<void>;
}
