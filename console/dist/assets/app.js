// src/model.ts
function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// src/api.ts
var TOKEN_KEY = "hookline.token";
var REQUEST_TIMEOUT_MS = 3e4;
var ApiError = class extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  status;
  code;
  /** Whether the server refused the token (or wants one). */
  get unauthorized() {
    return this.status === 401;
  }
};
function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}
function storeToken(token) {
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
  }
}
var Api = class {
  constructor(token) {
    this.token = token;
  }
  token;
  /** Headers for a request; `extra` added. */
  headers(extra = {}) {
    const headers = new Headers(extra);
    if (this.token) headers.set("Authorization", `Bearer ${this.token}`);
    return headers;
  }
  /** A request answered with JSON. */
  async json(method, path, body) {
    const response = await this.send(method, path, body);
    return await response.json();
  }
  /** A request (with `extra` headers); rejects with [`ApiError`] on a status other than 2xx. */
  async send(method, path, body, signal, extra = {}) {
    const headers = this.headers(body === void 0 ? extra : { ...extra, "Content-Type": "application/json" });
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const response = await fetch(path, {
      method,
      headers,
      body: body === void 0 ? null : JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      cache: "no-store",
      credentials: "omit"
    });
    if (!response.ok) throw await errorOf(response);
    return response;
  }
  /**
   * `GET /v1/whoami`: who the credential names and what it may use. A server without the route
   * (older than issue 48) has one admin token: the caller may use everything.
   */
  async whoami() {
    try {
      return await this.json("GET", "/v1/whoami");
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        return { tenant: "default", principal: "token", role: "admin", answersApprovals: true, admin: true, authenticated: true };
      }
      throw error;
    }
  }
  /** `GET /v1/sessions`. */
  async sessions() {
    return (await this.json("GET", "/v1/sessions")).sessions;
  }
  /** `GET /v1/sessions/{id}` with the first `limit` records. */
  session(key, offset = 0, limit = 100) {
    return this.json("GET", `/v1/sessions/${encodeURIComponent(key)}?offset=${offset}&limit=${limit}`);
  }
  /** `GET /v1/sessions/{id}/archive`: a page of the active session's stored archive. */
  archive(key, offset = 0, limit = 1e3) {
    return this.json("GET", `/v1/sessions/${encodeURIComponent(key)}/archive?offset=${offset}&limit=${limit}`);
  }
  /** `GET /v1/approvals`: every approval the server waits for, in full. */
  async approvals() {
    return (await this.json("GET", "/v1/approvals")).approvals;
  }
  /** `POST /v1/sessions`. */
  open(workspace) {
    return this.json("POST", "/v1/sessions", workspace ? { workspace } : {});
  }
  /** `DELETE /v1/sessions/{id}`. */
  async close(key) {
    await this.send("DELETE", `/v1/sessions/${encodeURIComponent(key)}`);
  }
  /**
   * `POST /v1/sessions/{id}/turns` (JSON: answers when the turn ends), with a fresh
   * `Idempotency-Key`: the same turn sent again with it runs once (docs/serve.md).
   */
  async turn(key, text2, idempotencyKey = freshKey()) {
    const path = `/v1/sessions/${encodeURIComponent(key)}/turns`;
    await this.send("POST", path, { text: text2 }, void 0, { "Idempotency-Key": idempotencyKey });
  }
  /** `POST /v1/sessions/{id}/approvals/{callId}`. */
  async answer(key, callId, decision) {
    const path = `/v1/sessions/${encodeURIComponent(key)}/approvals/${encodeURIComponent(callId)}`;
    await this.send("POST", path, { decision });
  }
  /** `GET /v1/plugins`. */
  async plugins() {
    const raw = await this.json("GET", "/v1/plugins");
    if (Array.isArray(raw)) return { plugins: raw, inProcess: [], loadNotes: [] };
    const view2 = isObject(raw) ? raw : {};
    return {
      plugins: Array.isArray(view2["plugins"]) ? view2["plugins"] : [],
      inProcess: Array.isArray(view2["inProcess"]) ? view2["inProcess"] : [],
      loadNotes: Array.isArray(view2["loadNotes"]) ? view2["loadNotes"] : []
    };
  }
  /** `GET /metrics` (Prometheus text). */
  async metrics() {
    return (await this.send("GET", "/metrics")).text();
  }
};
function freshKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
async function errorOf(response) {
  let code = `http-${response.status}`;
  let message = `The server answered ${response.status} ${response.statusText}.`;
  try {
    const body = await response.json();
    const error = isObject(body) ? body["error"] : void 0;
    if (isObject(error)) {
      if (typeof error["code"] === "string") code = error["code"];
      if (typeof error["message"] === "string") message = error["message"];
    }
  } catch {
  }
  return new ApiError(response.status, code, message);
}

// src/dom.ts
var SVG_NS = "http://www.w3.org/2000/svg";
function append(parent, children) {
  for (const child of children) {
    if (child === null || child === void 0 || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}
function apply(node, attrs) {
  if (!attrs) return;
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === void 0 || value === false) continue;
    if (typeof value === "function") {
      node.addEventListener(name.slice(2).toLowerCase(), value);
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
}
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  apply(node, attrs);
  append(node, children);
  return node;
}
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  apply(node, attrs);
  append(node, children);
  return node;
}
function replace(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}
function button(label, onClick, attrs = {}) {
  return h("button", { type: "button", ...attrs, onclick: () => onClick() }, label);
}
function clock(ms) {
  if (!Number.isFinite(ms) || ms <= 0) return "–";
  const when = new Date(ms);
  const time = when.toLocaleTimeString([], { hour12: false });
  return when.toDateString() === (/* @__PURE__ */ new Date()).toDateString() ? time : `${when.toLocaleDateString()} ${time}`;
}
function json(value) {
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2) ?? String(value);
}

