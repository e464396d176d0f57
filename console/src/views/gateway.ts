// Gateway events as the server emits them (`command:new`, `message:received`,
// `gateway:shutdown`, ...), newest first, with how the producer waited (awaited, queued,
// detached, dropped, bounded), the handler calls of awaited events, and any handler notes.

import { clock, h } from "../dom";
import { rebuild, type App, type View } from "../view";

/** The view. */
export function gatewayView(app: App): View {
  const table = h("div", { class: "scroll", id: "gateway-table" });
  const lag = h("p", { class: "sub", role: "status" });
  const element = h("section", { "aria-labelledby": "gateway-heading" },
    h("h2", { id: "gateway-heading" }, "Gateway events"), lag, table);
  const draw = (): void => {
    lag.textContent = app.store.missed > 0
      ? `The server skipped ${app.store.missed} events for this page (it read too slowly).`
      : "";
    const entries = [...app.store.gateway].reverse();
    if (entries.length === 0) {
      rebuild(table, h("p", { class: "empty" }, "No gateway event since this page opened."));
      return;
    }
    rebuild(table, h("table", { class: "gateway" },
      h("caption", { class: "visually-hidden" }, "Gateway events, newest first"),
      h("thead", {}, h("tr", {}, ...["Time", "Event", "Wait", "Handler calls", "Session", "Notes"]
        .map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...entries.map((e) => h("tr", { "data-key-event": e.key },
        h("td", {}, clock(e.at)),
        h("th", { scope: "row", class: "mono" }, e.key),
        h("td", {}, e.wait ? h("span", { class: `badge wait-${e.wait}` }, e.wait) : "–"),
        h("td", { class: "num" }, e.calls ?? "–"),
        h("td", { class: "mono" }, e.session
          ? h("a", { href: `#/sessions/${encodeURIComponent(e.session)}` }, e.session) : "gateway"),
        h("td", {}, e.notes.length === 0 ? "–" : h("ul", { class: "notes" }, ...e.notes.map((n) => h("li", {}, n)))))))));
  };
  draw();
  return {
    element,
    title: "Gateway events",
    update: (changes) => {
      if (changes.some((c) => c.kind === "gateway" || c.kind === "lagged")) draw();
    },
  };
}
