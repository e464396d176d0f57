// Pending approvals: each tool call an approval policy put to the operator, with Allow and Deny
// buttons that answer through `POST /v1/sessions/{id}/approvals/{callId}`. An approval leaves
// the list when the server reports the decision (the `approval` event), its timeout, or the
// turn's end: the list shows what the server waits for, not what the page guessed.

import { ApiError } from "../api";
import { button, clock, h, json } from "../dom";
import type { Approval } from "../state";
import { errorText, rebuild, type App, type View } from "../view";

/** Sends the operator's answer. */
export function answer(app: App, approval: Approval, decision: "allow" | "deny"): void {
  if (approval.state === "sending") return;
  app.store.answering(approval, "sending");
  app.api.answer(approval.session, approval.callId, decision).then(
    () => {
      app.announce(`${decision === "allow" ? "Allowed" : "Denied"} ${approval.tool ?? approval.callId}.`);
      // The `approval` event removes it; until then it shows as sent.
    },
    (error: unknown) => {
      if (error instanceof ApiError && error.status === 404) {
        // Nothing waits for it any more: answered elsewhere, timed out, or the turn ended.
        app.store.settled(approval.session, approval.callId);
        app.announce(`Nothing waits for ${approval.callId} any more.`);
        return;
      }
      app.store.answering(approval, "failed", errorText(error));
    },
  );
}

/** One approval, as a card with its two buttons. */
export function approvalCard(app: App, approval: Approval, showSession: boolean): HTMLElement {
  const id = `${approval.session}:${approval.callId}`;
  const c = approval.classification;
  const headingId = `approval-${cssId(id)}`;
  const sending = approval.state === "sending";
  const deadline = deadlineOf(approval);
  return h("article", { class: "approval", "aria-labelledby": headingId, "data-call": approval.callId },
    h("h3", { id: headingId },
      h("span", { class: "mono" }, approval.tool ?? "a tool call"),
      " ",
      c ? h("span", { class: `badge risk-${c.risk}` }, `${c.risk} · ${c.authority}`) : null),
    c ? h("p", { class: "summary" }, c.summary) : null,
    h("dl", { class: "facts" },
      showSession ? [h("dt", {}, "Session"), h("dd", {},
        h("a", { href: `#/sessions/${encodeURIComponent(approval.session)}`, class: "mono" }, approval.session))] : null,
      h("dt", {}, "Call"), h("dd", { class: "mono" }, approval.callId),
      deadline !== null ? [h("dt", {}, "Denied unless answered by"), h("dd", {}, clock(deadline))] : null),
    approval.arguments !== null && approval.arguments !== undefined
      ? h("pre", { class: "code", "aria-label": "Arguments" }, json(approval.arguments))
      : null,
    app.who.answersApprovals ? h("div", { class: "actions" },
      button("Allow", () => answer(app, approval, "allow"), {
        class: "allow", "data-key": `allow:${id}`, disabled: sending,
        "aria-label": `Allow ${approval.tool ?? "call"} ${approval.callId}`,
      }),
      button("Deny", () => answer(app, approval, "deny"), {
        class: "deny", "data-key": `deny:${id}`, disabled: sending,
        "aria-label": `Deny ${approval.tool ?? "call"} ${approval.callId}`,
      }),
      sending ? h("span", { class: "sub" }, "Sending…") : null,
      approval.error ? h("span", { class: "error", role: "alert" }, approval.error) : null)
      // The tenant's setting keeps this principal from answering: say who does, offer nothing.
      : h("p", { class: "sub" }, `An operator of ${app.who.tenant} answers this approval.`));
}

/** When the approval is denied unanswered: as the server listed it, else from the event. */
function deadlineOf(approval: Approval): number | null {
  if (approval.deadlineMs !== null) return approval.deadlineMs;
  return approval.timeoutMs === null ? null : approval.receivedAt + approval.timeoutMs;
}

function cssId(text: string): string {
  return text.replace(/[^a-zA-Z0-9_-]/g, "_");
}

/** The approvals of `session` (or all), oldest first. */
export function approvalsOf(app: App, session: string | null): Approval[] {
  return [...app.store.approvals.values()]
    .filter((a) => session === null || a.session === session)
    .sort((a, b) => a.receivedAt - b.receivedAt);
}

/** The view. */
export function approvalsView(app: App): View {
  const list = h("div", { id: "approvals-list" });
  const element = h("section", { "aria-labelledby": "approvals-heading" },
    h("h2", { id: "approvals-heading" }, "Pending approvals"), list);
  const draw = (): void => {
    const pending = approvalsOf(app, null);
    rebuild(list, pending.length === 0
      ? h("p", { class: "empty" }, "Nothing waits for an operator.")
      : pending.map((a) => approvalCard(app, a, true)));
  };
  draw();
  return {
    element,
    title: "Approvals",
    update: (changes) => {
      if (changes.some((c) => c.kind === "approvals")) draw();
    },
  };
}
