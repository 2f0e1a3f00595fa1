// The console shell: sign-in, navigation between pages (hash routes), and each page's lifetime.

import { api, live, session } from "/console/api.js";
import { h, fill, field, toast } from "/console/dom.js";
import * as endpoints from "/console/page-endpoints.js";
import * as runs from "/console/page-runs.js";
import * as schedules from "/console/page-schedules.js";
import * as events from "/console/page-events.js";
import * as overview from "/console/page-overview.js";

const APP_PAGES = [
  ["overview", "Overview", overview.overview],
  ["endpoints", "Endpoints", endpoints.render],
  ["schedules", "Schedules", schedules.render],
  ["runs", "Runs", runs.runs],
  ["dead-letters", "Dead letters", runs.deadLetters],
  ["events", "Events", events.render],
  ["usage", "Usage", overview.usage],
  ["notifications", "Notifications", overview.notifications],
];
const ADMIN_PAGES = [["apps", "Apps", overview.apps]];

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const signOut = document.getElementById("sign-out");
let generation = 0;

function pages() {
  return session.role() === "admin" ? ADMIN_PAGES : APP_PAGES;
}

function route() {
  const [path, query] = (window.location.hash.replace(/^#\/?/, "") || "").split("?");
  const [page, id] = path.split("/");
  return { page, id: id ? decodeURIComponent(id) : null, params: new URLSearchParams(query || "") };
}

/** "app" or "admin" for a key the API accepts, as GET /v1/account tells it. */
async function roleOf(key) {
  const account = await api("GET", "/v1/account", { key });
  if (account && (account.role === "app" || account.role === "admin")) return account.role;
  throw new Error("unexpected answer to GET /v1/account");
}

function showSignIn(message) {
  live(null);
  nav.hidden = true;
  signOut.hidden = true;
  const input = h("input", { id: "api-key", type: "password", autocomplete: "off", required: true, spellcheck: "false" });
  const error = h("p", { class: "error", role: "alert" }, message || "");
  const form = h("form", { class: "signin panel", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "Sign in to EdgeCron"),
    h("p", {}, "Paste an App API key (ek_…), or the admin key to manage Apps. It is kept in this tab's session storage only."),
    field("API key", input),
    h("p", {}, h("button", { type: "submit", class: "primary", id: "sign-in" }, "Sign in")),
    error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    try {
      session.save(key, await roleOf(key));
    } catch (err) {
      fill(error, err.status === 401 ? "That key was refused: it is neither an App key nor the admin key." : err.message);
      return;
    }
    input.value = "";
    window.location.hash = `#/${pages()[0][0]}`;
    show();
  });
  fill(main, form);
  input.focus();
}

function show() {
  generation += 1;
  const mine = generation;
  if (!session.key()) { showSignIn(); return; }
  const { page, id, params } = route();
  const list = pages();
  const entry = list.find(([name]) => name === page) || list[0];
  fill(nav, list.map(([name, label]) =>
    h("a", { href: `#/${name}`, "aria-current": name === entry[0] ? "page" : null }, label)));
  nav.hidden = false;
  signOut.hidden = false;
  document.title = `${entry[1]} · EdgeCron console`;
  const ctx = { id, params, alive: () => mine === generation, navigate: (hash) => { window.location.hash = hash; } };
  fill(main);
  live(null);
  Promise.resolve(entry[2](main, ctx)).catch((err) => {
    if (err && err.status === 401) { session.clear(); showSignIn("That key was refused; sign in again."); return; }
    toast(err && err.message ? err.message : String(err), true);
  });
}

signOut.addEventListener("click", () => { session.clear(); window.location.hash = ""; show(); });
window.addEventListener("hashchange", show);
show();
