// What every view shares: the app context, and a rebuild that keeps what the operator was doing
// (the focused control, the open <details>) when live events redraw part of the page.

import type { Api } from "./api";
import type { WhoAmI } from "./model";
import { replace, type Child } from "./dom";
import type { Change, Store } from "./state";

/** What a view may use. */
export interface App {
  api: Api;
  store: Store;
  /** Says `text` to screen readers (a polite live region). */
  announce(text: string): void;
  /** Who the console is signed in as: views offer only what it may use. */
  who: WhoAmI;
}

/** A view: built once when the operator opens it, updated on every change after that. */
export interface View {
  element: HTMLElement;
  /** The page title part. */
  title: string;
  /** Redraws what `changes` touched (coalesced: at most once a frame). */
  update(changes: Change[]): void;
  /** Called when the operator leaves the view. */
  dispose?(): void;
}

/**
 * Replaces `container`'s children, then puts focus back on the control with the same `data-key`
 * and reopens the `<details>` that were open, so a redraw never moves the operator.
 */
export function rebuild(container: Element, ...children: Child[]): void {
  const active = document.activeElement;
  const focusKey = active && container.contains(active) ? active.getAttribute("data-key") : null;
  const open = new Set<string>();
  for (const details of container.querySelectorAll("details[data-key]")) {
    if ((details as HTMLDetailsElement).open) open.add(details.getAttribute("data-key") ?? "");
  }
  replace(container, ...children);
  for (const details of container.querySelectorAll("details[data-key]")) {
    if (open.has(details.getAttribute("data-key") ?? "")) (details as HTMLDetailsElement).open = true;
  }
  if (focusKey !== null) {
    const again = container.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
    if (again instanceof HTMLElement) again.focus({ preventScroll: true });
  }
}

/** The label of an activity, as people say it. */
export function activityLabel(activity: string): string {
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

/** The message of an error, as a sentence. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
