// Endpoints: health (recent runs as a sparkline), flow-control limits, create with the one-time secret,
// edit, rotate, enable/disable, recover what failed since a time.

import { get, patch, post, poll } from "/console/api.js";
import { confirmDialog, emptyState, field, fill, h, idCell, sparkline, table, toast } from "/console/dom.js";
import { endpointPage } from "/console/page-endpoint.js";
import { pager } from "/console/page-runs.js";

function secretPanel(title, secret) {
  const panel = h("section", { class: "panel secret", "aria-labelledby": "secret-title", id: "secret-reveal" },
    h("h2", { id: "secret-title" }, title),
    h("p", {}, "This signing secret is shown once. Copy it now: EdgeCron keeps it encrypted and never shows it again."),
    h("code", { id: "secret-value" }, secret),
    h("button", { type: "button", onclick: () => panel.remove() }, "I have saved it"));
  return panel;
}

function list(text) {
  return text.split(",").map((x) => x.trim()).filter(Boolean);
}

async function health(endpointId) {
  const page = await get("/v1/task-runs", { endpoint_id: endpointId, limit: 20 });
  const finished = page.data.filter((r) => ["success", "failed", "dead_letter"].includes(r.status)).reverse();
  const ok = finished.filter((r) => r.status === "success").length;
  return { outcomes: finished.map((r) => r.status === "success"), rate: finished.length ? Math.round((100 * ok) / finished.length) : null };
}

// An empty limit is "unlimited" (null); anything else goes as typed, so the API judges it (400 names the field).
function limit(input) {
  const text = input.value.trim();
  return text === "" ? null : Number(text);
}

// The Endpoint's flow control as one short cell: "5/s, 2 in flight", or "unlimited".
function limitsText(ep) {
  const parts = [];
  if (ep.max_per_sec !== null && ep.max_per_sec !== undefined) parts.push(`${ep.max_per_sec}/s`);
  if (ep.max_in_flight !== null && ep.max_in_flight !== undefined) parts.push(`${ep.max_in_flight} in flight`);
  return parts.length ? parts.join(", ") : "unlimited";
}

function editForm(endpoint, done) {
  const url = h("input", { type: "url", value: endpoint.url, required: true, size: 40 });
  const description = h("input", { type: "text", value: endpoint.description || "" });
  const events = h("input", { type: "text", value: endpoint.filter_events.join(", ") });
  const perSec = h("input", { type: "text", inputmode: "decimal", size: 8, class: "max-per-sec",
    value: endpoint.max_per_sec ?? "", placeholder: "unlimited" });
  const inFlight = h("input", { type: "text", inputmode: "numeric", size: 6, class: "max-in-flight",
    value: endpoint.max_in_flight ?? "", placeholder: "unlimited" });
  const form = h("form", { class: "inline panel", "aria-label": `Edit ${endpoint.id}` },
    field("URL", url), field("Description", description), field("Events (comma separated)", events),
    field("Max deliveries per second", perSec), field("Max in flight", inFlight),
    h("button", { type: "submit", class: "primary" }, "Save"),
    h("button", { type: "button", onclick: () => done(false) }, "Cancel"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await patch(`/v1/endpoints/${encodeURIComponent(endpoint.id)}`, {
        url: url.value.trim(), description: description.value.trim() || null, filter_events: list(events.value),
        max_per_sec: limit(perSec), max_in_flight: limit(inFlight),
      });
      toast(`Saved ${endpoint.id}`);
      done(true);
    } catch (err) { toast(err.field ? `${err.field}: ${err.message}` : err.message, true); }
  });
  return form;
}

// Re-send what failed since a time (RFC 3339), after a confirmation, calling again while more match.
function recoverForm(endpoint, done) {
  const since = h("input", { type: "text", size: 26, id: "recover-since", required: true,
    value: new Date(Date.now() - 3600 * 1000).toISOString() });
  const result = h("p", { id: "recover-result", "aria-live": "polite" });
  const form = h("form", { class: "inline panel", "aria-label": `Recover ${endpoint.id}` },
    field("Failed since (RFC 3339)", since),
    h("button", { type: "submit", class: "primary", id: "recover-submit" }, "Recover"),
    h("button", { type: "button", onclick: () => done(false) }, "Close"), result);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = `Re-send every run of ${endpoint.id} that failed or was dead-lettered since ${since.value.trim()}? Each gets a new attempt series.`;
    if (!(await confirmDialog(text, "Recover"))) return;
    try {
      let recovered = 0, cursor = null;
      for (let more = true; more;) {
        const body = { since: since.value.trim(), ...(cursor ? { cursor } : {}) };
        const answer = await post(`/v1/endpoints/${encodeURIComponent(endpoint.id)}/recover`, body);
        recovered += answer.recovered; cursor = answer.next_cursor;
        more = answer.has_more && Boolean(cursor);
      }
      fill(result, `Recovered ${recovered} ${recovered === 1 ? "run" : "runs"} of ${endpoint.id}.`);
    } catch (err) { toast(err.field ? `${err.field}: ${err.message}` : err.message, true); }
  });
  return form;
}

