// Runs (filters, one run's attempts) and Dead letters (filter, select, replay one or in bulk).

import { freshView, get, post, poll } from "/console/api.js";
import { confirmDialog, field, fill, h, status, table, toast, when } from "/console/dom.js";

const RUN_STATUSES = ["", "pending", "running", "success", "failed", "retry_scheduled", "dead_letter", "cancelled"];
const SOURCES = ["", "direct", "schedule", "event"];
const ERROR_KINDS = ["", "timeout", "network", "http_4xx", "http_5xx", "http_429", "redirect", "endpoint_inactive",
  "endpoint_deleted", "refused", "invalid_request", "invalid_response", "poison", "worker_lost",
  "receiver_stopped", "endpoint_disabled"];

function select(id, options, value) {
  return h("select", { id }, options.map((o) => h("option", { value: o, selected: o === value }, o || "any")));
}

export function runLink(id) {
  return h("a", { href: `#/runs/${encodeURIComponent(id)}`, class: "mono" }, id);
}

async function runDetail(main, ctx) {
  const box = h("div", { "aria-live": "polite" });
  fill(main, h("h1", {}, "Run ", h("span", { class: "mono" }, ctx.id)), h("p", {}, h("a", { href: "#/runs" }, "All runs")), box);
  const show = freshView();
  const id = encodeURIComponent(ctx.id);
  const refresh = () => show(() => Promise.all([get(`/v1/task-runs/${id}`), get(`/v1/task-runs/${id}/attempts`, { limit: 100 })]), ([run, attempts]) => {
    if (!ctx.alive()) return;
    fill(box,
      h("dl", { class: "cards" },
        ...[["status", status(run.status)], ["endpoint", run.endpoint_id], ["source", `${run.source} ${run.source_id || ""}`],
          ["attempts", `${run.attempt_count} (series ${run.series})`], ["next retry", when(run.next_retry_at)], ["created", when(run.created_at)]]
          .map(([k, v]) => h("div", { class: "card" }, h("dt", { class: "muted" }, k), h("dd", { class: "value-small" }, v)))),
      h("h2", {}, "Attempts"),
      table("Delivery attempts, oldest first", ["#", "series", "status code", "latency", "outcome", "response", "error", "started"],
        attempts.data.map((a) => [String(a.attempt_number), String(a.series), a.status_code === null ? "-" : String(a.status_code),
          `${a.latency_ms} ms`, status(a.outcome), h("td", { class: "mono" }, a.response_summary || ""),
          a.error ? `${a.error_kind || ""} ${a.error}` : "", when(a.started_at)]), "No attempts yet."));
  });
  poll(refresh, { base: 3000, alive: ctx.alive });
}

export async function runs(main, ctx) {
  if (ctx.id) return runDetail(main, ctx);
  const statusSel = select("filter-status", RUN_STATUSES, ctx.params.get("status") || "");
  const sourceSel = select("filter-source", SOURCES, ctx.params.get("source") || "");
  const endpoint = h("input", { id: "filter-endpoint", type: "text", value: ctx.params.get("endpoint_id") || "", placeholder: "ep_…" });
  const form = h("form", { class: "filters", "aria-label": "Filter runs" },
    field("Status", statusSel), field("Source", sourceSel), field("Endpoint", endpoint),
    h("button", { type: "submit" }, "Filter"));
  const box = h("div", { "aria-live": "polite" });
  fill(main, h("h1", {}, "Runs"), form, box);
  const show = freshView();
  const refresh = () => show(() => get("/v1/task-runs", { limit: 50, status: statusSel.value, source: sourceSel.value, endpoint_id: endpoint.value.trim() }), (page) => {
    if (!ctx.alive()) return;
    fill(box, table("Task runs, newest first", ["id", "status", "endpoint", "source", "attempts", "last code", "last error", "created"],
      page.data.map((r) => [runLink(r.id), status(r.status), h("td", { class: "mono" }, r.endpoint_id), r.source,
        String(r.attempt_count), r.last_status_code === null ? "-" : String(r.last_status_code), r.last_error || "", when(r.created_at)]),
      "No runs match."));
  });
  form.addEventListener("submit", (e) => { e.preventDefault(); refresh().catch((err) => toast(err.message, true)); });
  poll(refresh, { base: 5000, alive: ctx.alive });
}

