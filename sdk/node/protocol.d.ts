// Generated from docs/protocol/*.json by scripts/generate-types.mjs. Do not edit:
// `npm run generate` rewrites it; test/types.test.mjs fails when it drifts.

/**
 * A gateway event delivery.
 */
export interface EventRequest {
  /**
   * The event's context, as the producer supplies it (SPEC G5).
   */
  context: unknown;
  /**
   * The request id.
   */
  id: number;
  /**
   * The event key (`command:new`).
   */
  key: string;
  /**
   * The W3C trace context of the host's span for this request (`00-<trace id>-<span id>-<flags>`),
   * when the host exports traces: a plugin that starts its own spans under it joins the turn's
   * trace. Absent otherwise; plugins may ignore it.
   */
  traceparent?: string | null;
}

/**
 * A hook call.
 */
export interface HookRequest {
  /**
   * The hook, by wire name.
   */
  hook: "on_session_started" | "on_session_ended" | "on_prompt" | "on_user_message" | "on_turn_started" | "on_turn_finished" | "transform_model" | "on_model_response" | "on_tool_call" | "on_tool_result" | "on_approval" | "on_compaction" | "rebuild_model" | "rewrite_prompt" | "rewrite_compaction" | "rewrite_approval";
  /**
   * The request id; the reply carries it back.
   */
  id: number;
  /**
   * The session the call belongs to.
   */
  session: string;
  /**
   * The W3C trace context of the host's span for this request (`00-<trace id>-<span id>-<flags>`),
   * when the host exports traces: a plugin that starts its own spans under it joins the turn's
   * trace. Absent otherwise; plugins may ignore it.
   */
  traceparent?: string | null;
  /**
   * The hook's value (its JSON shape is the hook's value type in `hookline-messages`).
   */
  value: unknown;
}

/**
 * A tool run.
 */
export interface ToolRequest {
  /**
   * The session's approval mode at the time of the call (`ask-above-read`, `ask-all`,
   * `allow-workspace`).
   */
  approval_mode: "ask-above-read" | "ask-all" | "allow-workspace";
  /**
   * The call's arguments.
   */
  arguments: unknown;
  /**
   * The request id.
   */
  id: number;
  /**
   * The session calling the tool (as `session` of a hook request).
   */
  session: string;
  /**
   * The tool's name, one the plugin declared in its hello.
   */
  tool: string;
  /**
   * The W3C trace context of the host's span for this request (`00-<trace id>-<span id>-<flags>`),
   * when the host exports traces: a plugin that starts its own spans under it joins the turn's
   * trace. Absent otherwise; plugins may ignore it.
   */
  traceparent?: string | null;
  /**
   * The session's workspace root.
   */
  workspace_root: string;
}

/**
 * One line the host writes to a plugin.
 */
export type HostMessage =
  /**
   * Run a hook on a value; answered by a reply with the same id.
   */
  | ({
    type: "hook";
  } & HookRequest)
  /**
   * Run one of the plugin's tools; answered by `replace` with a [`ToolOutput`], or `error`.
   */
  | ({
    type: "tool";
  } & ToolRequest)
  /**
   * Deliver a gateway event; answered by `keep`, `replace` (a new context, where the event
   * allows it) or `error`.
   */
  | ({
    type: "event";
  } & EventRequest)
  /**
   * The host stopped waiting for request `id` (its timeout passed); any reply to it is dropped.
   */
  | {
    type: "cancel";
    /**
     * The request given up on.
     */
    id: number;
  }
  /**
   * The host is shutting down; stdin closes next. The plugin should exit.
   */
  | {
    type: "goodbye";
  };

/**
 * The first line a plugin writes: its protocol version and what it implements.
 */
export interface Hello {
  /**
   * Gateway event keys or family names it subscribes to (`command:new`, `message`). Unknown
   * keys are kept, with a warning (SPEC G4.1).
   */
  events?: Array<string>;
  /**
   * Ordinary hooks it implements, by wire name (`on_tool_call`). Raw hooks here are ignored.
   */
  hooks?: Array<"on_session_started" | "on_session_ended" | "on_prompt" | "on_user_message" | "on_turn_started" | "on_turn_finished" | "transform_model" | "on_model_response" | "on_tool_call" | "on_tool_result" | "on_approval" | "on_compaction" | "rebuild_model" | "rewrite_prompt" | "rewrite_compaction" | "rewrite_approval">;
  /**
   * The protocol version the plugin speaks ([`PROTOCOL_VERSION`]).
   */
  protocol: number;
  /**
   * Raw hooks it implements, by wire name (`rebuild_model`); apart from `hooks` (SPEC R0.1).
   * Ordinary hooks here are ignored.
   */
  raw_hooks?: Array<"on_session_started" | "on_session_ended" | "on_prompt" | "on_user_message" | "on_turn_started" | "on_turn_finished" | "transform_model" | "on_model_response" | "on_tool_call" | "on_tool_result" | "on_approval" | "on_compaction" | "rebuild_model" | "rewrite_prompt" | "rewrite_compaction" | "rewrite_approval">;
  /**
   * Tools it contributes; the host runs them through the same hooks as any tool (SPEC P1.3).
   */
  tools?: Array<ToolDecl>;
}

/**
 * A tool a plugin contributes.
 */
export interface ToolDecl {
  /**
   * Where a call acts.
   */
  authority: "workspace" | "host";
  /**
   * What the tool does, for the model.
   */
  description?: string;
  /**
   * The tool's name, as the model calls it.
   */
  name: string;
  /**
   * How risky a call is; the approval policy starts from this.
   */
  risk: "read" | "write" | "execute" | "critical";
}

/**
 * One line a plugin writes to the host: its hello (first, once) or a reply.
 */
export type PluginMessage =
  /**
   * The handshake; the first line, exactly once.
   */
  | ({
    type: "hello";
  } & Hello)
  /**
   * Hand the value on unchanged.
   */
  | {
    type: "keep";
    /**
     * The request answered.
     */
    id: number;
  }
  /**
   * Hand this value on instead, if the hook's rule admits it.
   */
  | {
    type: "replace";
    /**
     * The request answered.
     */
    id: number;
    /**
     * The replacement value.
     */
    value: unknown;
  }
  /**
   * The hook failed; it is skipped and `message` becomes the note's reason.
   */
  | {
    type: "error";
    /**
     * The request answered.
     */
    id: number;
    /**
     * Why, in English.
     */
    message?: string;
  };
