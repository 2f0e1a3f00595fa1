// The console's only way to EdgeCron's data: the public HTTP API, with the key from sessionStorage.

const KEY = "edgecron.key";
const ROLE = "edgecron.role";

export const session = {
  key: () => sessionStorage.getItem(KEY),
  role: () => sessionStorage.getItem(ROLE),
  save(key, role) { sessionStorage.setItem(KEY, key); sessionStorage.setItem(ROLE, role); },
  clear() { sessionStorage.removeItem(KEY); sessionStorage.removeItem(ROLE); },
};

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "HTTP";
    this.field = error.field || null;
  }
}

/** One API call; the key goes in the Authorization header only, never in a URL. */
export async function api(method, path, { body, params, key } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  const headers = { authorization: `Bearer ${key || session.key()}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(url, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
  });
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

export const get = (path, params) => api("GET", path, { params });
export const post = (path, body) => api("POST", path, { body: body === undefined ? {} : body });
export const patch = (path, body) => api("PATCH", path, { body });

/**
 * A view that draws only what is new. `show(load, draw)` draws the answer of the newest `load` and
 * only when it differs from what is on the page: a poll that finds nothing new leaves the page alone
 * (keyboard focus, a checkbox being clicked), and an older answer that arrives late never replaces a
 * newer one (a filter applied while the first load is on its way).
 */
export function freshView() {
  let shown = null;
  let latest = 0;
  return async (load, draw) => {
    const mine = ++latest;
    const data = await load();
    if (mine !== latest) return;
    const key = JSON.stringify(data);
    if (key === shown) return;
    shown = key;
    draw(data);
  };
}

/** The header's live indicator: what the page's refresh is doing ("on", "paused" or "error"). */
export function live(state, text) {
  const el = document.getElementById("live");
  if (!el) return;
  el.hidden = state === null;
  el.className = state ? `live-${state}` : "";
  el.textContent = text || "";
}

function clockTime(date) {
  return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/**
 * Run `task` now and again every `base` ms (a number, or a function asked after each run) while the
 * page lives; after a failure the wait doubles up to `max`, and a success brings it back to `base`.
 * While the tab is hidden nothing is fetched and the indicator says so; the page refreshes the
 * moment it is shown again. Returns a stop function.
 */
export function poll(task, { base = 3000, max = 60000, alive = () => true } = {}) {
  const baseNow = () => (typeof base === "function" ? base() : base);
  const PAUSED = "Paused while the tab is hidden";
  let wait = baseNow();
  let timer = null;
  let stopped = false;
  let running = false;
  const ended = () => stopped || !alive();
  const onVisibility = () => {
    if (ended()) { document.removeEventListener("visibilitychange", onVisibility); return; }
    clearTimeout(timer);
    timer = null;
    if (document.hidden) live("paused", PAUSED);
    else if (!running) run();
  };
  const run = async () => {
    timer = null;
    if (ended()) { document.removeEventListener("visibilitychange", onVisibility); return; }
    if (document.hidden) { live("paused", PAUSED); return; }  // onVisibility runs it again
    running = true;
    try {
      await task();
      wait = baseNow();
      if (alive()) live("on", `Live · updated ${clockTime(new Date())}`);
    } catch (error) {
      wait = Math.min(max, wait * 2);
      if (error && (error.status === 401 || error.status === 404)) { if (alive() && error.status === 404) live(null); return; }
      if (alive()) live("error", `Connection lost · retrying in ${Math.round(wait / 1000)} s`);
    } finally {
      running = false;
    }
    if (ended()) return;
    if (document.hidden) { live("paused", PAUSED); return; }
    timer = setTimeout(run, wait);
  };
  document.addEventListener("visibilitychange", onVisibility);
  run();
  return () => { stopped = true; clearTimeout(timer); document.removeEventListener("visibilitychange", onVisibility); };
}
