// The console's shell: sign-in, the session (token in sessionStorage), the header and the
// hash router. Views render into <main> and get an AbortSignal that fires when the user
// navigates away, so a slow answer never lands in the wrong view.

import {ApiError, dropToken, getToken, isAbort, request, setToken, whenUnauthorized} from "./api.js";
import {h, replace} from "./dom.js";
import {errorBox} from "./ui.js";
import {adminView} from "./admin.js";
import {searchView} from "./search.js";
import {entryView} from "./entry.js";
import {graphView} from "./graph.js";
import {listView, overviewView, staleView} from "./overview.js";
import {captureView} from "./write.js";

const main = document.getElementById("main");
const header = document.getElementById("top");
let who = null;              // the whoami answer of the signed-in token
let current = null;          // AbortController of the view on screen
let signInMessage = "";

// ---- session -----------------------------------------------------------------------------------
async function identify(token) {
  try {
    return await request("GET", "/v1/whoami", {token});
  } catch (error) {
    // A service without /v1/whoami still tells the admin token apart by its admin routes.
    if (error instanceof ApiError && error.status === 404) {
      await request("GET", "/v1/workspaces?limit=1", {token});
      return {kind: "admin"};
    }
    throw error;
  }
}

function canWrite() {
  return Boolean(who) && (who.kind === "admin" || who.scope === "write");
}

function signOut(message = "") {
  dropToken();
  who = null;
  signInMessage = message;
  if (location.hash !== "#/signin") location.hash = "#/signin";
  else route();
}

whenUnauthorized((error) => {
  signOut(`The service refused the token (${error.code}): it was revoked, has expired or ` +
          "is unknown. Sign in again.");
});

function home() {
  if (!who) return "#/signin";
  return who.kind === "admin" ? "#/admin" : `#/w/${encodeURIComponent(who.workspace)}/overview`;
}

// ---- sign-in -----------------------------------------------------------------------------------
function signInView() {
  renderHeader(null);
  const input = h("input", {id: "signin-token", type: "password", autocomplete: "off",
                            spellcheck: "false", required: true,
                            placeholder: "admin token, or a workspace token (msw_…)",
                            "aria-label": "token"});
  const status = h("p", {id: "signin-message", class: signInMessage ? "error" : "hint",
                         role: "alert"},
                   signInMessage || "The token stays in this tab (sessionStorage) and is sent " +
                                    "only as the Authorization header to this service.");
  const button = h("button", {id: "signin-submit", type: "submit", class: "primary"}, "Sign in");
  const form = h("form", {id: "signin", class: "card signin", onsubmit: async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    button.disabled = true;
    try {
      who = await identify(token);
      setToken(token);
      signInMessage = "";
      location.hash = home();
    } catch (error) {
      status.className = "error";
      status.textContent = error instanceof ApiError && error.status === 401
        ? `That token is not accepted (${error.code}): unknown, revoked or expired.`
        : `Sign-in failed: ${error.message}`;
      button.disabled = false;
      input.select();
    }
  }},
    h("h1", null, "Mini-Sphere console"),
    h("label", {for: "signin-token"}, "Token"),
    input, button, status);
  replace(main, form);
  input.focus();
}

// ---- header --------------------------------------------------------------------------------------
function renderHeader(workspace, active = "") {
  const items = [];
  if (who && who.kind === "admin") {
    items.push(h("a", {href: "#/admin", class: active === "admin" ? "active" : ""}, "Workspaces"));
  }
  if (workspace) {
    const base = `#/w/${encodeURIComponent(workspace)}`;
    const tabs = [["overview", "Overview"], ["search", "Search"], ["graph", "Graph"],
                  ["stale", "Needs revalidation"]];
    if (canWrite()) tabs.push(["capture", "Capture"]);
    for (const [key, label] of tabs) {
      items.push(h("a", {href: `${base}/${key}`, class: active === key ? "active" : "",
                         "data-tab": key}, label));
    }
  }
  const badge = !who ? null : who.kind === "admin"
    ? h("span", {id: "who", class: "who admin"}, "admin")
    : h("span", {id: "who", class: `who ${who.scope}`},
        `${who.workspace} · ${who.scope}${who.label ? ` · ${who.label}` : ""}`);
  replace(header,
    h("a", {class: "brand", href: home()}, "Mini-Sphere"),
    workspace ? h("span", {class: "ws-name", id: "ws-name"}, workspace) : null,
    h("nav", {"aria-label": "sections"}, items),
    h("span", {class: "spacer"}),
    badge,
    who ? h("button", {id: "signout", type: "button", onclick: () => signOut("Signed out.")},
            "Sign out") : null);
}

