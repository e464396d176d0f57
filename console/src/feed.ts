// The live feed: `GET /v1/events` read with fetch() and a ReadableStream (EventSource cannot
// send an Authorization header). No polling: the page changes only when the server says
// something. When the connection drops, it reconnects after a growing, bounded delay and
// re-reads the session list and the waiting approvals once, so nothing that changed meanwhile
// stays wrong (and approvals asked before the page opened show).

import { ApiError, type Api } from "./api";
import { isObject, type FeedItem, type SessionStatus } from "./model";
import { readEvents } from "./sse";
import type { Store } from "./state";

/** The connection's state, for the status line. */
export type FeedState =
  | { kind: "connecting" }
  | { kind: "live" }
  | { kind: "retrying"; inMs: number; reason: string }
  | { kind: "unauthorized" }
  | { kind: "stopped" };

const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;

/** Keeps one `/v1/events` stream open. */
export class Feed {
  private abort: AbortController | null = null;
  private retryMs = FIRST_RETRY_MS;
  private timer: number | null = null;

  constructor(
    private readonly api: Api,
    private readonly store: Store,
    private readonly onState: (state: FeedState) => void,
  ) {}

  /** Opens the stream (once). */
  start(): void {
    if (this.abort) return;
    void this.run();
  }

  /** Closes the stream and cancels any retry. */
  stop(): void {
    this.abort?.abort();
    this.abort = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.onState({ kind: "stopped" });
  }

  private async run(): Promise<void> {
    const abort = new AbortController();
    this.abort = abort;
    this.onState({ kind: "connecting" });
    try {
      const response = await fetch("/v1/events", {
        headers: this.api.headers({ Accept: "text/event-stream" }),
        signal: abort.signal,
        cache: "no-store",
        credentials: "omit",
      });
      if (response.status === 401) {
        this.abort = null;
        this.onState({ kind: "unauthorized" });
        return;
      }
      if (!response.ok || !response.body) throw new Error(`the server answered ${response.status}`);
      // Subscribed first, then the list: a change between the two is in the stream.
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

  private retry(reason: string): void {
    this.abort = null;
    const inMs = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    this.onState({ kind: "retrying", inMs, reason });
    this.timer = window.setTimeout(() => {
      this.timer = null;
      this.start();
    }, inMs);
  }

  private dispatch(kind: string, data: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    if (!isObject(parsed)) return;
    if (kind === "session") {
      if (typeof parsed["key"] === "string") this.store.status(parsed as unknown as SessionStatus);
    } else if (kind === "lagged") {
      this.store.lagged(typeof parsed["missed"] === "number" ? parsed["missed"] : 0);
    } else if (isObject(parsed["event"]) && typeof parsed["event"]["event"] === "string") {
      const session = typeof parsed["session"] === "string" ? parsed["session"] : null;
      this.store.event({ session, event: parsed["event"] } as FeedItem);
    }
  }
}
