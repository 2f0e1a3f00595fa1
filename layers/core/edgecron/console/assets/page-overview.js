// Overview (deliveries, success rate, latency, open dead letters, paused schedules), Usage,
// Notifications, and the admin's Apps page.

import { api, get, poll } from "/console/api.js";
import { field, fill, h, table, toast, when } from "/console/dom.js";
import { pager } from "/console/page-runs.js";

/** A uPlot chart (the vendored library), or a text fallback while it is not loaded. */
export function chart(title, labels, series, { bars = false } = {}) {
  const holder = h("div", { class: "chart", role: "img", "aria-label": title });
  if (!window.uPlot) return fill(holder, h("p", { class: "muted" }, title));
  const colours = ["#1a7f37", "#cf222e", "#0b5cad"];
  const opts = {
    title, width: Math.min(960, (document.getElementById("main").clientWidth || 800) - 20), height: 220,
    scales: { x: { time: !bars } },
    axes: bars ? [{ values: (u, ticks) => ticks.map((t) => labels[t] ?? "") }, {}] : [{}, {}],
    series: [{}, ...series.map((s, i) => ({
      label: s.label, stroke: colours[i % colours.length], fill: bars ? `${colours[i % colours.length]}99` : undefined,
      width: 2, paths: bars && window.uPlot.paths && window.uPlot.paths.bars ? window.uPlot.paths.bars({ size: [0.6, 60] }) : undefined,
    }))],
  };
  const x = bars ? labels.map((_, i) => i) : labels;
  // uPlot draws into the holder once it is in the document
  requestAnimationFrame(() => { if (holder.isConnected) new window.uPlot(opts, [x, ...series.map((s) => s.values)], holder); });
  return holder;
}

function card(label, value, id) {
  return h("div", { class: "card", id }, h("div", { class: "muted" }, label), h("div", { class: "value" }, value));
}

export async function overview(main, ctx) {
  let windowName = ctx.params.get("window") === "day" ? "day" : "hour";
  const choose = h("select", { id: "stats-window" }, h("option", { value: "hour", selected: windowName === "hour" }, "last hour"),
    h("option", { value: "day", selected: windowName === "day" }, "last day"));
  choose.addEventListener("change", () => { windowName = choose.value; refresh(); });
  const figures = h("div", { "aria-live": "polite" });
  const graph = h("div");
  fill(main, h("h1", {}, "Overview"), h("div", { class: "filters" }, field("Window", choose)), figures, graph);
  let drawn = "";
  const refresh = async () => {
    const [stats, dead, schedules] = await Promise.all([
      get("/v1/stats/deliveries", { window: windowName }), get("/v1/dead-letters", { limit: 100 }), get("/v1/schedules", { limit: 100 })]);
    if (!ctx.alive()) return;
    const paused = schedules.data.filter((s) => s.status === "PAUSED").length;
    const rate = stats.success_rate === null ? "-" : `${(100 * stats.success_rate).toFixed(1)}%`;
    const ms = (v) => (v === null ? "-" : `${v} ms`);
    fill(figures, h("div", { class: "cards" },
      card("deliveries", String(stats.delivered + stats.failed), "card-deliveries"), card("success rate", rate, "card-success"),
      card("p50 latency", ms(stats.latency_ms.p50), "card-p50"), card("p99 latency", ms(stats.latency_ms.p99), "card-p99"),
      card("open dead letters", `${dead.data.length}${dead.next_cursor ? "+" : ""}`, "card-dead"),
      card("paused schedules", `${paused}${schedules.next_cursor ? "+" : ""}`, "card-paused")),
      stats.truncated ? h("p", { class: "muted" }, "Counted over the most recent runs only.") : null);
    const key = JSON.stringify(stats.buckets);
    if (key !== drawn) {
      drawn = key;
      const perMinute = 60 / stats.bucket_seconds;
      fill(graph, chart(`Deliveries per minute, ${windowName === "hour" ? "last hour" : "last day"}`,
        stats.buckets.map((b) => Date.parse(b.start) / 1000),
        [{ label: "delivered", values: stats.buckets.map((b) => b.delivered * perMinute) },
          { label: "failed", values: stats.buckets.map((b) => b.failed * perMinute) }]));
    }
  };
  poll(refresh, { base: 10000, alive: ctx.alive });
}

function lastMonths(count) {
  const now = new Date();
  const months = [];
  for (let i = count - 1; i >= 0; i -= 1) {
    const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - i, 1));
    months.push(`${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, "0")}`);
  }
  return months;
}

export async function usage(main, ctx) {
  const box = h("div");
  fill(main, h("h1", {}, "Usage"), h("p", {}, "Billable triggers per month (UTC): schedule fires, published events and direct runs."), box);
  const months = lastMonths(6);
  const rows = await Promise.all(months.map((month) => get("/v1/usage", { month })));
  if (!ctx.alive()) return;
  fill(box, chart("Billable triggers per month", months, [{ label: "triggers", values: rows.map((r) => r.total) }], { bars: true }),
    table("Billable triggers per month", ["month", "schedule", "event", "direct", "total", "quota"],
      rows.map((r) => [r.month, String(r.schedule), String(r.event), String(r.direct), String(r.total), r.monthly_quota === null ? "none" : String(r.monthly_quota)])));
}

export async function notifications(main, ctx) {
  const box = h("div", { "aria-live": "polite" });
  const refresh = async () => {
    const page = await get("/v1/notifications", { limit: 50, cursor: pages.cursor() });
    if (!ctx.alive()) return;
    pages.update(page.data.length, page.next_cursor);
    fill(box, table("Notifications, newest first", ["when", "kind", "title", "message"],
      page.data.map((n) => [when(n.created_at), n.kind, n.title, n.message]),
      "No notifications. A schedule paused after failing fires, or an Endpoint disabled for failing, is told here."));
  };
  const pages = pager("notifications", "notifications", 50, () => refresh().catch((err) => toast(err.message, true)));
  fill(main, h("h1", {}, "Notifications"), pages.el, box);
  poll(refresh, { base: 15000, alive: ctx.alive });
}

export async function apps(main) {
  const name = h("input", { id: "app-name", type: "text", required: true });
  const reveal = h("div");
  const form = h("form", { class: "inline", "aria-label": "Create an App" }, field("App name", name),
    h("button", { type: "submit", class: "primary" }, "Create App"));
  fill(main, h("h1", {}, "Apps"), h("p", {}, "Signed in with the admin key: create an App and get its first API key."), form, reveal);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const made = await api("POST", "/v1/apps", { body: { name: name.value.trim() } });
      fill(reveal, h("section", { class: "panel secret", "aria-label": "New App key" },
        h("h2", {}, `App ${made.app.id} created`), h("p", {}, "Its API key is shown once:"), h("code", {}, made.api_key)));
      form.reset();
    } catch (err) { toast(err.status === 401 ? "This key is neither an App key nor the admin key." : err.message, true); }
  });
}
