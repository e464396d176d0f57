// hookline-plugin for Node.js (>= 20), no dependencies. See README.md and index.d.ts.
//
// A Plugin collects handlers for hooks, raw hooks, gateway events and tools; run() speaks the
// protocol of docs/protocol.md on stdin/stdout: the hello is built from what is registered,
// requests are answered by id with many in flight, `cancel` aborts the call's signal and no reply
// is sent, `goodbye` or the end of stdin ends the plugin.
import { createInterface } from "node:readline";

/** The protocol version this kit speaks. */
export const PROTOCOL_VERSION = 1;

/** Ordinary hooks, by wire name (SPEC P2). */
export const HOOKS = Object.freeze([
  "on_session_started",
  "on_session_ended",
  "on_prompt",
  "on_user_message",
  "on_turn_started",
  "on_turn_finished",
  "transform_model",
  "on_model_response",
  "on_tool_call",
  "on_tool_result",
  "on_approval",
  "on_compaction",
]);

/** Raw hooks, by wire name (SPEC R), registered apart from ordinary hooks. */
export const RAW_HOOKS = Object.freeze([
  "rebuild_model",
  "rewrite_prompt",
  "rewrite_compaction",
  "rewrite_approval",
]);

const RISKS = ["read", "write", "execute", "critical"];
const AUTHORITIES = ["workspace", "host"];

/** A plugin defined wrongly (an unknown hook, a name registered twice). */
export class PluginError extends Error {}

/** A tool's answer; a handler may also return a plain string (a success). */
export class ToolResult {
  constructor(text, success = true) {
    this.text = String(text);
    this.success = Boolean(success);
  }
}

export class Plugin {
  constructor(name = process.env.HOOKLINE_PLUGIN ?? "plugin") {
    this.name = name;
    this.hooks = new Map();
    this.rawHooks = new Map();
    this.events = new Map();
    this.tools = new Map();
    this.inFlight = new Map();
  }

  hook(name, handler) {
    if (!HOOKS.includes(name)) throw new PluginError(`'${name}' is not an ordinary hook`);
    return this.#register(this.hooks, name, handler);
  }

  rawHook(name, handler) {
    if (!RAW_HOOKS.includes(name)) throw new PluginError(`'${name}' is not a raw hook`);
    return this.#register(this.rawHooks, name, handler);
  }

  event(key, handler) {
    if (!key) throw new PluginError("an event key cannot be empty");
    return this.#register(this.events, key, handler);
  }

  tool(decl, handler) {
    const { name, description = "", risk = "read", authority = "workspace" } = decl;
    if (!RISKS.includes(risk)) throw new PluginError(`risk '${risk}' is not one of ${RISKS}`);
    if (!AUTHORITIES.includes(authority)) {
      throw new PluginError(`authority '${authority}' is not one of ${AUTHORITIES}`);
    }
    this.#register(this.tools, name, { decl: { name, description, risk, authority }, handler });
    return this;
  }

  #register(table, name, handler) {
    if (table.has(name)) throw new PluginError(`'${name}' has two handlers`);
    table.set(name, handler);
    return this;
  }

  hello() {
    return {
      type: "hello",
      protocol: PROTOCOL_VERSION,
      hooks: [...this.hooks.keys()],
      raw_hooks: [...this.rawHooks.keys()],
      events: [...this.events.keys()],
      tools: [...this.tools.values()].map((t) => t.decl),
    };
  }

  log(...parts) {
    process.stderr.write(parts.join(" ") + "\n");
  }

  run(input = process.stdin, output = process.stdout) {
    this.output = output;
    this.#send(this.hello());
    const lines = createInterface({ input, crlfDelay: Infinity });
    return new Promise((resolve) => {
      const end = () => {
        for (const controller of this.inFlight.values()) controller.abort();
        this.inFlight.clear();
        lines.close();
        resolve();
        // A plugin process ends here, even with cancelled work's timers still pending.
        if (input === process.stdin) output.write("", () => process.exit(0));
      };
      lines.on("line", (line) => {
        if (!line.trim()) return;
        let message;
        try {
          message = JSON.parse(line);
        } catch (error) {
          this.log(`${this.name}: unreadable request: ${error.message}`);
          return;
        }
        if (message.type === "goodbye") return end();
        if (message.type === "cancel") return this.#cancel(message.id);
        if (["hook", "tool", "event"].includes(message.type)) return void this.#answer(message);
        this.log(`${this.name}: unknown request type ${message.type}`);
      });
      lines.on("close", end);
    });
  }

  #cancel(id) {
    const controller = this.inFlight.get(id);
    if (!controller) return;
    this.inFlight.delete(id);
    controller.abort();
  }

  async #answer(message) {
    const id = message.id;
    const controller = new AbortController();
    this.inFlight.set(id, controller);
    let reply;
    try {
      reply = await this.#dispatch(message, controller.signal);
    } catch (error) {
      reply = { type: "error", id, message: `${this.name}: ${error?.message ?? error}` };
    }
    // A cancelled call (or one still running at goodbye) gets no reply.
    if (this.inFlight.get(id) !== controller) return;
    this.inFlight.delete(id);
    this.#send(reply);
  }

  async #dispatch(message, signal) {
    const id = message.id;
    if (message.type === "tool") return { type: "replace", id, value: await this.#tool(message, signal) };
    let handler, value, cx;
    if (message.type === "hook") {
      handler = this.hooks.get(message.hook) ?? this.rawHooks.get(message.hook);
      value = message.value;
      cx = { id, name: message.hook, session: message.session ?? "", traceparent: message.traceparent, signal };
    } else {
      const family = message.key.split(":")[0];
      handler = this.events.get(message.key) ?? this.events.get(family);
      value = message.context;
      cx = { id, name: message.key, session: "", traceparent: message.traceparent, signal };
    }
    if (!handler) return { type: "keep", id };
    const result = await handler(value, cx);
    if (result === undefined || result === null) return { type: "keep", id };
    return { type: "replace", id, value: result };
  }

  async #tool(message, signal) {
    const tool = this.tools.get(message.tool);
    if (!tool) throw new Error(`there is no tool '${message.tool}'`);
    const cx = {
      id: message.id,
      name: message.tool,
      session: message.session ?? "",
      workspaceRoot: message.workspace_root ?? "",
      approvalMode: message.approval_mode ?? "",
      traceparent: message.traceparent,
      signal,
    };
    try {
      const result = await tool.handler(message.arguments ?? {}, cx);
      const answer = result instanceof ToolResult ? result : new ToolResult(result ?? "");
      return { text: answer.text, success: answer.success };
    } catch (error) {
      return { text: String(error?.message ?? error), success: false };
    }
  }

  #send(message) {
    this.output.write(JSON.stringify(message) + "\n");
  }
}
