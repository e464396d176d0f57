// hookline-plugin for Node.js (>= 20), no dependencies. See README.md and index.d.ts.
//
// A Plugin collects handlers for hooks, raw hooks, gateway events and tools; run() speaks the
// protocol of docs/protocol.md on stdin/stdout: the hello is built from what is registered,
// requests are answered by id with many in flight, `cancel` aborts the call's signal and no reply
// is sent, `goodbye` or the end of stdin ends the plugin.
//
// The fast path (issue 35): stdin is split into lines by hand (no readline interface), each line
// is decoded with JSON.parse and dispatched at once; a handler that returns a plain value (not a
// promise) is answered in the same tick, with no promise and no microtask, and every reply ready
// after one chunk of stdin leaves in one write. A handler returning a promise is answered when it
// settles, while the calls of other sessions go on.

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
    this.#replies = [];
    this.#send(this.hello());
    this.#flush();
    return new Promise((resolve) => {
      let pending = "";
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        for (const controller of this.inFlight.values()) controller.abort();
        this.inFlight.clear();
        input.off("data", onData);
        input.off("end", end);
        this.#flush();
        resolve();
        // A plugin process ends here, even with cancelled work's timers still pending.
        if (input === process.stdin) output.write("", () => process.exit(0));
      };
      const onData = (chunk) => {
        const lines = (pending + chunk).split("\n");
        pending = lines.pop();
        for (const line of lines) {
          if (ended) return;
          if (this.#line(line) === "goodbye") end();
        }
        this.#flush();
      };
      input.setEncoding("utf8");
      input.on("data", onData);
      input.on("end", end);
    });
  }

  #line(line) {
    if (!line.trim()) return;
    let message;
    try {
      message = JSON.parse(line);
    } catch (error) {
      this.log(`${this.name}: unreadable request: ${error.message}`);
      return;
    }
    switch (message.type) {
      case "goodbye":
        return "goodbye";
      case "cancel":
        return this.#cancel(message.id);
      case "hook":
      case "tool":
      case "event":
        return this.#answer(message);
      default:
        this.log(`${this.name}: unknown request type ${message.type}`);
    }
  }

  #cancel(id) {
    const controller = this.inFlight.get(id);
    if (!controller) return;
    this.inFlight.delete(id);
    controller.abort();
  }

  /** Answers at once when the handler returns a plain value; when it returns a promise, once that
   * settles (unless the call was cancelled meanwhile). */
  #answer(message) {
    const id = message.id;
    // Made when the handler first reads `cx.signal`, or when its reply is a promise (the call can
    // then be cancelled): a call answered at once without reading it costs no controller (about
    // 2 µs each, most of a call's cost when many arrive in one read).
    let controller;
    const signal = () => (controller ??= new AbortController()).signal;
    let reply;
    try {
      reply = this.#dispatch(message, signal);
    } catch (error) {
      reply = this.#error(id, error);
    }
    if (!(reply instanceof Promise)) return this.#send(reply);
    controller ??= new AbortController();
    this.inFlight.set(id, controller);
    reply
      .catch((error) => this.#error(id, error))
      .then((settled) => {
        // A cancelled call (or one still running at goodbye) gets no reply.
        if (this.inFlight.get(id) !== controller) return;
        this.inFlight.delete(id);
        this.#send(settled);
        this.#flushSoon();
      });
  }

  #error(id, error) {
    return { type: "error", id, message: `${this.name}: ${error?.message ?? error}` };
  }

  /** The reply, or a promise of it when the handler's result is a promise. `signal()` gives the
   * call's abort signal (the context's `signal`, read when the handler asks for it). */
  #dispatch(message, signal) {
    const id = message.id;
    if (message.type === "tool") {
      return this.#tool(message, signal).then((value) => ({ type: "replace", id, value }));
    }
    let handler, value, cx;
    if (message.type === "hook") {
      handler = this.hooks.get(message.hook) ?? this.rawHooks.get(message.hook);
      value = message.value;
      cx = { id, name: message.hook, session: message.session ?? "", traceparent: message.traceparent, get signal() { return signal(); } };
    } else {
      const family = message.key.split(":")[0];
      handler = this.events.get(message.key) ?? this.events.get(family);
      value = message.context;
      cx = { id, name: message.key, session: "", traceparent: message.traceparent, get signal() { return signal(); } };
    }
    if (!handler) return { type: "keep", id };
    const result = handler(value, cx);
    if (result instanceof Promise) return result.then((settled) => reply(id, settled));
    return reply(id, result);
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
      get signal() {
        return signal();
      },
    };
    try {
      const result = await tool.handler(message.arguments ?? {}, cx);
      const answer = result instanceof ToolResult ? result : new ToolResult(result ?? "");
      return { text: answer.text, success: answer.success };
    } catch (error) {
      return { text: String(error?.message ?? error), success: false };
    }
  }

  #replies = [];
  #flushDue = false;

  /** Queues a reply; the replies queued meanwhile leave together at the next flush. */
  #send(message) {
    this.#replies.push(JSON.stringify(message));
  }

  #flushSoon() {
    if (this.#flushDue) return;
    this.#flushDue = true;
    queueMicrotask(() => this.#flush());
  }

  #flush() {
    this.#flushDue = false;
    if (this.#replies.length === 0) return;
    const data = this.#replies.join("\n") + "\n";
    this.#replies = [];
    this.output.write(data);
  }
}

function reply(id, result) {
  if (result === undefined || result === null) return { type: "keep", id };
  return { type: "replace", id, value: result };
}
