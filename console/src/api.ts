// The console's one door to the server: every request carries `Authorization: Bearer <token>`
// when a credential (an API key, a JWT or the server's token) is known. The token lives in sessionStorage only (this tab, until it closes):
// never in a URL, never in a cookie (docs/console.md, "Auth and safety").

import type { ArchivePage } from "./history";
import { isObject, type PluginsView, type ServerApproval, type SessionDetail, type SessionStatus, type WhoAmI } from "./model";

const TOKEN_KEY = "hookline.token";

/** How long one request may take before the console gives up on it. */
const REQUEST_TIMEOUT_MS = 30_000;

/** An answer other than 2xx, with the server's error code and sentence. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** Whether the server refused the token (or wants one). */
  get unauthorized(): boolean {
    return this.status === 401;
  }
}

/** The token this tab keeps, if any. */
export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

/** Keeps `token` for this tab (null forgets it). */
export function storeToken(token: string | null): void {
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // Storage refused (a private window with storage off): the token lives in memory only.
  }
}

/** The API, as one client with one token. */
export class Api {
  constructor(public token: string | null) {}

  /** Headers for a request; `extra` added. */
  headers(extra: Record<string, string> = {}): Headers {
    const headers = new Headers(extra);
    if (this.token) headers.set("Authorization", `Bearer ${this.token}`);
    return headers;
  }

  /** A request answered with JSON. */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.send(method, path, body);
    return (await response.json()) as T;
  }

  /** A request (with `extra` headers); rejects with [`ApiError`] on a status other than 2xx. */
  async send(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    extra: Record<string, string> = {},
  ): Promise<Response> {
    const headers = this.headers(body === undefined ? extra : { ...extra, "Content-Type": "application/json" });
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      cache: "no-store",
      credentials: "omit",
    });
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  /**
   * `GET /v1/whoami`: who the credential names and what it may use. A server without the route
   * (older than issue 48) has one admin token: the caller may use everything.
   */
  async whoami(): Promise<WhoAmI> {
    try {
      return await this.json<WhoAmI>("GET", "/v1/whoami");
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        return { tenant: "default", principal: "token", role: "admin", answersApprovals: true, admin: true, authenticated: true };
      }
      throw error;
    }
  }

  /** `GET /v1/sessions`. */
  async sessions(): Promise<SessionStatus[]> {
    return (await this.json<{ sessions: SessionStatus[] }>("GET", "/v1/sessions")).sessions;
  }

  /** `GET /v1/sessions/{id}` with the first `limit` records. */
  session(key: string, offset = 0, limit = 100): Promise<SessionDetail> {
    return this.json("GET", `/v1/sessions/${encodeURIComponent(key)}?offset=${offset}&limit=${limit}`);
  }

  /** `GET /v1/sessions/{id}/archive`: a page of the active session's stored archive. */
  archive(key: string, offset = 0, limit = 1000): Promise<ArchivePage> {
    return this.json("GET", `/v1/sessions/${encodeURIComponent(key)}/archive?offset=${offset}&limit=${limit}`);
  }

  /** `GET /v1/approvals`: every approval the server waits for, in full. */
  async approvals(): Promise<ServerApproval[]> {
    return (await this.json<{ approvals: ServerApproval[] }>("GET", "/v1/approvals")).approvals;
  }

  /** `POST /v1/sessions`. */
  open(workspace: string | null): Promise<SessionStatus> {
    return this.json("POST", "/v1/sessions", workspace ? { workspace } : {});
  }

  /** `DELETE /v1/sessions/{id}`. */
  async close(key: string): Promise<void> {
    await this.send("DELETE", `/v1/sessions/${encodeURIComponent(key)}`);
  }

  /**
   * `POST /v1/sessions/{id}/turns` (JSON: answers when the turn ends), with a fresh
   * `Idempotency-Key`: the same turn sent again with it runs once (docs/serve.md).
   */
  async turn(key: string, text: string, idempotencyKey: string = freshKey()): Promise<void> {
    const path = `/v1/sessions/${encodeURIComponent(key)}/turns`;
    await this.send("POST", path, { text }, undefined, { "Idempotency-Key": idempotencyKey });
  }

  /** `POST /v1/sessions/{id}/approvals/{callId}`. */
  async answer(key: string, callId: string, decision: "allow" | "deny"): Promise<void> {
    const path = `/v1/sessions/${encodeURIComponent(key)}/approvals/${encodeURIComponent(callId)}`;
    await this.send("POST", path, { decision });
  }

  /** `GET /v1/plugins`. */
  async plugins(): Promise<PluginsView> {
    const raw = await this.json<unknown>("GET", "/v1/plugins");
    // `hookline hooks list --json` prints a bare array; the server wraps it with its notes.
    if (Array.isArray(raw)) return { plugins: raw, inProcess: [], loadNotes: [] };
    const view = isObject(raw) ? raw : {};
    return {
      plugins: Array.isArray(view["plugins"]) ? (view["plugins"] as PluginsView["plugins"]) : [],
      inProcess: Array.isArray(view["inProcess"]) ? (view["inProcess"] as PluginsView["inProcess"]) : [],
      loadNotes: Array.isArray(view["loadNotes"]) ? (view["loadNotes"] as string[]) : [],
    };
  }

  /** `GET /metrics` (Prometheus text). */
  async metrics(): Promise<string> {
    return (await this.send("GET", "/metrics")).text();
  }
}

/**
 * A fresh idempotency key: 128 random bits in hex. `crypto.getRandomValues`, not `randomUUID`,
 * which a page served over plain HTTP from another host does not have.
 */
export function freshKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function errorOf(response: Response): Promise<ApiError> {
  let code = `http-${response.status}`;
  let message = `The server answered ${response.status} ${response.statusText}.`;
  try {
    const body: unknown = await response.json();
    const error = isObject(body) ? body["error"] : undefined;
    if (isObject(error)) {
      if (typeof error["code"] === "string") code = error["code"];
      if (typeof error["message"] === "string") message = error["message"];
    }
  } catch {
    // Not the JSON error shape: keep the status line.
  }
  return new ApiError(response.status, code, message);
}
