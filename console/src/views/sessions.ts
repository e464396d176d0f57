// The sessions view: every session the server runs (and the last closed ones), with its
// workspace, state, turns and last activity; a form to open one.

import { button, clock, h } from "../dom";
import type { SessionView } from "../state";
import { activityLabel, errorText, rebuild, type App, type View } from "../view";

/** Sessions, open ones first, most recently active first. */
export function ordered(sessions: Iterable<SessionView>): SessionView[] {
  return [...sessions].sort((a, b) => {
    const closed = Number(a.status.activity === "closed") - Number(b.status.activity === "closed");
    return closed !== 0 ? closed : b.status.lastActivityMs - a.status.lastActivityMs;
  });
}

/** The view. */
export function sessionsView(app: App): View {
  const table = h("div", { class: "scroll", id: "sessions-table" });
  const message = h("p", { class: "form-message", role: "status" });
  const workspace = h("input", {
    id: "open-workspace", name: "workspace", type: "text", autocomplete: "off",
    placeholder: "sub/dir (optional)", spellcheck: "false",
  });
  const form = h(
    "form",
    { class: "inline-form", "aria-label": "Open a session" },
    h("label", { for: "open-workspace" }, "Workspace"),
    workspace,
    h("button", { type: "submit" }, "Open session"),
    message,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    message.textContent = "Opening…";
    app.api.open(workspace.value.trim() || null).then(
      (status) => {
        app.store.status(status);
        message.textContent = `Opened ${status.key}.`;
        workspace.value = "";
      },
      (error: unknown) => {
        message.textContent = errorText(error);
      },
    );
  });
  const element = h("section", { "aria-labelledby": "sessions-heading" },
    h("h2", { id: "sessions-heading" }, "Sessions"), form, table);
  const draw = (): void => {
    const rows = ordered(app.store.sessions.values());
    if (rows.length === 0) {
      rebuild(table, h("p", { class: "empty" }, "No session yet. Open one here or through the API."));
      return;
    }
    rebuild(table, h("table", { class: "sessions" },
      h("caption", { class: "visually-hidden" }, "Sessions"),
      h("thead", {}, h("tr", {},
        ...["Session", "Workspace", "State", "Approvals", "Turns", "Last activity", ""].map((t) =>
          h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...rows.map((view) => row(app, view)))));
  };
  draw();
  return {
    element,
    title: "Sessions",
    update: (changes) => {
      if (changes.some((c) => c.kind === "sessions" || c.kind === "timeline")) draw();
    },
  };
}

function row(app: App, view: SessionView): HTMLTableRowElement {
  const s = view.status;
  const key = s.key;
  return h("tr", { "data-session": key, class: `activity-${s.activity}` },
    h("th", { scope: "row" },
      h("a", { href: `#/sessions/${encodeURIComponent(key)}`, "data-key": `open:${key}`, class: "mono" }, key),
      s.sessionId && s.sessionId !== key ? h("div", { class: "sub mono" }, `active: ${s.sessionId}`) : null),
    h("td", { class: "mono" }, s.workspace || "–"),
    h("td", {}, h("span", { class: `badge state-${s.activity}` }, activityLabel(s.activity))),
    h("td", {}, s.approvalMode || "–"),
    h("td", { class: "num" }, s.turns),
    h("td", {}, h("time", { datetime: new Date(s.lastActivityMs || Date.now()).toISOString() }, clock(s.lastActivityMs))),
    h("td", {}, s.activity === "closed" ? null : button("Close", () => {
      app.api.close(key).catch((error: unknown) => app.announce(`Could not close ${key}: ${errorText(error)}`));
    }, { "data-key": `close:${key}`, "aria-label": `Close session ${key}`, class: "quiet" })));
}