// An Endpoint's health as the API reports it; one a user switched off is "off", not "disabled".
function healthCell(ep) {
  const health = ep.health || { state: "healthy", consecutive_failures: 0 };
  const state = !ep.active && ep.disabled_reason !== "failing" ? "off" : health.state;
  const label = {
    healthy: "healthy",
    failing: `failing: ${health.consecutive_failures} in a row`,
    disabled: `disabled for failing: ${health.consecutive_failures} in a row`,
    off: "switched off",
  }[state];
  const since = health.failing_since ? ` since ${health.failing_since}` : "";
  return h("span", { class: `status status-${state}`, title: `${label}${since}` }, label);
}

export async function render(main, ctx) {
  if (ctx.id) return endpointPage(main, ctx, { healthCell, limitsText, secretPanel });
  const reveal = h("div", { id: "reveal" });
  const editing = h("div");
  const listing = h("div", { "aria-live": "polite" });
  const url = h("input", { id: "new-url", type: "url", required: true, size: 40, placeholder: "http://127.0.0.1:8000/hook" });
  const description = h("input", { id: "new-description", type: "text" });
  const events = h("input", { id: "new-events", type: "text", placeholder: "invoice.*, order.paid" });
  const policy = h("input", { id: "new-policy", type: "text", placeholder: "rp_… (optional)" });
  const create = h("form", { class: "inline", "aria-label": "Create an endpoint" },
    field("URL", url), field("Description", description), field("Events (comma separated)", events),
    field("Retry policy", policy), h("button", { type: "submit", class: "primary", id: "create-endpoint" }, "Create endpoint"));
  const pages = pager("endpoints", "endpoints", 50, () => refresh().catch((err) => toast(err.message, true)));
  fill(main, h("h1", {}, "Endpoints"), create, reveal, editing, pages.el, listing);

  const refresh = async () => {
    const page = await get("/v1/endpoints", { limit: 50, cursor: pages.cursor() });
    pages.update(page.data.length, page.next_cursor);
    const rows = [];
    for (const ep of page.data) {
      let spark = h("span", { class: "muted" }, "no runs");
      let rate = "-";
      try {
        const found = await health(ep.id);
        if (found.outcomes.length) spark = sparkline(found.outcomes, `last ${found.outcomes.length} runs of ${ep.id}`);
        if (found.rate !== null) rate = `${found.rate}%`;
      } catch { /* health is best effort */ }
      rows.push([
        idCell(ep.id, `#/endpoints/${encodeURIComponent(ep.id)}`), h("td", { class: "mono" }, ep.url), ep.description || "",
        ep.filter_events.join(", ") || "-", healthCell(ep), limitsText(ep), rate, spark,
        h("td", {},
          h("button", { type: "button", onclick: () => fill(editing, editForm(ep, (changed) => { fill(editing); if (changed) refresh(); })) }, "Edit"), " ",
          h("button", { type: "button", onclick: () => fill(editing, recoverForm(ep, () => fill(editing))) }, "Recover"), " ",
          h("button", { type: "button", onclick: async () => {
            if (!(await confirmDialog(`Rotate the signing secret of ${ep.id}? The current secret keeps signing for 24 hours.`, "Rotate"))) return;
            try {
              const rotated = await post(`/v1/endpoints/${encodeURIComponent(ep.id)}/rotate-secret`);
              fill(reveal, secretPanel(`New secret of ${ep.id}`, rotated.secret));
            } catch (err) { toast(err.message, true); }
          } }, "Rotate secret"), " ",
          h("button", { type: "button", class: ep.active ? "danger" : "", onclick: async () => {
            try { await patch(`/v1/endpoints/${encodeURIComponent(ep.id)}`, { active: !ep.active }); await refresh(); }
            catch (err) { toast(err.message, true); }
          } }, ep.active ? "Disable" : "Enable")),
      ]);
    }
    if (!ctx.alive()) return;
    fill(listing, rows.length
      ? h("div", {}, table("Endpoints of this App", ["id", "url", "description", "events", "health", "limits", "success", "recent runs", "actions"], rows))
      : emptyState("endpoints-empty", "No endpoints yet. Create one with the form above, or from the command line; then try it with a local receiver:",
        "edgecron endpoints create http://127.0.0.1:8000/hook\nedgecron listen --endpoint ep_…"));
  };

  create.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { url: url.value.trim(), filter_events: list(events.value) };
    if (description.value.trim()) body.description = description.value.trim();
    if (policy.value.trim()) body.retry_policy_id = policy.value.trim();
    try {
      const made = await post("/v1/endpoints", body);
      fill(reveal, secretPanel(`Endpoint ${made.id} created`, made.secret));
      create.reset();
      await refresh();
    } catch (err) { toast(err.field ? `${err.field}: ${err.message}` : err.message, true); }
  });
  poll(refresh, { base: 10000, alive: ctx.alive });
}
