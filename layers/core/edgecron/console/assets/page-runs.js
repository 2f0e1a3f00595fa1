// Runs (filters, one run's attempts) and Dead letters (filter, select, replay one or in bulk).

import { freshView, get, post, poll } from "/console/api.js";
import { confirmDialog, emptyState, field, fill, h, idCell, status, table, toast, when } from "/console/dom.js";
import { runPage } from "/console/page-run.js";

const RUN_STATUSES = ["", "pending", "running", "success", "failed", "retry_scheduled", "dead_letter", "cancelled"];
const SOURCES = ["", "direct", "schedule", "event"];
const ERROR_KINDS = ["", "timeout", "network", "http_4xx", "http_5xx", "http_429", "redirect", "endpoint_inactive",
  "endpoint_deleted", "refused", "invalid_request", "invalid_response", "poison", "worker_lost",
  "receiver_stopped", "endpoint_disabled"];

function select(id, options, value) {
  return h("select", { id }, options.map((o) => h("option", { value: o, selected: o === value }, o || "any")));
}

export function runLink(id) {
  return idCell(id, `#/runs/${encodeURIComponent(id)}`);
}

export function endpointLink(id) {
  return idCell(id, `#/endpoints/${encodeURIComponent(id)}`);
}

const CREATE_RUN = `edgecron runs create ep_… --payload '{"hello": "world"}'
# or
curl -X POST "$API_URL/v1/task-runs" -H "authorization: Bearer $API_KEY" \\
  -H "content-type: application/json" -d '{"endpoint_id": "ep_…", "payload": {"hello": "world"}}'`;

/**
 * Cursor paging over a newest-first list route. `cursor()` is the one to ask for the page shown;
 * `update(count, next_cursor)` is told each answer; Older and Newer move and call `onMove`. The
 * cursors of the pages seen are kept, so Newer goes back. Hidden while everything fits one page.
 */
export function pager(idPrefix, noun, pageSize, onMove) {
  const cursors = [null];
  let index = 0;
  let next = null;
  const older = h("button", { type: "button", id: `${idPrefix}-older`, disabled: true }, `Older ${noun}`);
  const newer = h("button", { type: "button", id: `${idPrefix}-newer`, disabled: true }, `Newer ${noun}`);
  const where = h("span", { id: `${idPrefix}-range`, class: "muted" });
  older.addEventListener("click", () => { if (!next) return; cursors[index + 1] = next; index += 1; onMove(); });
  newer.addEventListener("click", () => { if (index === 0) return; index -= 1; onMove(); });
  return {
    el: h("nav", { class: "pager", "aria-label": `Pages of ${noun}` }, newer, older, where),
    cursor: () => cursors[index],
    reset: () => { cursors.length = 1; index = 0; },
    update(count, nextCursor) {
      next = nextCursor || null;
      older.disabled = !next;
      newer.disabled = index === 0;
      this.el.hidden = index === 0 && !next;
      const first = index * pageSize + 1;
      where.textContent = count ? `${noun} ${first}–${first + count - 1}${next ? ", more are older" : ", the oldest"}` : "";
    },
  };
}

function goToRun() {
  const input = h("input", { id: "find-run", type: "search", placeholder: "run_…", spellcheck: "false", autocomplete: "off" });
  const form = h("form", { class: "filters", role: "search", "aria-label": "Find a run by id" },
    field("Run id", input), h("button", { type: "submit" }, "Open run"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const id = input.value.trim();
    if (id) window.location.hash = `#/runs/${encodeURIComponent(id)}`;
  });
  return form;
}

const PAGE_SIZE = 50;

