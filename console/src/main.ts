// The hookline operator console: a single page `hookline serve` serves at `/` (docs/console.md).
// Boot: ask for the token when the server wants one, open the live feed, show the view the URL's
// fragment names (#/sessions, #/sessions/KEY, #/approvals, #/plugins, #/gateway).

import { Api, ApiError, storeToken, storedToken } from "./api";
import { h, replace } from "./dom";
import { Feed, type FeedState } from "./feed";
import { Store, type Change } from "./state";
import { errorText, type App, type View } from "./view";
import { approvalsView } from "./views/approvals";
import { gatewayView } from "./views/gateway";
import { pluginsView } from "./views/plugins";
import { sessionsView } from "./views/sessions";
import { timelineView } from "./views/timeline";

function byId<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page lacks #${id}`);
  return found as T;
}

const main = byId<HTMLElement>("view");
const connection = byId<HTMLElement>("connection");
const announcer = byId<HTMLElement>("announcer");
const forget = byId<HTMLButtonElement>("forget");
const approvalCount = byId<HTMLElement>("approval-count");
const nav = byId<HTMLElement>("nav");

const api = new Api(storedToken());
const store = new Store();
const app: App = {
  api,
  store,
  announce: (text) => {
    // A fresh node each time, so the same sentence twice is read twice.
    replace(announcer, h("p", {}, text));
  },
};

let view: View | null = null;
let changes: Change[] = [];
let frame: number | null = null;

const feed = new Feed(api, store, (state) => showConnection(state));

function showConnection(state: FeedState): void {
  const text: Record<FeedState["kind"], string> = {
    connecting: "Connecting…",
    live: "Live",
    retrying: "",
    unauthorized: "Token refused",
    stopped: "Disconnected",
  };
  connection.dataset["state"] = state.kind;
  connection.textContent = state.kind === "retrying"
    ? `Disconnected (${state.reason}); retrying in ${Math.round(state.inMs / 1000)} s`
    : text[state.kind];
  if (state.kind === "unauthorized") {
    storeToken(null);
    api.token = null;
    feed.stop();
    askToken("The server no longer accepts the token. Enter it again.");
  }
}

function flush(): void {
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

/** The view the fragment names. */
function viewFor(hash: string): { view: View; nav: string } {
  const path = hash.replace(/^#\/?/, "").split("/");
  const [first, second] = path;
  if (first === "sessions" && second) return { view: timelineView(app, decodeURIComponent(second)), nav: "sessions" };
  if (first === "approvals") return { view: approvalsView(app), nav: "approvals" };
  if (first === "plugins") return { view: pluginsView(app), nav: "plugins" };
  if (first === "gateway") return { view: gatewayView(app), nav: "gateway" };
  return { view: sessionsView(app), nav: "sessions" };
}

function route(moveFocus: boolean): void {
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
  // In-page anchors (the skip link) are not views.
  if (location.hash === "" || location.hash.startsWith("#/")) {
    if (view) route(true);
  }
});

function live(): void {
  nav.hidden = false;
  forget.hidden = api.token === null;
  feed.start();
  route(false);
}

/** The token form; `problem` says why it is shown again. */
function askToken(problem: string | null): void {
  view?.dispose?.();
  view = null;
  nav.hidden = true;
  forget.hidden = true;
  const input = h("input", {
    id: "token-input", name: "token", type: "password", autocomplete: "off", required: true,
    "aria-describedby": "token-help token-error",
  });
  const error = h("p", { id: "token-error", class: "error", role: "alert" }, problem ?? "");
  const submit = h("button", { type: "submit" }, "Connect");
  const form = h("form", { class: "token-form", "aria-labelledby": "token-heading" },
    h("h2", { id: "token-heading" }, "Access token"),
    h("p", { id: "token-help" },
      "This server needs its token: the contents of the file given to ",
      h("code", {}, "--token-file"),
      ". The console keeps it for this tab only (session storage), never in a URL or a cookie."),
    h("label", { for: "token-input" }, "Token"),
    input, submit, error);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (token === "") return;
    submit.disabled = true;
    error.textContent = "Checking…";
    api.token = token;
    api.sessions().then(
      () => {
        storeToken(token);
        live();
      },
      (failure: unknown) => {
        api.token = null;
        submit.disabled = false;
        error.textContent = failure instanceof ApiError && failure.unauthorized
          ? "The server refused this token."
          : errorText(failure);
        input.select();
      },
    );
  });
  replace(main, form);
  document.title = "Access token · hookline console";
  connection.textContent = "Token needed";
  connection.dataset["state"] = "unauthorized";
  input.focus();
}

forget.addEventListener("click", () => {
  storeToken(null);
  api.token = null;
  feed.stop();
  askToken(null);
});

function boot(): void {
  api.sessions().then(
    () => live(),
    (error: unknown) => {
      if (error instanceof ApiError && error.unauthorized) {
        if (api.token !== null) storeToken(null);
        api.token = null;
        askToken(null);
        return;
      }
      connection.textContent = "Unreachable";
      replace(main, h("section", { class: "token-form" },
        h("h2", {}, "The server did not answer"),
        h("p", { class: "error" }, errorText(error)),
        h("button", { type: "button", onclick: () => boot() }, "Try again")));
    },
  );
}

boot();