export async function deadLetters(main, ctx) {
  const endpoint = h("input", { id: "dl-endpoint", type: "text", placeholder: "ep_…" });
  const kind = select("dl-kind", ERROR_KINDS, "");
  const form = h("form", { class: "filters", "aria-label": "Filter dead letters" },
    field("Endpoint", endpoint), field("Error kind", kind), h("button", { type: "submit" }, "Filter"));
  const selected = new Set();
  let shown = [];
  const replaySelected = h("button", { type: "button", id: "replay-selected", class: "primary", disabled: true }, "Replay selected");
  const replayAll = h("button", { type: "button", id: "replay-all" }, "Replay all matching");
  const progress = h("div", { id: "replay-progress", "aria-live": "polite" });
  const box = h("div");
  fill(main, h("h1", {}, "Dead letters"), form, h("p", { class: "filters" }, replaySelected, replayAll), progress, box);

  const filters = () => ({ endpoint_id: endpoint.value.trim() || undefined, error_kind: kind.value || undefined });
  const updateButton = () => {
    replaySelected.disabled = selected.size === 0;
    replaySelected.textContent = selected.size ? `Replay selected (${selected.size})` : "Replay selected";
  };
  const show = freshView();
  const refresh = () => show(() => get("/v1/dead-letters", { limit: 100, ...filters() }), (page) => {
    if (!ctx.alive()) return;
    shown = page.data;
    for (const id of [...selected]) if (!shown.some((r) => r.id === id)) selected.delete(id);
    updateButton();
    // selecting changes the checkboxes in place: a redraw would take the focus from a checkbox being clicked
    const all = h("input", { type: "checkbox", id: "dl-select-all", "aria-label": "Select every dead letter shown",
      checked: shown.length > 0 && selected.size === shown.length,
      onchange: (e) => {
        for (const r of shown) (e.target.checked ? selected.add(r.id) : selected.delete(r.id));
        for (const el of box.querySelectorAll(".dl-select")) el.checked = e.target.checked;
        updateButton();
      } });
    fill(box, shown.length ? table("Dead letters, newest first", [all, "run", "endpoint", "attempts", "last code", "error", "since"],
      shown.map((r) => [
        h("input", { type: "checkbox", class: "dl-select", "aria-label": `Select ${r.id}`, checked: selected.has(r.id),
          onchange: (e) => {
            (e.target.checked ? selected.add(r.id) : selected.delete(r.id));
            all.checked = selected.size === shown.length;
            updateButton();
          } }),
        runLink(r.id), h("td", { class: "mono" }, r.endpoint_id), String(r.attempt_count),
        r.last_status_code === null ? "-" : String(r.last_status_code), `${r.last_error_kind || ""} ${r.last_error || ""}`, when(r.finished_at || r.updated_at)]))
      : h("p", { class: "muted", id: "dl-empty" }, "No dead letters match."));
  });

  replaySelected.addEventListener("click", async () => {
    const ids = [...selected];
    const noun = ids.length === 1 ? "dead letter" : "dead letters";
    if (!(await confirmDialog(`Replay ${ids.length} ${noun}? Each gets a new attempt series.`, `Replay ${ids.length}`))) return;
    const bar = h("progress", { max: ids.length, value: 0, "aria-label": "Replay progress" });
    const text = h("span", {}, ` 0 of ${ids.length}`);
    fill(progress, bar, text);
    let done = 0, failed = 0;
    for (const id of ids) {
      try { await post(`/v1/dead-letters/${encodeURIComponent(id)}/replay`); } catch { failed += 1; }
      done += 1;
      bar.value = done;
      text.textContent = ` ${done} of ${ids.length}`;
      selected.delete(id);
    }
    fill(progress, h("p", { id: "replay-done" }, `Replayed ${done - failed} of ${ids.length}${failed ? `, ${failed} could not be replayed` : ""}.`));
    await refresh();
  });

  replayAll.addEventListener("click", async () => {
    const count = shown.length;
    const more = count >= 100 ? "at least " : "";
    if (!(await confirmDialog(`Replay ${more}${count} dead letters matching this filter?`, "Replay all"))) return;
    let replayed = 0, skipped = 0, more_ = true, cursor = null;
    const text = h("span", {}, "Replaying…");
    fill(progress, h("progress", { "aria-label": "Replay progress" }), text);
    while (more_) {
      const result = await post("/v1/dead-letters/replay", { ...filters(), limit: 100, ...(cursor ? { cursor } : {}) });
      replayed += result.replayed; skipped += result.skipped; cursor = result.next_cursor;
      more_ = result.has_more && Boolean(cursor);
      text.textContent = ` ${replayed} replayed so far`;
    }
    fill(progress, h("p", { id: "replay-done" }, `Replayed ${replayed}${skipped ? `, skipped ${skipped}` : ""}.`));
    await refresh();
  });
  form.addEventListener("submit", (e) => { e.preventDefault(); refresh().catch((err) => toast(err.message, true)); });
  poll(refresh, { base: 5000, alive: ctx.alive });
}