// src/sse.ts
var MAX_LINE = 4 * 1024 * 1024;
var SseParser = class {
  buffer = "";
  event = "";
  data = [];
  skipLf = false;
  /** Parses `chunk`; returns the events it completed. */
  push(chunk) {
    const out = [];
    let text2 = this.buffer + chunk;
    if (this.skipLf && text2.startsWith("\n")) text2 = text2.slice(1);
    this.skipLf = false;
    let start = 0;
    for (let i = 0; i < text2.length; i++) {
      const c = text2.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(text2.slice(start, i), out);
      if (c === 13) {
        if (i + 1 === text2.length) this.skipLf = true;
        else if (text2.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.buffer = text2.slice(start);
    if (this.buffer.length > MAX_LINE) this.buffer = "";
    return out;
  }
  line(line, out) {
    if (line === "") {
      if (this.data.length > 0) {
        out.push({ event: this.event || "message", data: this.data.join("\n") });
      }
      this.event = "";
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
  }
};
async function readEvents(body, onMessage) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  try {
    for (; ; ) {
      const { done, value } = await reader.read();
      if (done) return;
      for (const message of parser.push(value)) onMessage(message);
    }
  } finally {
    reader.releaseLock();
  }
}

// src/feed.ts
var FIRST_RETRY_MS = 1e3;
var MAX_RETRY_MS = 3e4;
var Feed = class {
  constructor(api2, store2, onState) {
    this.api = api2;
    this.store = store2;
    this.onState = onState;
  }
  api;
  store;
  onState;
  abort = null;
  retryMs = FIRST_RETRY_MS;
  timer = null;
  /** Opens the stream (once). */
  start() {
    if (this.abort) return;
    void this.run();
  }
  /** Closes the stream and cancels any retry. */
  stop() {
    this.abort?.abort();
    this.abort = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.onState({ kind: "stopped" });
  }
  async run() {
    const abort = new AbortController();
    this.abort = abort;
    this.onState({ kind: "connecting" });
    try {
      const response = await fetch("/v1/events", {
        headers: this.api.headers({ Accept: "text/event-stream" }),
        signal: abort.signal,
        cache: "no-store",
        credentials: "omit"
      });
      if (response.status === 401) {
        this.abort = null;
        this.onState({ kind: "unauthorized" });
        return;
      }
      if (!response.ok || !response.body) throw new Error(`the server answered ${response.status}`);
      this.store.statuses(await this.api.sessions());
      this.store.waiting(await this.api.approvals());
      this.retryMs = FIRST_RETRY_MS;
      this.onState({ kind: "live" });
      await readEvents(response.body, (message) => this.dispatch(message.event, message.data));
      this.retry("the server closed the event stream");
    } catch (error) {
      if (abort.signal.aborted) return;
      if (error instanceof ApiError && error.unauthorized) {
        this.abort = null;
        this.onState({ kind: "unauthorized" });
        return;
      }
      this.retry(error instanceof Error ? error.message : String(error));
    }
  }
  retry(reason) {
    this.abort = null;
    const inMs = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    this.onState({ kind: "retrying", inMs, reason });
    this.timer = window.setTimeout(() => {
      this.timer = null;
      this.start();
    }, inMs);
  }
  dispatch(kind, data) {
    let parsed;
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    if (!isObject(parsed)) return;
    if (kind === "session") {
      if (typeof parsed["key"] === "string") this.store.status(parsed);
    } else if (kind === "lagged") {
      this.store.lagged(typeof parsed["missed"] === "number" ? parsed["missed"] : 0);
    } else if (isObject(parsed["event"]) && typeof parsed["event"]["event"] === "string") {
      const session = typeof parsed["session"] === "string" ? parsed["session"] : null;
      this.store.event({ session, event: parsed["event"] });
    }
  }
};

// src/state.ts
var MAX_TURNS = 200;
var MAX_TURN_EVENTS = 500;
var MAX_CLOSED = 50;
var MAX_GATEWAY = 500;
var HANDLER_NOTES = /* @__PURE__ */ new Set(["event-handler-skipped", "event-wait-timed-out", "events-dropped", "unknown-subscription"]);
var Store = class {
  sessions = /* @__PURE__ */ new Map();
  approvals = /* @__PURE__ */ new Map();
  gateway = [];
  missed = 0;
  listeners = /* @__PURE__ */ new Set();
  /** Calls `listener` on every change; returns the unsubscribe function. */
  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  emit(change) {
    for (const listener of this.listeners) listener(change);
  }
  /** A session's status, from `event: session` or a list. */
  status(status) {
    const view2 = this.sessions.get(status.key);
    if (view2) view2.status = status;
    else this.sessions.set(status.key, { status, turns: [], droppedTurns: 0, seenAt: Date.now(), history: null });
    if (status.activity === "closed") {
      this.dropApprovals(status.key);
      this.pruneClosed();
    }
    this.emit({ kind: "sessions" });
  }
  /** Every open session, from `GET /v1/sessions`; sessions missing from it are closed. */
  statuses(all) {
    const open = new Set(all.map((s) => s.key));
    for (const view2 of this.sessions.values()) {
      if (!open.has(view2.status.key) && view2.status.activity !== "closed") {
        view2.status = { ...view2.status, activity: "closed" };
        this.dropApprovals(view2.status.key);
      }
    }
    for (const status of all) this.status(status);
    this.emit({ kind: "sessions" });
  }
  /** Approvals a session's detail names as waiting, which the console has no event for: in
   * full when the server lists them (`approvals`), else by call id only. */
  pending(session, callIds, full = []) {
    let added = false;
    for (const approval of full) added = this.known(session, approval) || added;
    for (const callId of callIds) {
      const key = approvalKey(session, callId);
      if (this.approvals.has(key)) continue;
      this.approvals.set(key, {
        session,
        callId,
        tool: null,
        arguments: null,
        classification: null,
        timeoutMs: null,
        deadlineMs: null,
        receivedAt: Date.now(),
        state: "pending",
        error: null
      });
      added = true;
    }
    if (added) this.emit({ kind: "approvals", added: null });
  }
  /** Every approval the server waits for (`GET /v1/approvals`, read after the feed was
   * subscribed): any other the console holds was settled meanwhile. */
  waiting(all) {
    const listed = new Set(all.map((a) => approvalKey(a.session, a.callId)));
    let changed = false;
    for (const key of [...this.approvals.keys()]) {
      if (!listed.has(key)) changed = this.approvals.delete(key) || changed;
    }
    for (const approval of all) changed = this.known(approval.session, approval) || changed;
    if (changed) this.emit({ kind: "approvals", added: null });
  }
  /** Takes one listed approval; whether anything changed. */
  known(session, listed) {
    const key = approvalKey(session, listed.callId);
    const held = this.approvals.get(key);
    if (held && held.tool !== null && held.deadlineMs === listed.deadlineMs) return false;
    this.approvals.set(key, {
      session,
      callId: listed.callId,
      tool: listed.tool,
      arguments: listed.arguments,
      classification: {
        risk: listed.risk,
        authority: listed.authority,
        summary: listed.summary,
        requiresPrompt: true
      },
      timeoutMs: held?.timeoutMs ?? null,
      deadlineMs: listed.deadlineMs,
      receivedAt: held?.receivedAt ?? Date.now(),
      state: held?.state ?? "pending",
      error: held?.error ?? null
    });
    return true;
  }
  /** One `/v1/events` event. */
  event(item2) {
    const { session, event } = item2;
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
  timelineEvent(session, event) {
    const view2 = this.sessionView(session);
    const turn = this.currentTurn(view2, event);
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
  sessionView(session) {
    let view2 = this.sessions.get(session);
    if (!view2) {
      view2 = {
        status: {
          key: session,
          sessionId: null,
          workspace: "",
          approvalMode: "",
          model: null,
          activity: "turn",
          turns: 0,
          lastActivityMs: Date.now(),
          records: 0
        },
        turns: [],
        droppedTurns: 0,
        seenAt: Date.now(),
        history: null
      };
      this.sessions.set(session, view2);
      this.emit({ kind: "sessions" });
    }
    return view2;
  }
  /**
   * The group `event` belongs to. A user message starts a turn, taking along the events just
   * before it that shaped it (`on_user_message` changes and skips run before the text is stored);
   * `turn-finished` ends it; anything else outside a turn goes to a group between turns.
   */
  currentTurn(view2, event) {
    const last = view2.turns[view2.turns.length - 1];
    if (event.event !== "user") {
      if (last && last.open) return last;
      return this.pushTurn(view2, false, []);
    }
    if (last && last.open && last.isTurn) {
      last.open = false;
      if (last.stopReason === null) last.stopReason = "unknown";
    }
    let carried = [];
    if (last && last.open && !last.isTurn) {
      let from = last.entries.length;
      while (from > 0 && shapesUserMessage(last.entries[from - 1]?.event)) from--;
      carried = last.entries.splice(from);
      last.open = false;
      if (last.entries.length === 0) {
        view2.turns.pop();
      }
    }
    return this.pushTurn(view2, true, carried, typeof event.turn === "number" ? event.turn : null);
  }
  pushTurn(view2, isTurn, entries, number = null) {
    const previous = [...view2.turns].reverse().find((t) => t.isTurn);
    const turn = {
      isTurn,
      number: isTurn ? number ?? (previous?.number ?? 0) + 1 : 0,
      open: true,
      entries,
      dropped: 0,
      stopReason: null,
      streaming: ""
    };
    view2.turns.push(turn);
    if (view2.turns.length > MAX_TURNS) {
      view2.turns.shift();
      view2.droppedTurns++;
    }
    return turn;
  }
  requested(session, event) {
    const approval = {
      session,
      callId: event.callId,
      tool: event.tool,
      arguments: event.arguments,
      classification: event.classification,
      timeoutMs: event.timeoutMs,
      deadlineMs: null,
      receivedAt: Date.now(),
      state: "pending",
      error: null
    };
    this.approvals.set(approvalKey(session, event.callId), approval);
    this.emit({ kind: "approvals", added: approval });
  }
  /** The approval `callId` was decided (by anyone) or timed out: nothing waits for it. */
  settled(session, callId) {
    if (this.approvals.delete(approvalKey(session, callId))) this.emit({ kind: "approvals", added: null });
  }
  /** Marks an approval as being answered, or failed with `error`. */
  answering(approval, state, error = null) {
    approval.state = state;
    approval.error = error;
    this.emit({ kind: "approvals", added: null });
  }
  dropApprovals(session) {
    let dropped = false;
    for (const [key, approval] of this.approvals) {
      if (approval.session === session) {
        this.approvals.delete(key);
        dropped = true;
      }
    }
    if (dropped) this.emit({ kind: "approvals", added: null });
  }
  gatewayEvent(session, event) {
    this.pushGateway({
      at: Date.now(),
      session,
      key: event.key,
      wait: event.wait,
      calls: typeof event.calls === "number" ? event.calls : null,
      notes: []
    });
  }
  /** A handler note goes with the latest gateway event of its key (or stands alone). */
  handlerNote(session, note, text2) {
    const key = typeof note["event"] === "string" ? note["event"] : null;
    for (let i = this.gateway.length - 1; i >= 0; i--) {
      const entry = this.gateway[i];
      if (entry && (key === null || entry.key === key)) {
        entry.notes.push(text2);
        this.emit({ kind: "gateway" });
        return;
      }
    }
    this.pushGateway({ at: Date.now(), session, key: key ?? note.kind, wait: "", calls: null, notes: [text2] });
  }
  pushGateway(entry) {
    this.gateway.push(entry);
    if (this.gateway.length > MAX_GATEWAY) this.gateway.shift();
    this.emit({ kind: "gateway" });
  }
  /** Session `session`'s earlier turns, read from the store. */
  history(session, history) {
    this.sessionView(session).history = history;
    this.emit({ kind: "timeline", session });
  }
  /** The server dropped `missed` events for this console (it read too slowly). */
  lagged(missed) {
    this.missed += missed;
    this.emit({ kind: "lagged", missed });
  }
  pruneClosed() {
    const closed = [...this.sessions.values()].filter((v) => v.status.activity === "closed");
    closed.sort((a, b) => a.status.lastActivityMs - b.status.lastActivityMs);
    for (const view2 of closed.slice(0, Math.max(0, closed.length - MAX_CLOSED))) {
      this.sessions.delete(view2.status.key);
    }
  }
};
function shapesUserMessage(event) {
  if (!event) return false;
  if (event.event === "hook-changed") return event.hook === "on_user_message";
  if (event.event === "note") return event.note["hook"] === "on_user_message";
  return false;
}
function approvalKey(session, callId) {
  return `${session}\0${callId}`;
}
function describe(event) {
  switch (event.event) {
    case "note":
    case "info":
      return event.text;
    default:
      return JSON.stringify(event);
  }
}

// src/view.ts
function rebuild(container, ...children) {
  const active = document.activeElement;
  const focusKey = active && container.contains(active) ? active.getAttribute("data-key") : null;
  const open = /* @__PURE__ */ new Set();
  for (const details of container.querySelectorAll("details[data-key]")) {
    if (details.open) open.add(details.getAttribute("data-key") ?? "");
  }
  replace(container, ...children);
  for (const details of container.querySelectorAll("details[data-key]")) {
    if (open.has(details.getAttribute("data-key") ?? "")) details.open = true;
  }
  if (focusKey !== null) {
    const again = container.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
    if (again instanceof HTMLElement) again.focus({ preventScroll: true });
  }
}
function activityLabel(activity) {
  switch (activity) {
    case "idle":
      return "idle";
    case "turn":
      return "in a turn";
    case "approval":
      return "waiting for approval";
    case "closed":
      return "closed";
    default:
      return activity;
  }
}
function errorText(error) {
  return error instanceof Error ? error.message : String(error);
}

// src/views/approvals.ts
function answer(app2, approval, decision) {
  if (approval.state === "sending") return;
  app2.store.answering(approval, "sending");
  app2.api.answer(approval.session, approval.callId, decision).then(
    () => {
      app2.announce(`${decision === "allow" ? "Allowed" : "Denied"} ${approval.tool ?? approval.callId}.`);
    },
    (error) => {
      if (error instanceof ApiError && error.status === 404) {
        app2.store.settled(approval.session, approval.callId);
        app2.announce(`Nothing waits for ${approval.callId} any more.`);
        return;
      }
      app2.store.answering(approval, "failed", errorText(error));
    }
  );
}
function approvalCard(app2, approval, showSession) {
  const id = `${approval.session}:${approval.callId}`;
  const c = approval.classification;
  const headingId = `approval-${cssId(id)}`;
  const sending = approval.state === "sending";
  const deadline = deadlineOf(approval);
  return h(
    "article",
    { class: "approval", "aria-labelledby": headingId, "data-call": approval.callId },
    h(
      "h3",
      { id: headingId },
      h("span", { class: "mono" }, approval.tool ?? "a tool call"),
      " ",
      c ? h("span", { class: `badge risk-${c.risk}` }, `${c.risk} · ${c.authority}`) : null
    ),
    c ? h("p", { class: "summary" }, c.summary) : null,
    h(
      "dl",
      { class: "facts" },
      showSession ? [h("dt", {}, "Session"), h(
        "dd",
        {},
        h("a", { href: `#/sessions/${encodeURIComponent(approval.session)}`, class: "mono" }, approval.session)
      )] : null,
      h("dt", {}, "Call"),
      h("dd", { class: "mono" }, approval.callId),
      deadline !== null ? [h("dt", {}, "Denied unless answered by"), h("dd", {}, clock(deadline))] : null
    ),
    approval.arguments !== null && approval.arguments !== void 0 ? h("pre", { class: "code", "aria-label": "Arguments" }, json(approval.arguments)) : null,
    app2.who.answersApprovals ? h(
      "div",
      { class: "actions" },
      button("Allow", () => answer(app2, approval, "allow"), {
        class: "allow",
        "data-key": `allow:${id}`,
        disabled: sending,
        "aria-label": `Allow ${approval.tool ?? "call"} ${approval.callId}`
      }),
      button("Deny", () => answer(app2, approval, "deny"), {
        class: "deny",
        "data-key": `deny:${id}`,
        disabled: sending,
        "aria-label": `Deny ${approval.tool ?? "call"} ${approval.callId}`
      }),
      sending ? h("span", { class: "sub" }, "Sending…") : null,
      approval.error ? h("span", { class: "error", role: "alert" }, approval.error) : null
    ) : h("p", { class: "sub" }, `An operator of ${app2.who.tenant} answers this approval.`)
  );
}
function deadlineOf(approval) {
  if (approval.deadlineMs !== null) return approval.deadlineMs;
  return approval.timeoutMs === null ? null : approval.receivedAt + approval.timeoutMs;
}
function cssId(text2) {
  return text2.replace(/[^a-zA-Z0-9_-]/g, "_");
}
function approvalsOf(app2, session) {
  return [...app2.store.approvals.values()].filter((a) => session === null || a.session === session).sort((a, b) => a.receivedAt - b.receivedAt);
}
function approvalsView(app2) {
  const list2 = h("div", { id: "approvals-list" });
  const element = h(
    "section",
    { "aria-labelledby": "approvals-heading" },
    h("h2", { id: "approvals-heading" }, "Pending approvals"),
    list2
  );
  const draw = () => {
    const pending = approvalsOf(app2, null);
    rebuild(list2, pending.length === 0 ? h("p", { class: "empty" }, "Nothing waits for an operator.") : pending.map((a) => approvalCard(app2, a, true)));
  };
  draw();
  return {
    element,
    title: "Approvals",
    update: (changes2) => {
      if (changes2.some((c) => c.kind === "approvals")) draw();
    }
  };
}

// src/views/gateway.ts
function gatewayView(app2) {
  const table = h("div", { class: "scroll", id: "gateway-table" });
  const lag = h("p", { class: "sub", role: "status" });
  const element = h(
    "section",
    { "aria-labelledby": "gateway-heading" },
    h("h2", { id: "gateway-heading" }, "Gateway events"),
    lag,
    table
  );
  const draw = () => {
    lag.textContent = app2.store.missed > 0 ? `The server skipped ${app2.store.missed} events for this page (it read too slowly).` : "";
    const entries = [...app2.store.gateway].reverse();
    if (entries.length === 0) {
      rebuild(table, h("p", { class: "empty" }, "No gateway event since this page opened."));
      return;
    }
    rebuild(table, h(
      "table",
      { class: "gateway" },
      h("caption", { class: "visually-hidden" }, "Gateway events, newest first"),
      h("thead", {}, h("tr", {}, ...["Time", "Event", "Wait", "Handler calls", "Session", "Notes"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...entries.map((e) => h(
        "tr",
        { "data-key-event": e.key },
        h("td", {}, clock(e.at)),
        h("th", { scope: "row", class: "mono" }, e.key),
        h("td", {}, e.wait ? h("span", { class: `badge wait-${e.wait}` }, e.wait) : "–"),
        h("td", { class: "num" }, e.calls ?? "–"),
        h("td", { class: "mono" }, e.session ? h("a", { href: `#/sessions/${encodeURIComponent(e.session)}` }, e.session) : "gateway"),
        h("td", {}, e.notes.length === 0 ? "–" : h("ul", { class: "notes" }, ...e.notes.map((n) => h("li", {}, n))))
      )))
    ));
  };
  draw();
  return {
    element,
    title: "Gateway events",
    update: (changes2) => {
      if (changes2.some((c) => c.kind === "gateway" || c.kind === "lagged")) draw();
    }
  };
}

// src/metrics.ts
var LATENCY = ["hookline_hook_latency_seconds", "hookline_hook_seconds"];
var PLUGIN_CALLS = "hookline_plugin_hook_calls_total";
var CALLS = "hookline_hook_calls_total";
var SKIPS = "hookline_hook_skips_total";
function parseMetrics(text2) {
  const samples = [];
  for (const raw of text2.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const sample = parseLine(line);
    if (sample) samples.push(sample);
  }
  return samples;
}
function parseLine(line) {
  const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
  if (!name) return null;
  let rest = line.slice(name.length);
  const labels = {};
  if (rest.startsWith("{")) {
    const end = readLabels(rest, labels);
    if (end < 0) return null;
    rest = rest.slice(end);
  }
  const value = parseValue(rest.trim().split(/\s+/)[0] ?? "");
  return value === null ? null : { name, labels, value };
}
function readLabels(text2, labels) {
  let i = 1;
  for (; ; ) {
    while (text2[i] === " " || text2[i] === ",") i++;
    if (text2[i] === "}") return i + 1;
    const key = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text2.slice(i))?.[0];
    if (!key) return -1;
    i += key.length;
    if (text2[i] !== "=" || text2[i + 1] !== '"') return -1;
    i += 2;
    let value = "";
    for (; ; ) {
      const c = text2[i];
      if (c === void 0) return -1;
      if (c === '"') break;
      if (c === "\\") {
        const next = text2[i + 1];
        value += next === "n" ? "\n" : next ?? "";
        i += 2;
      } else {
        value += c;
        i++;
      }
    }
    labels[key] = value;
    i++;
  }
}
function parseValue(text2) {
  if (text2 === "NaN") return Number.NaN;
  if (text2 === "+Inf") return Number.POSITIVE_INFINITY;
  if (text2 === "-Inf") return Number.NEGATIVE_INFINITY;
  if (!/^[-+0-9.eE]+$/.test(text2)) return null;
  const value = Number(text2);
  return Number.isNaN(value) ? null : value;
}
function hookStats(samples) {
  const rows = /* @__PURE__ */ new Map();
  const row2 = (plugin, hook) => {
    const key = `${plugin}\0${hook}`;
    let found = rows.get(key);
    if (!found) {
      found = { plugin, hook, calls: null, skips: /* @__PURE__ */ new Map(), p50: null, p99: null, samples: 0 };
      rows.set(key, found);
    }
    return found;
  };
  for (const s of samples) {
    const hook = s.labels["hook"];
    if (hook === void 0) continue;
    const plugin = s.labels["plugin"] ?? "";
    const base = LATENCY.find((n) => s.name === n || s.name === `${n}_count`);
    if (base !== void 0 && s.name === base) {
      const q = s.labels["quantile"];
      const seconds = Number.isFinite(s.value) ? s.value : null;
      if (q === "0.5") row2(plugin, hook).p50 = seconds;
      if (q === "0.99") row2(plugin, hook).p99 = seconds;
    } else if (base !== void 0) {
      row2(plugin, hook).samples = s.value;
    } else if (s.name === PLUGIN_CALLS || s.name === CALLS) {
      row2(plugin, hook).calls = s.value;
    } else if (s.name === SKIPS) {
      const reason = s.labels["reason"] ?? "unknown";
      const skips = row2(plugin, hook).skips;
      skips.set(reason, (skips.get(reason) ?? 0) + s.value);
    }
  }
  for (const r of rows.values()) {
    if (r.samples === 0 || r.p50 === 0) r.p50 = null;
    if (r.samples === 0 || r.p99 === 0) r.p99 = null;
  }
  return [...rows.values()];
}
function isPluginRow(stats) {
  return stats.plugin !== "";
}
function hooksOf(stats, plugin) {
  return stats.filter((s) => s.plugin === plugin && (s.calls !== null || s.samples > 0)).map((s) => s.hook).sort();
}
function totalSkips(stats) {
  let total = 0;
  for (const n of stats.skips.values()) total += n;
  return total;
}
function formatSeconds(seconds) {
  if (seconds === null) return "–";
  if (seconds < 1e-3) return `${Math.round(seconds * 1e6)} µs`;
  if (seconds < 1) return `${(seconds * 1e3).toFixed(seconds < 0.01 ? 2 : 1)} ms`;
  return `${seconds.toFixed(2)} s`;
}

// src/views/plugins.ts
function statusDetail(p, clockOf = clock) {
  if (p.state === "loaded" || !p.stateReason && !p.stateSince) return "";
  const since = p.stateSince ? Date.parse(p.stateSince) : NaN;
  const when = Number.isFinite(since) ? `since ${clockOf(since)}` : "";
  return [when, p.stateReason ?? ""].filter((t) => t !== "").join(": ");
}
function pluginRows(view2) {
  const rows = view2.plugins.map((p, i) => ({
    order: i + 1,
    name: p.name,
    kind: "external",
    language: p.kind ?? "unknown",
    hooks: p.hello?.hooks ?? [],
    rawHooks: p.hello?.rawHooks ?? [],
    events: p.hello?.events ?? [],
    status: p.state ?? "unknown",
    statusDetail: statusDetail(p),
    trust: p.trust ?? "unknown"
  }));
  for (const p of view2.inProcess) {
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
      trust: "built-in"
    });
  }
  return rows;
}
function list(items, empty = "–") {
  return items.length === 0 ? h("span", { class: "sub" }, empty) : h("span", { class: "mono" }, items.join(", "));
}
function fromMetrics(hooks) {
  return h(
    "span",
    {},
    h("span", { class: "sub" }, hooks.length === 0 ? "none" : "from metrics: "),
    hooks.length === 0 ? null : h("span", { class: "mono" }, hooks.join(", "))
  );
}
function pluginsTable(rows, stats) {
  return h("div", { class: "scroll" }, h(
    "table",
    { class: "plugins" },
    h("caption", {}, "Plugins, in load order"),
    h("thead", {}, h("tr", {}, ...["#", "Plugin", "Kind", "Language", "Hooks", "Raw hooks", "Events", "Status", "Trust"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ...rows.map((r) => h(
      "tr",
      { "data-plugin": r.name },
      h("td", { class: "num" }, r.order),
      h("th", { scope: "row", class: "mono" }, r.name),
      h("td", {}, r.kind),
      h("td", {}, r.language),
      h("td", {}, r.hooks.length > 0 || r.kind !== "in-process" ? list(r.hooks) : fromMetrics(hooksOf(stats, r.name))),
      h("td", {}, list(r.rawHooks)),
      h("td", {}, list(r.events)),
      h(
        "td",
        { "data-figure": "status" },
        h("span", { class: `badge plugin-${r.status}` }, r.status),
        r.statusDetail === "" ? null : h("div", { class: "sub" }, r.statusDetail)
      ),
      h("td", {}, r.trust)
    )))
  ));
}
function skipsText(stats) {
  if (stats.skips.size === 0) return "0";
  return [...stats.skips].map(([reason, n]) => `${n} ${reason}`).join(", ");
}
function figuresTable(stats) {
  return h("div", { class: "scroll" }, h(
    "table",
    { class: "hook-figures" },
    h("caption", {}, "Calls, skips by reason and latency per plugin and hook"),
    h("thead", {}, h("tr", {}, ...["Plugin", "Hook", "Calls", "Skips by reason", "p50", "p99", "Timed"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ...stats.map((s) => h(
      "tr",
      { "data-plugin": s.plugin, "data-hook": s.hook },
      h("th", { scope: "row", class: "mono" }, s.plugin),
      h("td", { class: "mono" }, s.hook),
      h("td", { class: "num", "data-figure": "calls" }, s.calls ?? "–"),
      h("td", { "data-figure": "skips" }, skipsText(s)),
      h("td", { class: "num", "data-figure": "p50" }, formatSeconds(s.p50)),
      h("td", { class: "num", "data-figure": "p99" }, formatSeconds(s.p99)),
      h("td", { class: "num", "data-figure": "timed" }, s.samples)
    )))
  ));
}
function pipelineTable(pipeline, perPlugin) {
  const skipped = (hook) => {
    const skips = /* @__PURE__ */ new Map();
    for (const s of [...pipeline, ...perPlugin].filter((s2) => s2.hook === hook)) {
      for (const [reason, n] of s.skips) skips.set(reason, (skips.get(reason) ?? 0) + n);
    }
    return { plugin: "", hook, calls: null, skips, p50: null, p99: null, samples: 0 };
  };
  return h("div", { class: "scroll" }, h(
    "table",
    { class: "hook-pipeline" },
    h("caption", {}, "Pipeline calls per hook"),
    h("thead", {}, h("tr", {}, ...["Hook", "Calls", "Skips by reason, every plugin"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ...pipeline.map((s) => h(
      "tr",
      { "data-hook": s.hook },
      h("th", { scope: "row", class: "mono" }, s.hook),
      h("td", { class: "num" }, s.calls ?? "–"),
      h("td", {}, skipsText(skipped(s.hook)))
    )))
  ));
}
function inLoadOrder(rows) {
  const order = new Map(rows.map((r) => [r.name, r.order]));
  const rank = (s) => order.get(s.plugin) ?? Number.MAX_SAFE_INTEGER;
  return (a, b) => rank(a) - rank(b) || a.plugin.localeCompare(b.plugin) || a.hook.localeCompare(b.hook);
}
function figures(rows, stats) {
  const ran = (s) => (s.calls ?? 0) > 0 || totalSkips(s) > 0 || s.samples > 0;
  const perPlugin = stats.filter((s) => isPluginRow(s) && ran(s)).sort(inLoadOrder(rows));
  const pipeline = stats.filter((s) => !isPluginRow(s) && ran(s)).sort((a, b) => a.hook.localeCompare(b.hook));
  if (perPlugin.length === 0 && pipeline.length === 0) return [h("p", { class: "empty" }, "No hook has run yet.")];
  const out = [];
  if (perPlugin.length > 0) out.push(figuresTable(perPlugin));
  const timed = perPlugin.filter((s) => s.p50 !== null || s.p99 !== null);
  if (timed.length > 0) {
    out.push(h(
      "figure",
      { class: "chart-figure" },
      latencyChart(timed),
      h("figcaption", { class: "sub" }, "p50 (solid) and p99 (light) per plugin and hook")
    ));
  }
  if (pipeline.length > 0) out.push(pipelineTable(pipeline, perPlugin));
  return out;
}
function latencyChart(stats) {
  const rows = stats.filter((s) => s.p50 !== null || s.p99 !== null);
  const max = Math.max(1e-9, ...rows.map((s) => Math.max(s.p99 ?? 0, s.p50 ?? 0)));
  const labelW = 230;
  const barW = 300;
  const rowH = 22;
  const height = rows.length * rowH + 24;
  const chart = svg("svg", {
    class: "chart",
    viewBox: `0 0 ${labelW + barW + 90} ${height}`,
    role: "img",
    "aria-labelledby": "chart-title",
    preserveAspectRatio: "xMinYMin meet"
  }, svg("title", { id: "chart-title" }, "Hook latency per plugin: p50 solid, p99 light"));
  rows.forEach((s, i) => {
    const y = i * rowH + 4;
    const w99 = (s.p99 ?? 0) / max * barW;
    const w50 = (s.p50 ?? 0) / max * barW;
    chart.append(
      svg("text", { x: labelW - 6, y: y + 14, "text-anchor": "end", class: "chart-label" }, `${s.plugin} ${s.hook}`),
      svg("rect", { x: labelW, y: y + 2, width: Math.max(1, w99).toFixed(1), height: rowH - 6, class: "bar-p99" }),
      svg("rect", { x: labelW, y: y + 5, width: Math.max(1, w50).toFixed(1), height: rowH - 12, class: "bar-p50" }),
      svg(
        "text",
        { x: labelW + Math.max(w99, w50) + 6, y: y + 14, class: "chart-value" },
        `${formatSeconds(s.p50)} / ${formatSeconds(s.p99)}`
      )
    );
  });
  chart.append(svg("text", { x: labelW, y: height - 4, class: "chart-axis" }, `0 to ${formatSeconds(max)}`));
  return chart;
}
function pluginsView(app2) {
  const body = h("div", { id: "plugins-body" }, h("p", { class: "sub" }, "Loading…"));
  const fetched = h("p", { class: "sub", role: "status" });
  const element = h(
    "section",
    { "aria-labelledby": "plugins-heading" },
    h("h2", { id: "plugins-heading" }, "Plugins"),
    fetched,
    body
  );
  let inFlight = false;
  let again = false;
  let disposed = false;
  const load = async () => {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    try {
      const [view2, text2] = await Promise.all([app2.api.plugins(), app2.api.metrics()]);
      if (disposed) return;
      const stats = hookStats(parseMetrics(text2));
      const rows = pluginRows(view2);
      rebuild(
        body,
        pluginsTable(rows, stats),
        view2.loadNotes.length > 0 ? h(
          "section",
          { "aria-label": "Load notes" },
          h("h3", {}, "Load notes"),
          h("ul", { class: "notes" }, ...view2.loadNotes.map((n) => h("li", {}, n)))
        ) : null,
        h("h3", {}, "Hooks at work"),
        figures(rows, stats)
      );
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
    update: (changes2) => {
      if (changes2.some((c) => c.kind === "turn-finished")) void load();
    },
    dispose: () => {
      disposed = true;
    }
  };
}

// src/views/sessions.ts
function ordered(sessions) {
  return [...sessions].sort((a, b) => {
    const closed = Number(a.status.activity === "closed") - Number(b.status.activity === "closed");
    return closed !== 0 ? closed : b.status.lastActivityMs - a.status.lastActivityMs;
  });
}
function sessionsView(app2) {
  const table = h("div", { class: "scroll", id: "sessions-table" });
  const message = h("p", { class: "form-message", role: "status" });
  const workspace = h("input", {
    id: "open-workspace",
    name: "workspace",
    type: "text",
    autocomplete: "off",
    placeholder: "sub/dir (optional)",
    spellcheck: "false"
  });
  const form = h(
    "form",
    { class: "inline-form", "aria-label": "Open a session" },
    h("label", { for: "open-workspace" }, "Workspace"),
    workspace,
    h("button", { type: "submit" }, "Open session"),
    message
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    message.textContent = "Opening…";
    app2.api.open(workspace.value.trim() || null).then(
      (status) => {
        app2.store.status(status);
        message.textContent = `Opened ${status.key}.`;
        workspace.value = "";
      },
      (error) => {
        message.textContent = errorText(error);
      }
    );
  });
  const element = h(
    "section",
    { "aria-labelledby": "sessions-heading" },
    h("h2", { id: "sessions-heading" }, "Sessions"),
    form,
    table
  );
  const draw = () => {
    const rows = ordered(app2.store.sessions.values());
    if (rows.length === 0) {
      rebuild(table, h("p", { class: "empty" }, "No session yet. Open one here or through the API."));
      return;
    }
    rebuild(table, h(
      "table",
      { class: "sessions" },
      h("caption", { class: "visually-hidden" }, "Sessions"),
      h("thead", {}, h(
        "tr",
        {},
        ...["Session", "Workspace", "State", "Approvals", "Turns", "Last activity", ""].map((t) => h("th", { scope: "col" }, t))
      )),
      h("tbody", {}, ...rows.map((view2) => row(app2, view2)))
    ));
  };
  draw();
  return {
    element,
    title: "Sessions",
    update: (changes2) => {
      if (changes2.some((c) => c.kind === "sessions" || c.kind === "timeline")) draw();
    }
  };
}
function row(app2, view2) {
  const s = view2.status;
  const key = s.key;
  return h(
    "tr",
    { "data-session": key, class: `activity-${s.activity}` },
    h(
      "th",
      { scope: "row" },
      h("a", { href: `#/sessions/${encodeURIComponent(key)}`, "data-key": `open:${key}`, class: "mono" }, key),
      s.sessionId && s.sessionId !== key ? h("div", { class: "sub mono" }, `active: ${s.sessionId}`) : null
    ),
    h("td", { class: "mono" }, s.workspace || "–"),
    h("td", {}, h("span", { class: `badge state-${s.activity}` }, activityLabel(s.activity))),
    h("td", {}, s.approvalMode || "–"),
    h("td", { class: "num" }, s.turns),
    h("td", {}, h("time", { datetime: new Date(s.lastActivityMs || Date.now()).toISOString() }, clock(s.lastActivityMs))),
    h("td", {}, s.activity === "closed" ? null : button("Close", () => {
      app2.api.close(key).catch((error) => app2.announce(`Could not close ${key}: ${errorText(error)}`));
    }, { "data-key": `close:${key}`, "aria-label": `Close session ${key}`, class: "quiet" }))
  );
}

// src/diff.ts
var MAX_CELLS = 25e4;
function tokens(text2) {
  return text2.split(/(\s+)/).filter((t) => t !== "");
}
function diffWords(before, after) {
  const a = tokens(before);
  const b = tokens(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) {
    tail++;
  }
  const parts = [];
  const push = (kind, text2) => {
    const last = parts[parts.length - 1];
    if (last && last.kind === kind) last.text += text2;
    else if (text2 !== "") parts.push({ kind, text: text2 });
  };
  push("same", a.slice(0, head).join(""));
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  for (const part of middle(midA, midB)) push(part.kind, part.text);
  push("same", a.slice(a.length - tail).join(""));
  return regroup(parts);
}
function regroup(parts) {
  const out = [];
  let removed = "";
  let added = "";
  const flush2 = () => {
    if (removed) out.push({ kind: "removed", text: removed });
    if (added) out.push({ kind: "added", text: added });
    removed = "";
    added = "";
  };
  parts.forEach((part, i) => {
    const inChange = removed !== "" || added !== "";
    const next = parts[i + 1];
    if (part.kind === "removed") removed += part.text;
    else if (part.kind === "added") added += part.text;
    else if (inChange && next && next.kind !== "same" && /^\s+$/.test(part.text)) {
      removed += part.text;
      added += part.text;
    } else {
      flush2();
      out.push(part);
    }
  });
  flush2();
  return out;
}
function middle(a, b) {
  if (a.length * b.length > MAX_CELLS) {
    return [
      { kind: "removed", text: a.join("") },
      { kind: "added", text: b.join("") }
    ];
  }
  const w = b.length + 1;
  const lcs = new Uint32Array((a.length + 1) * w);
  for (let i2 = a.length - 1; i2 >= 0; i2--) {
    for (let j2 = b.length - 1; j2 >= 0; j2--) {
      lcs[i2 * w + j2] = a[i2] === b[j2] ? (lcs[(i2 + 1) * w + j2 + 1] ?? 0) + 1 : Math.max(lcs[(i2 + 1) * w + j2] ?? 0, lcs[i2 * w + j2 + 1] ?? 0);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ kind: "same", text: a[i++] ?? "" });
      j++;
    } else if (i < a.length && (j === b.length || (lcs[(i + 1) * w + j] ?? 0) >= (lcs[i * w + j + 1] ?? 0))) {
      out.push({ kind: "removed", text: a[i++] ?? "" });
    } else {
      out.push({ kind: "added", text: b[j++] ?? "" });
    }
  }
  return out;
}
function valueTexts(before, after) {
  if (isRecord(before) && isRecord(after) && typeof before["text"] === "string" && typeof after["text"] === "string") {
    const rest = (v) => JSON.stringify({ ...v, text: null });
    if (rest(before) === rest(after)) return [before["text"], after["text"]];
  }
  return [fields(before), fields(after)];
}
function isRecord(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
function fields(value) {
  if (typeof value === "string") return value;
  if (!isRecord(value)) return JSON.stringify(value, null, 2) ?? String(value);
  return Object.entries(value).map(([key, v]) => {
    if (typeof v === "string") return v.includes("\n") ? `${key}:
${v}` : `${key}: ${v}`;
    return `${key}: ${JSON.stringify(v, null, 2)}`;
  }).join("\n");
}
function patchChanges(patch) {
  const out = [];
  let tested = null;
  for (const op of patch) {
    const old = tested !== null && tested.path === op.path ? { before: tested.value } : {};
    tested = null;
    switch (op.op) {
      case "test":
        tested = { path: op.path, value: op.value };
        break;
      case "replace":
        out.push({ path: op.path, ...old, after: op.value });
        break;
      case "remove":
        out.push({ path: op.path, ...old });
        break;
      case "add":
        out.push({ path: op.path, after: op.value });
        break;
      case "move":
      case "copy":
        out.push({ path: op.path, from: op.from ?? "" });
        break;
    }
  }
  return out;
}
function patchText(value) {
  if (value === void 0) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2) ?? String(value);
}

// src/history.ts
var text = (value) => typeof value === "string" ? value : "";
function call(value) {
  const v = isObject(value) ? value : {};
  return { callId: text(v["callId"]), name: text(v["name"]), arguments: v["arguments"] ?? null };
}
function classification(value) {
  const v = isObject(value) ? value : {};
  return {
    risk: text(v["risk"]),
    authority: text(v["authority"]),
    summary: text(v["summary"]),
    requiresPrompt: v["requiresPrompt"] === true
  };
}
function answers(entry) {
  const items = Array.isArray(entry["items"]) ? entry["items"] : [];
  return items.filter((i) => isObject(i) && i["kind"] === "assistant").map((i) => text(i["text"]));
}
var Reader = class {
  tools = /* @__PURE__ */ new Map();
  side = null;
  /** The events one entry shows as (none for the bookkeeping ones). */
  events(entry) {
    const e = entry;
    switch (e.kind) {
      case "session-started":
      case "session-ended":
        return [{
          event: e.kind,
          workspaceRoot: text(e["workspaceRoot"]),
          sessionId: text(e["sessionId"]),
          approvalMode: text(e["approvalMode"])
        }];
      case "user-message":
        return [{ event: "user", session: "", text: text(e["text"]), original: typeof e["original"] === "string" ? e["original"] : null }];
      case "system-text":
        return [{ event: "system-text", mode: text(e["mode"]), text: text(e["text"]) }];
      case "model-request": {
        const changes2 = Array.isArray(e["changes"]) ? e["changes"] : [];
        if (changes2.length === 0) return [];
        return [{ event: "hook-changed", hook: "model request", changedBy: ["rebuild_model, transform_model and the provider's preparation"], patch: changes2 }];
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
          event: "approval-requested",
          callId: asked.callId,
          tool: asked.name,
          arguments: asked.arguments,
          classification: classification(e["classification"]),
          timeoutMs: 0
        }];
      }
      case "approval":
        return [{
          event: "approval",
          callId: text(e["callId"]),
          tool: text(e["tool"]),
          classification: classification(e["classification"]),
          decision: e["decision"] === "allow" ? "allow" : "deny",
          decidedBy: text(e["decidedBy"])
        }];
      case "tool-output":
        return [{
          event: "tool-run",
          callId: text(e["callId"]),
          tool: this.tools.get(text(e["callId"])) ?? "",
          arguments: null,
          success: e["success"] === true,
          text: text(e["text"])
        }];
      case "tool-result":
        return [{
          event: "tool-result",
          callId: text(e["callId"]),
          name: text(e["name"]),
          text: text(e["text"]),
          success: e["success"] === true,
          approval: text(e["approval"])
        }];
      case "compaction":
        return [{ event: "compacted", folded: typeof e["folded"] === "number" ? e["folded"] : 0, summary: text(e["summary"]) }];
      case "turn-finished":
        return [{ event: "turn-finished", stopReason: text(e["stopReason"]) }];
      case "note":
        return [{ event: "note", note: isObject(e["note"]) ? e["note"] : { kind: "note" }, text: text(e["text"]) }];
      case "gateway-event": {
        const emitted = isObject(e["event"]) ? e["event"] : {};
        return [{ event: "gateway-event", key: text(emitted["key"]), wait: "awaited", ...typeof e["calls"] === "number" ? { calls: e["calls"] } : {} }];
      }
      case "approvals-set":
        return [{ event: "info", text: `The approval mode was set to ${text(e["mode"])}.` }];
      case "seeded": {
        const records2 = Array.isArray(e["records"]) ? e["records"].length : 0;
        return [{ event: "info", text: `The session started with ${records2} records copied from another one.` }];
      }
      case "bootstrap":
        return [{ event: "info", text: typeof e["text"] === "string" ? "The workspace's bootstrap text was read." : "No bootstrap file has content." }];
      default:
        return [{ event: "info", text: `A stored ${e.kind} entry.` }];
    }
  }
};
function historyTurns(items, turnsBefore) {
  const reader = new Reader();
  const turns = [];
  let number = turnsBefore;
  let current = null;
  const open = (isTurn) => {
    const turn = { isTurn, number: isTurn ? ++number : 0, open: true, entries: [], dropped: 0, stopReason: null, streaming: "" };
    turns.push(turn);
    return turn;
  };
  for (const entry of items) {
    for (const event of reader.events(entry)) {
      if (event.event === "user") {
        let carried = [];
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
  for (const turn of turns) if (!turn.isTurn && turn !== turns[turns.length - 1]) turn.open = false;
  const dropped = Math.max(0, turns.length - MAX_TURNS);
  return { turns: turns.slice(dropped), droppedTurns: dropped, sessionId: null };
}
function mergeTurns(history, live2) {
  if (history.length === 0) return live2;
  if (live2.length === 0) return history;
  const firstLive = live2.find((t) => t.isTurn)?.number;
  const kept = [];
  for (const turn of history) {
    if (firstLive !== void 0 && turn.isTurn && turn.number >= firstLive) break;
    kept.push(turn);
  }
  const leading = live2.findIndex((t) => t.isTurn);
  const before = leading === -1 ? live2 : live2.slice(0, leading);
  const after = leading === -1 ? [] : live2.slice(leading);
  const last = kept[kept.length - 1];
  if (firstLive === void 0 && last && last.isTurn && last.open) {
    const rest = before.flatMap((t) => t.entries);
    const finished = before.find((t) => t.stopReason !== null)?.stopReason ?? null;
    const whole = {
      ...last,
      entries: [...last.entries, ...rest],
      stopReason: finished ?? last.stopReason,
      open: finished === null && before.some((t) => t.open),
      streaming: before.map((t) => t.streaming).join("")
    };
    return [...kept.slice(0, -1), whole, ...after];
  }
  if (before.length > 0) {
    while (kept.length > 0 && !kept[kept.length - 1]?.isTurn) kept.pop();
  }
  return [...kept, ...before, ...after];
}

// src/usage.ts
function usageText(usage) {
  if (!usage) return "not reported by the model";
  const parts = [];
  if (usage.inputTokens !== void 0) parts.push(`${usage.inputTokens.toLocaleString("en-US")} in`);
  if (usage.outputTokens !== void 0) parts.push(`${usage.outputTokens.toLocaleString("en-US")} out`);
  const calls = usage.modelCalls;
  parts.push(`${calls.toLocaleString("en-US")} model ${calls === 1 ? "call" : "calls"}`);
  return parts.join(" · ");
}

// src/views/timeline.ts
var CONTEXT_LINES = 2;
function same(text2, first, last) {
  const lines = text2.split("\n");
  const shownHead = first ? 0 : CONTEXT_LINES + 1;
  const shownTail = last ? 0 : CONTEXT_LINES + 1;
  const folded = lines.length - shownHead - shownTail;
  if (first && last || folded < 3) return [text2];
  return [
    first ? "" : `${lines.slice(0, shownHead).join("\n")}
`,
    h("span", { class: "folded" }, `… ${folded} unchanged lines …`),
    last ? "" : `
${lines.slice(lines.length - shownTail).join("\n")}`
  ];
}
function diffBlock(before, after, label, key) {
  const diff = diffWords(before, after);
  const parts = diff.map((p, i) => p.kind === "same" ? same(p.text, i === 0, i === diff.length - 1) : h(p.kind === "removed" ? "del" : "ins", {}, p.text));
  return h(
    "div",
    { class: "diff", role: "group", "aria-label": label },
    h("pre", { class: "code" }, ...parts),
    h(
      "details",
      { "data-key": `raw:${key}` },
      h("summary", {}, "Before and after in full"),
      h(
        "div",
        { class: "before-after" },
        h("div", {}, h("h5", {}, "Before"), h("pre", { class: "code" }, before)),
        h("div", {}, h("h5", {}, "After"), h("pre", { class: "code" }, after))
      )
    )
  );
}
function patchBlock(patch, hook, key) {
  const changes2 = patchChanges(patch);
  return h("div", { class: "patch" }, ...changes2.map((change, i) => h(
    "div",
    { class: "patch-change" },
    h("p", { class: "sub mono" }, change.from !== void 0 ? `${change.path} from ${change.from}` : change.path),
    change.from !== void 0 ? null : diffBlock(patchText(change.before), patchText(change.after), `what ${hook} changed at ${change.path}`, `${key}:${i}`)
  )));
}
function item(kind, title, ...body) {
  return h(
    "li",
    { class: `event ev-${kind}`, "data-event": kind },
    h("div", { class: "event-title" }, h("span", { class: "kind" }, kind), " ", title),
    ...body
  );
}
function callText(call2) {
  return `${call2.name} ${JSON.stringify(call2.arguments)}`;
}
function renderEvent(event, key) {
  switch (event.event) {
    case "user":
      return item(
        "user",
        "the user's message",
        event.original !== null && event.original !== event.text ? diffBlock(event.original, event.text, "typed, then stored", key) : null,
        h(
          "dl",
          { class: "facts" },
          h("dt", {}, "As typed"),
          h("dd", {}, h("pre", { class: "code typed" }, event.original ?? event.text)),
          h("dt", {}, "As stored"),
          h("dd", {}, h("pre", { class: "code stored" }, event.text))
        )
      );
    case "hook-changed":
      return item(
        "hook-changed",
        [
          h("span", { class: "mono" }, event.hook),
          " changed by ",
          h("span", { class: "mono" }, event.changedBy.join(", "))
        ],
        event.before !== void 0 && event.after !== void 0 ? diffBlock(...valueTexts(event.before, event.after), `what ${event.hook} changed`, key) : patchBlock(event.patch ?? [], event.hook, key)
      );
    case "note":
      return item("note", h("span", { class: "mono" }, event.note.kind), h("p", { class: "note-text" }, event.text));
    case "tool-call":
      return item(
        "tool-call",
        [h("span", { class: "mono" }, event.call.name), " ", h("span", { class: "sub mono" }, event.call.callId)],
        event.rewrittenFrom ? h(
          "div",
          {},
          h("p", { class: "sub" }, "Rewritten by on_tool_call:"),
          diffBlock(callText(event.rewrittenFrom), callText(event.call), `tool call ${event.call.callId} rewritten`, key)
        ) : h("pre", { class: "code" }, json(event.call.arguments))
      );
    case "approval-requested":
      return item(
        "approval-requested",
        [h("span", { class: "mono" }, event.tool), " asks the operator"],
        h("p", {}, `${event.classification.risk} · ${event.classification.authority} · ${event.classification.summary}`)
      );
    case "approval":
      return item(
        "approval",
        [
          h("span", { class: `badge decision-${event.decision}` }, event.decision),
          " ",
          h("span", { class: "mono" }, event.tool),
          ` by ${event.decidedBy}`
        ],
        h("p", { class: "sub" }, `${event.classification.risk} · ${event.classification.authority} · ${event.classification.summary}`)
      );
    case "tool-run":
      return item(
        "tool-run",
        [h("span", { class: "mono" }, event.tool), event.success ? " succeeded" : " failed"],
        h("pre", { class: "code" }, event.text)
      );
    case "tool-result":
      return item(
        "tool-result",
        [h("span", { class: "mono" }, event.name), ` (${event.approval})`],
        h("pre", { class: "code" }, event.text)
      );
    case "assistant":
      return item("assistant", "the model's answer", h("pre", { class: "code answer" }, event.text));
    case "model-failed":
      return item("model-failed", `the ${event.purpose} call failed`, h("p", { class: "error" }, event.error));
    case "model-call":
      return item("model-call", `${event.purpose} call with ${event.items} items`);
    case "system-text":
      return item(
        "system-text",
        `${event.mode} system text`,
        h("details", { "data-key": `sys:${key}` }, h("summary", {}, "Show"), h("pre", { class: "code" }, event.text))
      );
    case "turn-finished":
      return item("turn-finished", [h("span", { class: `badge stop-${event.stopReason}` }, event.stopReason)]);
    case "gateway-event":
      return item(
        "gateway-event",
        [h("span", { class: "mono" }, event.key), ` (${event.wait})`],
        typeof event.calls === "number" ? h("p", { class: "sub" }, `${event.calls} handler calls`) : null
      );
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
var MAX_HISTORY_ENTRIES = 5e3;
var HISTORY_PAGE = 1e3;
async function readHistory(app2, key) {
  const first = await app2.api.archive(key, 0, 1);
  const from = Math.max(0, first.total - MAX_HISTORY_ENTRIES);
  const items = [];
  let turnsBefore = 0;
  for (let offset = from; offset < first.total; offset += HISTORY_PAGE) {
    const page = await app2.api.archive(key, offset, HISTORY_PAGE);
    if (offset === from) turnsBefore = page.turnsBefore;
    items.push(...page.items);
    if (page.items.length === 0) break;
  }
  const history = historyTurns(items, turnsBefore);
  return { ...history, droppedTurns: history.droppedTurns + (from > 0 ? 1 : 0), sessionId: first.sessionId };
}
function turnSection(key, turn, index, stored) {
  const title = turn.isTurn ? `Turn ${turn.number}` : "Between turns";
  const headingId = `group-${index}`;
  return h(
    "section",
    {
      class: turn.isTurn ? "turn" : "turn between",
      "aria-labelledby": headingId,
      "data-turn": turn.isTurn ? turn.number : null
    },
    h(
      "h3",
      { id: headingId },
      title,
      " ",
      turn.stopReason ? h("span", { class: `badge stop-${turn.stopReason}` }, turn.stopReason) : turn.isTurn && turn.open ? h("span", { class: "badge state-turn" }, "running") : null,
      " ",
      stored ? h("span", { class: "sub", "data-stored": "true" }, "from the store") : h("span", { class: "sub" }, clock(turn.entries[0]?.at ?? 0))
    ),
    h(
      "ol",
      { class: "events" },
      ...turn.entries.map((e, i) => renderEvent(e.event, `${key}:${index}:${i}`)),
      turn.streaming ? h("li", { class: "event ev-model-text" }, h("div", { class: "event-title" }, h("span", { class: "kind" }, "model-text"), " streaming"), h("pre", { class: "code" }, turn.streaming)) : null
    ),
    turn.dropped > 0 ? h("p", { class: "sub" }, `${turn.dropped} more events not kept.`) : null
  );
}
function records(items) {
  return h("ol", { class: "records" }, ...items.map((r) => h(
    "li",
    { "data-record": r.kind },
    h("span", { class: "kind" }, r.kind),
    " ",
    r.name ? h("span", { class: "mono" }, `${r.name} `) : null,
    r.text !== void 0 ? h("pre", { class: "code" }, r.text) : null,
    r.arguments !== void 0 ? h("pre", { class: "code" }, json(r.arguments)) : null
  )));
}
function timelineView(app2, key) {
  const status = h("div", { class: "status-line" });
  const pending = h("div", { class: "session-approvals" });
  const timeline = h("div", { class: "timeline", id: "timeline" });
  const stored = h("div", { class: "stored" });
  const input = h("input", { id: "turn-text", name: "text", type: "text", autocomplete: "off", spellcheck: "false" });
  const sendMessage = h("p", { class: "form-message", role: "status" });
  const form = h(
    "form",
    { class: "inline-form", "aria-label": "Send a message" },
    h("label", { for: "turn-text" }, "Message"),
    input,
    h("button", { type: "submit" }, "Send"),
    sendMessage
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text2 = input.value;
    if (text2.trim() === "") return;
    input.value = "";
    sendMessage.textContent = "Sent; the turn runs below.";
    app2.api.turn(key, text2).then(
      () => {
        sendMessage.textContent = "";
      },
      (error) => {
        sendMessage.textContent = errorText(error);
      }
    );
  });
  const loadRecords = () => {
    rebuild(stored, h("p", { class: "sub" }, "Loading…"));
    app2.api.session(key, 0, 100).then(
      (detail) => {
        app2.store.pending(key, detail.pendingApprovals, detail.approvals);
        rebuild(
          stored,
          h("p", { class: "sub" }, `${detail.records.total} stored records${detail.records.total > detail.records.items.length ? `, the first ${detail.records.items.length} shown` : ""}.`),
          records(detail.records.items)
        );
      },
      (error) => rebuild(stored, h("p", { class: "error" }, errorText(error)))
    );
  };
  const element = h(
    "section",
    { "aria-labelledby": "session-heading" },
    h("h2", { id: "session-heading" }, "Session ", h("span", { class: "mono" }, key)),
    status,
    pending,
    form,
    h("h3", {}, "Timeline"),
    timeline,
    h(
      "details",
      { class: "stored-records" },
      h("summary", {}, "Stored records"),
      button("Load stored records", loadRecords, { "data-key": "load-records" }),
      stored
    )
  );
  const drawStatus = (view2) => {
    if (!view2) {
      rebuild(status, h("p", { class: "empty" }, "This console has not seen this session. It may be closed."));
      return;
    }
    const s = view2.status;
    rebuild(status, h(
      "dl",
      { class: "facts inline" },
      h("dt", {}, "State"),
      h("dd", {}, h("span", { class: `badge state-${s.activity}` }, activityLabel(s.activity))),
      h("dt", {}, "Workspace"),
      h("dd", { class: "mono" }, s.workspace || "–"),
      h("dt", {}, "Active session"),
      h("dd", { class: "mono" }, s.sessionId ?? "–"),
      h("dt", {}, "Approval mode"),
      h("dd", {}, s.approvalMode || "–"),
      h("dt", {}, "Model"),
      h("dd", { class: "mono" }, s.model ?? "–"),
      h("dt", {}, "Turns"),
      h("dd", {}, s.turns),
      h("dt", {}, "Tokens"),
      h("dd", { "data-key": "usage" }, usageText(s.usage)),
      h("dt", {}, "Last activity"),
      h("dd", {}, clock(s.lastActivityMs))
    ));
  };
  let historyProblem = null;
  const drawTimeline = (view2) => {
    const live2 = view2?.turns ?? [];
    const past = view2?.history?.turns ?? [];
    const turns = mergeTurns(past, live2);
    const stored2 = new Set(past);
    const fromStore = turns.filter((t) => stored2.has(t));
    rebuild(
      timeline,
      historyProblem === null ? null : h("p", { class: "error" }, `The earlier turns could not be read: ${historyProblem}`),
      fromStore.length > 0 ? h(
        "p",
        { class: "sub history-note" },
        "The groups marked “from the store” are read from the session's archive: the hook changes of those turns are not stored, so they do not show (a user text a hook replaced, a rewritten tool call and what changed in a model request do). Turns run while this page is open show every change."
      ) : null,
      view2 && view2.droppedTurns + (view2.history?.droppedTurns ?? 0) > 0 ? h("p", { class: "sub" }, `${view2.droppedTurns + (view2.history?.droppedTurns ?? 0)} older groups not shown.`) : null,
      turns.length === 0 ? h("p", { class: "empty" }, view2?.history ? "Nothing has happened in this session yet. Events show here as they happen." : historyProblem === null ? "Reading the session's earlier turns…" : "No event seen yet. Events show here as they happen.") : turns.map((t, i) => turnSection(key, t, i, stored2.has(t)))
    );
  };
  const drawApprovals = () => {
    const mine = approvalsOf(app2, key);
    rebuild(pending, mine.length === 0 ? null : [h("h3", {}, "Waiting for you"), ...mine.map((a) => approvalCard(app2, a, false))]);
  };
  const draw = () => {
    const view2 = app2.store.sessions.get(key);
    drawStatus(view2);
    drawApprovals();
    drawTimeline(view2);
  };
  draw();
  readHistory(app2, key).then(
    (history) => app2.store.history(key, history),
    (error) => {
      historyProblem = errorText(error);
      drawTimeline(app2.store.sessions.get(key));
    }
  );
  app2.api.session(key, 0, 1).then((d) => app2.store.pending(key, d.pendingApprovals, d.approvals), () => void 0);
  return {
    element,
    title: `Session ${key}`,
    update: (changes2) => {
      const view2 = app2.store.sessions.get(key);
      if (changes2.some((c) => c.kind === "sessions")) drawStatus(view2);
      if (changes2.some((c) => c.kind === "approvals")) drawApprovals();
      if (changes2.some((c) => c.kind === "timeline" && c.session === key)) drawTimeline(view2);
    }
  };
}

// src/main.ts
function byId(id) {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page lacks #${id}`);
  return found;
}
var main = byId("view");
var connection = byId("connection");
var announcer = byId("announcer");
var forget = byId("forget");
var approvalCount = byId("approval-count");
var nav = byId("nav");
var whoami = byId("whoami");
var NOBODY = {
  tenant: "default",
  principal: "",
  role: "client",
  answersApprovals: false,
  admin: false,
  authenticated: true
};
var api = new Api(storedToken());
var store = new Store();
var app = {
  api,
  store,
  announce: (text2) => {
    replace(announcer, h("p", {}, text2));
  },
  who: NOBODY
};
var view = null;
var changes = [];
var frame = null;
var feed = new Feed(api, store, (state) => showConnection(state));
function showConnection(state) {
  const text2 = {
    connecting: "Connecting…",
    live: "Live",
    retrying: "",
    unauthorized: "Credential refused",
    stopped: "Disconnected"
  };
  connection.dataset["state"] = state.kind;
  connection.textContent = state.kind === "retrying" ? `Disconnected (${state.reason}); retrying in ${Math.round(state.inMs / 1e3)} s` : text2[state.kind];
  if (state.kind === "unauthorized") {
    storeToken(null);
    api.token = null;
    feed.stop();
    askToken("The server no longer accepts this key or token (revoked or expired?). Enter one again.");
  }
}
function flush() {
  frame = null;
  const batch = changes;
  changes = [];
  view?.update(batch);
  const pending = store.approvals.size;
  approvalCount.textContent = pending > 0 ? String(pending) : "";
  approvalCount.setAttribute("aria-label", `${pending} pending`);
  document.title = `${pending > 0 ? `(${pending}) ` : ""}${view?.title ?? "hookline"} · hookline console`;
}
store.subscribe((change) => {
  changes.push(change);
  if (change.kind === "approvals" && change.added) {
    app.announce(`Approval requested: ${change.added.tool ?? "a tool call"} in session ${change.added.session}.`);
  }
  if (frame === null) frame = requestAnimationFrame(flush);
});
function viewFor(hash) {
  const path = hash.replace(/^#\/?/, "").split("/");
  const [first, second] = path;
  if (first === "sessions" && second) return { view: timelineView(app, decodeURIComponent(second)), nav: "sessions" };
  if (first === "approvals") return { view: approvalsView(app), nav: "approvals" };
  if (first === "plugins" && app.who.admin) return { view: pluginsView(app), nav: "plugins" };
  if (first === "gateway" && app.who.admin) return { view: gatewayView(app), nav: "gateway" };
  return { view: sessionsView(app), nav: "sessions" };
}
function route(moveFocus) {
  view?.dispose?.();
  const next = viewFor(location.hash);
  view = next.view;
  replace(main, view.element);
  for (const link of nav.querySelectorAll("a[data-nav]")) {
    if (link.getAttribute("data-nav") === next.nav) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  flush();
  if (moveFocus) main.focus({ preventScroll: false });
}
window.addEventListener("hashchange", () => {
  if (location.hash === "" || location.hash.startsWith("#/")) {
    if (view) route(true);
  }
});
function live(who) {
  app.who = who;
  for (const item2 of nav.querySelectorAll("[data-admin]")) item2.hidden = !who.admin;
  whoami.hidden = !who.authenticated;
  whoami.textContent = `Signed in as ${who.principal}: ${who.role} of ${who.tenant}`;
  nav.hidden = false;
  forget.hidden = api.token === null;
  feed.start();
  route(false);
}
function askToken(problem) {
  view?.dispose?.();
  view = null;
  nav.hidden = true;
  forget.hidden = true;
  whoami.hidden = true;
  app.who = NOBODY;
  const input = h("input", {
    id: "token-input",
    name: "token",
    type: "password",
    autocomplete: "off",
    required: true,
    "aria-describedby": "token-help token-error"
  });
  const error = h("p", { id: "token-error", class: "error", role: "alert" }, problem ?? "");
  const submit = h("button", { type: "submit" }, "Connect");
  const form = h(
    "form",
    { class: "token-form", "aria-labelledby": "token-heading" },
    h("h2", { id: "token-heading" }, "Sign in"),
    h(
      "p",
      { id: "token-help" },
      "This server needs an API key or a token: a key made with ",
      h("code", {}, "hookline keys create"),
      ", a JWT from your identity provider, or the contents of the file given to ",
      h("code", {}, "--token-file"),
      ". The console keeps it for this tab only (session storage), never in a URL or a cookie."
    ),
    h("label", { for: "token-input" }, "API key or token"),
    input,
    submit,
    error
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (token === "") return;
    submit.disabled = true;
    error.textContent = "Checking…";
    api.token = token;
    api.whoami().then(
      (who) => {
        storeToken(token);
        live(who);
      },
      (failure) => {
        api.token = null;
        submit.disabled = false;
        error.textContent = failure instanceof ApiError && failure.unauthorized ? "The server refused this key or token." : errorText(failure);
        input.select();
      }
    );
  });
  replace(main, form);
  document.title = "Sign in · hookline console";
  connection.textContent = "Key or token needed";
  connection.dataset["state"] = "unauthorized";
  input.focus();
}
forget.addEventListener("click", () => {
  storeToken(null);
  api.token = null;
  feed.stop();
  askToken(null);
});
function boot() {
  api.whoami().then(
    (who) => live(who),
    (error) => {
      if (error instanceof ApiError && error.unauthorized) {
        if (api.token !== null) storeToken(null);
        api.token = null;
        askToken(null);
        return;
      }
      connection.textContent = "Unreachable";
      replace(main, h(
        "section",
        { class: "token-form" },
        h("h2", {}, "The server did not answer"),
        h("p", { class: "error" }, errorText(error)),
        h("button", { type: "button", onclick: () => boot() }, "Try again")
      ));
    }
  );
}
boot();