// ---- router --------------------------------------------------------------------------------------
function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = raw.split("?");
  return {parts: path.split("/").filter(Boolean).map(decodeURIComponent),
          params: new URLSearchParams(query)};
}

function notAllowed(message) {
  replace(main, h("section", {class: "card"}, h("h2", null, "Not available"),
                  h("p", {class: "error"}, message), h("a", {href: home()}, "Back")));
}

const WORKSPACE_VIEWS = {overview: overviewView, search: searchView, entry: entryView,
                         graph: graphView, stale: staleView, list: listView,
                         capture: captureView};

async function route() {
  if (current) current.abort();
  current = new AbortController();
  const {signal} = current;
  const token = getToken();
  const {parts, params} = parseHash();
  if (!token || parts[0] === "signin") {
    if (token && parts[0] === "signin" && who) { location.hash = home(); return; }
    who = null;
    signInView();
    return;
  }
  if (!who) {
    try {
      who = await identify(token);
    } catch (error) {
      if (isAbort(error) || signal.aborted) return;
      if (!(error instanceof ApiError && error.status === 401)) {
        signInMessage = `Could not reach the service: ${error.message}`;
      }
      signOut(signInMessage || "The token was refused: sign in again.");
      return;
    }
    if (signal.aborted) return;
  }
  if (parts.length === 0) { location.hash = home(); return; }
  let view;
  let ctx = {signal, params, who, canWrite: canWrite(), navigate: (hash) => { location.hash = hash; },
             reload: () => route()};
  if (parts[0] === "admin") {
    renderHeader(null, "admin");
    if (who.kind !== "admin") return notAllowed("The admin view needs the admin token.");
    view = adminView;
  } else if (parts[0] === "w" && parts[1]) {
    const workspace = parts[1];
    const section = parts[2] || "overview";
    renderHeader(workspace, section === "list" ? "overview" : section);
    if (who.kind !== "admin" && who.workspace !== workspace) {
      return notAllowed(`This token belongs to workspace ${who.workspace}.`);
    }
    view = WORKSPACE_VIEWS[section];
    if (!view || (section === "capture" && !ctx.canWrite)) return notAllowed("No such page.");
    ctx = {...ctx, workspace, id: parts[3], base: `#/w/${encodeURIComponent(workspace)}`};
  } else {
    location.hash = home();
    return;
  }
  const section = h("div", {class: "view", "aria-busy": "true"});
  replace(main, section);
  try {
    await view(section, ctx);
    if (!signal.aborted) {
      section.setAttribute("aria-busy", "false");
      performance.mark("console:view-ready");
    }
  } catch (error) {
    if (isAbort(error) || signal.aborted) return;
    if (error instanceof ApiError && error.status === 401) return;     // signed out already
    section.setAttribute("aria-busy", "false");
    section.appendChild(errorBox(error));
  }
}

// Keyboard: "/" jumps to the search box from anywhere outside a text field.
document.addEventListener("keydown", (event) => {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
  const box = document.getElementById("search-query");
  if (box) { event.preventDefault(); box.focus(); box.select(); return; }
  const tab = document.querySelector('a[data-tab="search"]');
  if (tab) { event.preventDefault(); location.hash = tab.getAttribute("href"); }
});

window.addEventListener("hashchange", route);
route();