export async function runs(main, ctx) {
  if (ctx.id) return runPage(main, ctx);
  const chosen = { status: ctx.params.get("status") || "", source: ctx.params.get("source") || "", endpoint_id: ctx.params.get("endpoint_id") || "" };
  const statusSel = select("filter-status", RUN_STATUSES, chosen.status);
  const sourceSel = select("filter-source", SOURCES, chosen.source);
  const endpoint = h("input", { id: "filter-endpoint", type: "text", value: chosen.endpoint_id, placeholder: "ep_…" });
  const form = h("form", { class: "filters", "aria-label": "Filter runs" },
    field("Status", statusSel), field("Source", sourceSel), field("Endpoint", endpoint),
    h("button", { type: "submit" }, "Filter"));
  const filtered = Object.entries(chosen).filter(([, v]) => v);
  const summary = h("p", { id: "runs-filter", class: "muted" },
    filtered.length ? ["Filtered by ", filtered.map(([k, v]) => `${k} ${v}`).join(", "), " · ", h("a", { href: "#/runs" }, "Clear filters")] : "All runs of this App, newest first.");
  const box = h("div", { "aria-live": "polite" });
  const show = freshView();
  const pages = pager("runs", "runs", PAGE_SIZE, () => refresh().catch((err) => toast(err.message, true)));
  fill(main, h("h1", {}, "Runs"), goToRun(), form, summary, pages.el, box);
  const refresh = () => show(() => get("/v1/task-runs", { limit: PAGE_SIZE, cursor: pages.cursor(), ...chosen }), (page) => {
    if (!ctx.alive()) return;
    pages.update(page.data.length, page.next_cursor);
    if (!page.data.length) {
      fill(box, filtered.length || pages.cursor()
        ? h("p", { class: "muted", id: "runs-empty" }, "No runs match these filters. ", h("a", { href: "#/runs" }, "Show all runs"))
        : emptyState("runs-empty", "No runs yet. Create an Endpoint, then send it a run from the command line (or with Send test on the Endpoint's page):", CREATE_RUN));
      return;
    }
    fill(box, table("Task runs, newest first", ["id", "status", "endpoint", "source", "attempts", "last code", "last error", "created"],
      page.data.map((r) => [runLink(r.id), status(r.status), endpointLink(r.endpoint_id), r.source,
        String(r.attempt_count), r.last_status_code === null ? "-" : String(r.last_status_code), r.last_error || "", when(r.created_at)])));
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const query = new URLSearchParams(Object.entries({ status: statusSel.value, source: sourceSel.value, endpoint_id: endpoint.value.trim() }).filter(([, v]) => v));
    ctx.navigate(`#/runs${query.toString() ? `?${query}` : ""}`);
  });
  poll(refresh, { base: 5000, alive: ctx.alive });
}

export async function deadLetters(main, ctx) {
  const endpoint = h("input", { id: "dl-endpoint", type: "text", placeholder: "ep_…", value: ctx.params.get("endpoint_id") || "" });
  const kind = select("dl-kind", ERROR_KINDS, ctx.params.get("error_kind") || "");
  const since = h("input", { id: "dl-since", type: "text", size: 22, placeholder: "2026-01-31T00:00:00Z", value: ctx.params.get("since") || "" });
  const until = h("input", { id: "dl-until", type: "text", size: 22, placeholder: "RFC 3339", value: ctx.params.get("until") || "" });
  const form = h("form", { class: "filters", "aria-label": "Filter dead letters" },
    field("Endpoint", endpoint), field("Error kind", kind), field("Since (RFC 3339)", since), field("Until (RFC 3339)", until),
    h("button", { type: "submit" }, "Filter"));
  const pages = pager("dl", "dead letters", 100, () => refresh().catch((err) => toast(err.message, true)));
  const selected = new Set();
  let shown = [];
  const replaySelected = h("button", { type: "button", id: "replay-selected", class: "primary", disabled: true }, "Replay selected");
  const replayAll = h("button", { type: "button", id: "replay-all" }, "Replay all matching");
  const progress = h("div", { id: "replay-progress", "aria-live": "polite" });
  const box = h("div");
  fill(main, h("h1", {}, "Dead letters"), form, h("p", { class: "filters" }, replaySelected, replayAll), progress, pages.el, box);

  const filters = () => ({ endpoint_id: endpoint.value.trim() || undefined, error_kind: kind.value || undefined,
    since: since.value.trim() || undefined, until: until.value.trim() || undefined });
  const updateButton = () => {
    replaySelected.disabled = selected.size === 0;
    replaySelected.textContent = selected.size ? `Replay selected (${selected.size})` : "Replay selected";
  };
  const show = freshView();
  const refresh = () => show(() => get("/v1/dead-letters", { limit: 100, cursor: pages.cursor(), ...filters() }), (page) => {
    if (!ctx.alive()) return;
    pages.update(page.data.length, page.next_cursor);
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
        runLink(r.id), endpointLink(r.endpoint_id), String(r.attempt_count),
        r.last_status_code === null ? "-" : String(r.last_status_code), `${r.last_error_kind || ""} ${r.last_error || ""}`, when(r.finished_at || r.updated_at)]))
      : h("p", { class: "muted", id: "dl-empty" }, Object.values(filters()).some(Boolean)
        ? "No dead letters match these filters."
        : "No dead letters: every run either succeeded, is still being retried, or was cancelled. A run becomes a dead letter when its last attempt fails; it then waits here to be replayed."));
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
  form.addEventListener("submit", (e) => { e.preventDefault(); pages.reset(); refresh().catch((err) => toast(err.field ? `${err.field}: ${err.message}` : err.message, true)); });
  poll(refresh, { base: 5000, alive: ctx.alive });
}
