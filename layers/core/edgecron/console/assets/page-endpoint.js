// One Endpoint: its configuration, health, recent runs and dead letters, secret rotation, and Send test
// (a signed test delivery, made as a direct Task Run, whose result appears on the page).

import { get, post, poll } from "/console/api.js";
import { confirmDialog, fill, h, idCell, notFound, sparkline, status, table, toast, when } from "/console/dom.js";
import { chart } from "/console/page-overview.js";

const FINISHED = new Set(["success", "failed", "dead_letter", "cancelled"]);

/** Seconds as a person reads them: "5 days", "2 hours", "90 s". */
function span(seconds) {
  if (seconds >= 86400 && seconds % 86400 === 0) return `${seconds / 86400} ${seconds === 86400 ? "day" : "days"}`;
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} ${seconds === 3600 ? "hour" : "hours"}`;
  return `${seconds} s`;
}

function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(Boolean).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function runRows(runs) {
  return runs.map((r) => [idCell(r.id, `#/runs/${encodeURIComponent(r.id)}`), status(r.status), r.source, String(r.attempt_count),
    r.last_status_code === null ? "-" : String(r.last_status_code), r.last_error || "", when(r.finished_at || r.created_at)]);
}

/** Send a test delivery and follow it until it has an answer; `box` shows where it is. */
async function sendTest(endpointId, box, alive) {
  const payload = { type: "edgecron.test", message: "A test delivery from the EdgeCron console", sent_at: new Date().toISOString() };
  fill(box, h("p", {}, "Sending a test delivery…"));
  let run;
  try { run = await post("/v1/task-runs", { endpoint_id: endpointId, payload }); } catch (err) {
    fill(box, h("p", { class: "error" }, `The test could not be sent: ${err.message}`));
    return;
  }
  const started = Date.now();
  const draw = (current, attempt) => {
    const done = FINISHED.has(current.status) || current.status === "retry_scheduled";
    fill(box, h("div", { class: "panel", id: "test-result" },
      h("h2", {}, done ? "Test delivery result" : "Test delivery in progress"),
      facts([
        ["run", idCell(current.id, `#/runs/${encodeURIComponent(current.id)}`)],
        ["status", status(current.status)],
        attempt ? ["answer", attempt.status_code === null ? "no answer" : `HTTP ${attempt.status_code}`] : null,
        attempt ? ["latency", `${attempt.latency_ms} ms`] : null,
        attempt && attempt.error ? ["error", h("span", { class: "error" }, attempt.error)] : null,
        attempt && attempt.response_summary ? ["response body", h("pre", { tabindex: "0" }, h("code", {}, attempt.response_summary))] : null,
      ]),
      h("p", { class: "muted" }, "Signed like every delivery (webhook-id, webhook-timestamp, webhook-signature), with the payload:"),
      h("pre", { tabindex: "0" }, h("code", {}, JSON.stringify(payload, null, 2)))));
    return done;
  };
  draw(run, null);
  while (alive() && Date.now() - started < 60000) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    try {
      const [current, attempts] = await Promise.all([get(`/v1/task-runs/${run.id}`), get(`/v1/task-runs/${run.id}/attempts`, { limit: 100 })]);
      if (!alive()) return;
      if (draw(current, attempts.data[attempts.data.length - 1] || null)) return;
    } catch { /* the next poll tries again */ }
  }
}

