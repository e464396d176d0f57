// A word diff of two texts: what a hook removed and what it added. Longest common subsequence
// over words and the whitespace between them, after trimming the common prefix and suffix; past a
// size bound the middle is shown as one removal and one insertion (bounded time and memory).

import type { PatchOp } from "./model";

/** One run of the diff. */
export interface DiffPart {
  kind: "same" | "removed" | "added";
  text: string;
}

/** The largest table (tokens x tokens) the LCS may use. */
const MAX_CELLS = 250_000;

function tokens(text: string): string[] {
  return text.split(/(\s+)/).filter((t) => t !== "");
}

/** The diff from `before` to `after`, adjacent runs of one kind merged. */
export function diffWords(before: string, after: string): DiffPart[] {
  const a = tokens(before);
  const b = tokens(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  const parts: DiffPart[] = [];
  const push = (kind: DiffPart["kind"], text: string): void => {
    const last = parts[parts.length - 1];
    if (last && last.kind === kind) last.text += text;
    else if (text !== "") parts.push({ kind, text });
  };
  push("same", a.slice(0, head).join(""));
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  for (const part of middle(midA, midB)) push(part.kind, part.text);
  push("same", a.slice(a.length - tail).join(""));
  return regroup(parts);
}

/**
 * Reads better: a change run, with the bare whitespace between its pieces, becomes one removal
 * then one insertion (`password hunter2` -> `[password redacted]`, not four pieces).
 */
function regroup(parts: DiffPart[]): DiffPart[] {
  const out: DiffPart[] = [];
  let removed = "";
  let added = "";
  const flush = (): void => {
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
      flush();
      out.push(part);
    }
  });
  flush();
  return out;
}

function middle(a: string[], b: string[]): DiffPart[] {
  if (a.length * b.length > MAX_CELLS) {
    return [
      { kind: "removed", text: a.join("") },
      { kind: "added", text: b.join("") },
    ];
  }
  // lcs[i][j]: the LCS length of a[i..] and b[j..], in one flat array.
  const w = b.length + 1;
  const lcs = new Uint32Array((a.length + 1) * w);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i * w + j] =
        a[i] === b[j]
          ? (lcs[(i + 1) * w + j + 1] ?? 0) + 1
          : Math.max(lcs[(i + 1) * w + j] ?? 0, lcs[i * w + j + 1] ?? 0);
    }
  }
  const out: DiffPart[] = [];
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

/**
 * The two texts a hook's change shows: strings as they are; objects whose only change is their
 * `text` field (a user message, a tool result, a prompt) by that text; other objects field by
 * field, a text field as its text (so a prompt's new lines read as lines) and the rest as JSON.
 */
export function valueTexts(before: unknown, after: unknown): [string, string] {
  if (isRecord(before) && isRecord(after) && typeof before["text"] === "string" && typeof after["text"] === "string") {
    const rest = (v: Record<string, unknown>): string => JSON.stringify({ ...v, text: null });
    if (rest(before) === rest(after)) return [before["text"], after["text"]];
  }
  return [fields(before), fields(after)];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fields(value: unknown): string {
  if (typeof value === "string") return value;
  if (!isRecord(value)) return JSON.stringify(value, null, 2) ?? String(value);
  return Object.entries(value)
    .map(([key, v]) => {
      if (typeof v === "string") return v.includes("\n") ? `${key}:\n${v}` : `${key}: ${v}`;
      return `${key}: ${JSON.stringify(v, null, 2)}`;
    })
    .join("\n");
}

/** One change a patch makes at `path`: the value before (absent when added), after (absent when
 * removed), or where a moved or copied value came `from`. */
export interface PatchChange {
  path: string;
  before?: unknown;
  after?: unknown;
  from?: string;
}

/**
 * The changes of a `hook-changed` patch. The host tests the old value before each `replace` and
 * `remove`, so a replaced text shows as a word diff from the patch alone.
 */
export function patchChanges(patch: PatchOp[]): PatchChange[] {
  const out: PatchChange[] = [];
  let tested: { path: string; value: unknown } | null = null;
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

/** A value of a patch as text: a string as it is, anything else as JSON; absent as nothing. */
export function patchText(value: unknown): string {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2) ?? String(value);
}
