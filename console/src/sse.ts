// Server-sent events read from a fetch() body. EventSource cannot send an Authorization header,
// so the console reads `/v1/events` with fetch and parses the stream here (the WHATWG "event
// stream interpretation": fields `event`, `data`, `id`; comment lines start with a colon).

/** One dispatched event. */
export interface SseMessage {
  event: string;
  data: string;
}

/** The longest line kept; a longer one (a broken server) is cut, never grown without bound. */
const MAX_LINE = 4 * 1024 * 1024;

/** Incremental parser: feed it text chunks as they arrive; it returns the complete events. */
export class SseParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];
  private skipLf = false;

  /** Parses `chunk`; returns the events it completed. */
  push(chunk: string): SseMessage[] {
    const out: SseMessage[] = [];
    let text = this.buffer + chunk;
    if (this.skipLf && text.startsWith("\n")) text = text.slice(1);
    this.skipLf = false;
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(text.slice(start, i), out);
      if (c === 13) {
        if (i + 1 === text.length) this.skipLf = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.buffer = text.slice(start);
    if (this.buffer.length > MAX_LINE) this.buffer = "";
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
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
}

/**
 * Reads `body` to its end, handing each event to `onMessage`. Resolves when the stream ends;
 * rejects when reading fails (the connection dropped) or `signal` aborts.
 */
export async function readEvents(
  body: ReadableStream<Uint8Array>,
  onMessage: (message: SseMessage) => void,
): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream() as ReadableWritablePair<string, Uint8Array>).getReader();
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      for (const message of parser.push(value)) onMessage(message);
    }
  } finally {
    reader.releaseLock();
  }
}