export async function endpointPage(main, ctx, { healthCell, limitsText, secretPanel }) {
  const id = encodeURIComponent(ctx.id);
  let endpoint;
  try { endpoint = await get(`/v1/endpoints/${id}`); } catch (err) {
    if (err.status === 404) { notFound(main, "endpoint", ctx.id, "#/endpoints", "All endpoints"); return; }
    throw err;
  }
  const config = h("section", { "aria-labelledby": "config-title" });
  const healthBox = h("section", { "aria-labelledby": "health-title" });
  const reveal = h("div");
  const testBox = h("div", { id: "test-box", "aria-live": "polite" });
  const rates = h("section", { "aria-labelledby": "rates-title" });
  const recent = h("section", { "aria-labelledby": "recent-title" });
  const letters = h("section", { "aria-labelledby": "letters-title" });
  const sendButton = h("button", { type: "button", id: "send-test", class: "primary" }, "Send test");
  const rotate = h("button", { type: "button", id: "rotate-secret" }, "Rotate secret");
  fill(main, h("h1", {}, "Endpoint ", h("span", { class: "mono" }, ctx.id)), h("p", {}, h("a", { href: "#/endpoints" }, "All endpoints")),
    h("p", { class: "filters" }, sendButton, rotate), reveal, testBox, healthBox, rates, config, recent, letters);

  sendButton.addEventListener("click", async () => {
    sendButton.disabled = true;
    try { await sendTest(endpoint.id, testBox, ctx.alive); } finally { sendButton.disabled = false; }
  });
  rotate.addEventListener("click", async () => {
    if (!(await confirmDialog(`Rotate the signing secret of ${endpoint.id}? The current secret keeps signing for 24 hours.`, "Rotate"))) return;
    try { fill(reveal, secretPanel(`New secret of ${endpoint.id}`, (await post(`/v1/endpoints/${id}/rotate-secret`)).secret)); }
    catch (err) { toast(err.message, true); }
  });

  let drawn = "";
  const refresh = async () => {
    const [ep, runs, dead, stats] = await Promise.all([get(`/v1/endpoints/${id}`),
      get("/v1/task-runs", { endpoint_id: endpoint.id, limit: 50 }), get("/v1/dead-letters", { endpoint_id: endpoint.id, limit: 10 }),
      get("/v1/stats/deliveries", { endpoint_id: endpoint.id, window: "hour" })]);
    if (!ctx.alive()) return;
    const ms = (v) => (v === null ? "-" : `${v} ms`);
    const key = JSON.stringify([stats.buckets, stats.latency_ms]);
    if (key !== drawn) {
      drawn = key;
      fill(rates, h("h2", { id: "rates-title" }, "Deliveries, last hour"),
        h("div", { class: "cards" },
          h("div", { class: "card", id: "endpoint-delivered" }, h("div", { class: "muted" }, "delivered / failed"), `${stats.delivered} / ${stats.failed}`),
          h("div", { class: "card" }, h("div", { class: "muted" }, "success rate"), stats.success_rate === null ? "-" : `${(100 * stats.success_rate).toFixed(1)}%`),
          h("div", { class: "card", id: "endpoint-p50" }, h("div", { class: "muted" }, "p50 latency"), ms(stats.latency_ms.p50)),
          h("div", { class: "card" }, h("div", { class: "muted" }, "p99 latency"), ms(stats.latency_ms.p99))),
        chart(`Deliveries per minute to ${ep.id}, last hour`, stats.buckets.map((b) => Date.parse(b.start) / 1000),
          [{ label: "delivered", values: stats.buckets.map((b) => b.delivered) }, { label: "failed", values: stats.buckets.map((b) => b.failed) }]));
    }
    endpoint = ep;
    const health = ep.health;
    const finished = runs.data.filter((r) => ["success", "failed", "dead_letter"].includes(r.status));
    const ok = finished.filter((r) => r.status === "success").length;
    const rate = finished.length ? `${Math.round((100 * ok) / finished.length)}% of the last ${finished.length} finished runs` : "no finished run yet";
    fill(healthBox, h("h2", { id: "health-title" }, "Health"),
      h("div", { class: "cards" },
        h("div", { class: "card", id: "endpoint-health" }, h("div", { class: "muted" }, "state"), healthCell(ep)),
        h("div", { class: "card" }, h("div", { class: "muted" }, "failure streak"), `${health.consecutive_failures} in a row`),
        h("div", { class: "card" }, h("div", { class: "muted" }, "failing since"), when(health.failing_since)),
        h("div", { class: "card" }, h("div", { class: "muted" }, "last success"), when(health.last_success_at)),
        h("div", { class: "card" }, h("div", { class: "muted" }, "disabled reason"), ep.disabled_reason || (ep.active ? "-" : "switched off")),
        h("div", { class: "card", id: "endpoint-rate" }, h("div", { class: "muted" }, "success"), rate,
          finished.length ? h("div", {}, sparkline([...finished].reverse().map((r) => r.status === "success"), `last ${finished.length} runs`)) : null)));
    const headerNames = Object.keys(ep.headers || {});
    fill(config, h("h2", { id: "config-title" }, "Configuration"), facts([
      ["URL", h("span", { class: "mono" }, ep.url)], ["method", ep.method], ["timeout", `${ep.timeout_ms} ms`],
      ["events", ep.filter_events.join(", ") || "none (schedule and direct runs only)"],
      ["retry policy", ep.retry_policy_id ? idCell(ep.retry_policy_id) : "the default"],
      ["limits", limitsText(ep)], ["headers", headerNames.length ? `${headerNames.join(", ")} (values not shown)` : "none"],
      ["auto-disable", `after ${ep.disable_after_failures} failed runs in a row over ${span(ep.disable_after_sec)}`],
      ["description", ep.description || "-"], ["created", when(ep.created_at)],
    ]));
    fill(recent, h("h2", { id: "recent-title" }, "Recent runs"),
      runs.data.length
        ? [table("The newest runs of this endpoint", ["run", "status", "source", "attempts", "last code", "last error", "when"], runRows(runs.data.slice(0, 10))),
          h("p", {}, h("a", { href: `#/runs?endpoint_id=${encodeURIComponent(ep.id)}` }, "All runs of this endpoint"))]
        : h("p", { class: "muted", id: "recent-empty" }, "No runs yet: press Send test, or send one with ",
          h("code", {}, `edgecron runs create ${ep.id} --payload '{"hello": "world"}'`), "."));
    fill(letters, h("h2", { id: "letters-title" }, "Dead letters"),
      dead.data.length
        ? [table("The newest dead letters of this endpoint", ["run", "status", "source", "attempts", "last code", "last error", "when"], runRows(dead.data)),
          h("p", {}, h("a", { href: `#/dead-letters?endpoint_id=${encodeURIComponent(ep.id)}` }, "Replay dead letters of this endpoint"))]
        : h("p", { class: "muted", id: "letters-empty" }, "No dead letters: no run of this endpoint has exhausted its attempts."));
  };
  poll(refresh, { base: 5000, alive: ctx.alive });
}
