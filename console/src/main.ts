// The hookline operator console: a single page `hookline serve` serves at `/` (docs/console.md).
// Boot: ask for an API key or a token when the server wants one, learn who it names
// (`GET /v1/whoami`), open the live feed, show the view the URL's fragment names (#/sessions,
// #/sessions/KEY, #/approvals, and for admins #/plugins, #/gateway).

import { Api, ApiError, storeToken, storedToken } from "./api";
import { h, replace } from "./dom";
import { Feed, type FeedState } from "./feed";
import type { WhoAmI } from "./model";
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
const whoami = byId<HTMLElement>("whoami");

/** Until the server says who the credential names, the console offers nothing an admin alone may use. */
const NOBODY: WhoAmI = {
  tenant: "default", principal: "", role: "client", answersApprovals: false, admin: false, authenticated: true,
};

const api = new Api(storedToken());
const store = new Store();
const app: App = {
  api,
  store,
  announce: (text) => {
    // A fresh node each time, so the same sentence twice is read twice.
    replace(announcer, h("p", {}, text));
  },
  who: NOBODY,
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
    unauthorized: "Credential refused",
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
    askToken("The server no longer accepts this key or token (revoked or expired?). Enter one again.");
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
  // Plugins and gateway-wide events are for admins: others get the sessions, not a 403.
  if (first === "plugins" && app.who.admin) return { view: pluginsView(app), nav: "plugins" };
  if (first === "gateway" && app.who.admin) return { view: gatewayView(app), nav: "gateway" };
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

function live(who: WhoAmI): void {
  app.who = who;
  for (const item of nav.querySelectorAll<HTMLElement>("[data-admin]")) item.hidden = !who.admin;
  whoami.hidden = !who.authenticated;
  whoami.textContent = `Signed in as ${who.principal}: ${who.role} of ${who.tenant}`;
  nav.hidden = false;
  forget.hidden = api.token === null;
  feed.start();
  route(false);
}

/** The credential form; `problem` says why it is shown again. */
function askToken(problem: string | null): void {
  view?.dispose?.();
  view = null;
  nav.hidden = true;
  forget.hidden = true;
  whoami.hidden = true;
  app.who = NOBODY;
  const input = h("input", {
    id: "token-input", name: "token", type: "password", autocomplete: "off", required: true,
    "aria-describedby": "token-help token-error",
  });
  const error = h("p", { id: "token-error", class: "error", role: "alert" }, problem ?? "");
  const submit = h("button", { type: "submit" }, "Connect");
  const form = h("form", { class: "token-form", "aria-labelledby": "token-heading" },
    h("h2", { id: "token-heading" }, "Sign in"),
    h("p", { id: "token-help" },
      "This server needs an API key or a token: a key made with ",
      h("code", {}, "hookline keys create"),
      ", a JWT from your identity provider, or the contents of the file given to ",
      h("code", {}, "--token-file"),
      ". The console keeps it for this tab only (session storage), never in a URL or a cookie."),
    h("label", { for: "token-input" }, "API key or token"),
    input, submit, error);
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
      (failure: unknown) => {
        api.token = null;
        submit.disabled = false;
        error.textContent = failure instanceof ApiError && failure.unauthorized
          ? "The server refused this key or token."
          : errorText(failure);
        input.select();
      },
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

function boot(): void {
  api.whoami().then(
    (who) => live(who),
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
