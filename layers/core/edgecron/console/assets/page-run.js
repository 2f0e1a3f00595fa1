// One Task Run, inspected: its payload, the request its attempts send (credentials redacted), each
// attempt's response, latency, error in plain words and what EdgeCron decided next; cancel or replay.

import { freshView, get, post, poll } from "/console/api.js";
import { confirmDialog, fill, h, idCell, jsonBlock, notFound, status, table, toast, when } from "/console/dom.js";

const PLAIN_ERRORS = {
  timeout: "The endpoint did not answer within its timeout.",
  network: "The connection failed before an answer (name not resolved, connection refused or reset).",
  http_4xx: "The endpoint answered with a client error (4xx): the request is not retried by default.",
  http_5xx: "The endpoint answered with a server error (5xx): this is retried.",
  http_429: "The endpoint asked EdgeCron to slow down (429).",
  redirect: "The endpoint answered with a redirect: EdgeCron does not follow redirects.",
  endpoint_inactive: "The endpoint was switched off when the attempt was due.",
  endpoint_deleted: "The endpoint was deleted before the attempt.",
  refused: "EdgeCron refused to call this address (a private, loopback or reserved network).",
  invalid_request: "The request could not be built (for example, a header that cannot be sent).",
  invalid_response: "The endpoint's answer could not be read as HTTP.",
  poison: "The delivery message could not be processed and went to the dead-letter queue.",
  worker_lost: "The worker making this attempt stopped before it recorded a result; the request may or may not have arrived.",
  receiver_stopped: "The receiver answered edgecron-retry: stop, so EdgeCron stopped retrying.",
  endpoint_disabled: "The endpoint was disabled for failing when the attempt was due.",
};

const FINISHED = new Set(["success", "failed", "dead_letter", "cancelled"]);
const CANCELLABLE = new Set(["pending", "retry_scheduled"]);

/** What EdgeCron did after attempt `a`: the next attempt of its series, a scheduled retry, or the end. */
function decision(a, next, run) {
  switch (a.outcome) {
    case "success": return "Delivered: no further attempt.";
    case "retry":
      if (next) return `Retried: attempt ${next.attempt_number} started ${when(next.started_at)}.`;
      if (run.status === "retry_scheduled") return `Retry scheduled for ${when(run.next_retry_at)}.`;
      if (run.status === "cancelled") return "A retry was due, but the run was cancelled.";
      return "Retry due.";
    case "failed": return "Not retried: this answer is final (the run failed).";
    case "dead_letter": return "Attempts exhausted: the run became a dead letter (it can be replayed).";
    default: return a.outcome;
  }
}

/** The kind of failure an answer is, for attempts that record a status code and no kind. */
function kindOf(a) {
  if (a.error_kind) return a.error_kind;
  const code = a.status_code;
  if (code === null || a.outcome === "success") return null;
  if (code === 429) return "http_429";
  if (code >= 500) return "http_5xx";
  if (code >= 400) return "http_4xx";
  if (code >= 300) return "redirect";
  return null;
}

function plainError(a) {
  const kind = kindOf(a);
  if (!a.error && !kind) return null;
  const plain = PLAIN_ERRORS[kind] || "The attempt failed.";
  return [plain, a.error ? h("span", { class: "muted" }, ` (${a.error})`) : ""];
}

function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(Boolean).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function attemptCard(a, next, run) {
  const code = a.status_code === null ? "no answer" : `HTTP ${a.status_code}`;
  const error = plainError(a);
  return h("article", { class: "attempt", "aria-labelledby": `attempt-${a.sequence}` },
    h("h3", { id: `attempt-${a.sequence}` }, `Attempt ${a.attempt_number}`, a.series > 1 ? ` of series ${a.series}` : "",
      " · ", status(a.outcome), ` · ${code} · ${a.latency_ms} ms`),
    facts([
      ["started", when(a.started_at)],
      ["request id", h("span", { class: "mono" }, a.request_id)],
      ["response", a.status_code === null ? "none" : code],
      ["response body", a.response_summary ? h("pre", { class: "response", tabindex: "0" }, h("code", {}, a.response_summary)) : h("span", { class: "muted" }, "empty or not kept")],
      ["latency", `${a.latency_ms} ms`],
      error ? ["error", h("span", { class: "error" }, error)] : null,
      ["decision", decision(a, next, run)],
      a.trace_id ? ["trace id", h("span", { class: "mono" }, a.trace_id)] : null,
    ]));
}

function requestPanel(request) {
  if (!request) return h("p", { class: "muted" }, "The request cannot be shown: the run's Endpoint was deleted.");
  return h("div", { id: "run-request" },
    h("p", {}, h("strong", { class: "mono" }, `${request.method} ${request.url}`)),
    table("Request headers (credentials redacted)", ["header", "value"],
      Object.entries(request.headers).map(([k, v]) => [h("td", { class: "mono" }, k), h("td", { class: "mono" }, v)])),
    h("p", { class: "muted" }, request.body_bytes === null ? "No body." : `Body: ${request.body_bytes} bytes, the payload above as compact JSON.`));
}

function sourceLink(run) {
  if (run.source === "schedule" && run.source_id) {
    return ["schedule ", idCell(run.source_id, `#/schedules/${encodeURIComponent(run.source_id)}`), run.fire_time ? ` fire ${when(run.fire_time)}` : ""];
  }
  if (run.source === "event" && run.source_id) return ["event ", idCell(run.source_id)];
  return run.source;
}

export async function runPage(main, ctx) {
  const id = encodeURIComponent(ctx.id);
  let run;
  try { run = await get(`/v1/task-runs/${id}`); } catch (err) {
    if (err.status === 404) { notFound(main, "run", ctx.id, "#/runs", "All runs"); return; }
    throw err;
  }
  const head = h("div");
  const actions = h("p", { class: "filters", id: "run-actions" });
  const payload = h("section", { "aria-labelledby": "payload-title" });
  const request = h("section", { "aria-labelledby": "request-title" });
  const attempts = h("section", { "aria-labelledby": "attempts-title", id: "attempts" });
  fill(main, h("h1", {}, "Run ", h("span", { class: "mono run-id" }, ctx.id)),
    h("p", {}, h("a", { href: "#/runs" }, "All runs")), head, actions, payload, request, attempts);
  let requestShown = false;
  const show = freshView();
  const refresh = () => show(async () => {
    const [current, page] = await Promise.all([get(`/v1/task-runs/${id}`), get(`/v1/task-runs/${id}/attempts`, { limit: 100 })]);
    return [current, page];
  }, ([current, page]) => {
    if (!ctx.alive()) return;
    run = current;
    fill(head, h("div", { class: "cards" },
      [["status", status(run.status)], ["endpoint", idCell(run.endpoint_id, `#/endpoints/${encodeURIComponent(run.endpoint_id)}`)],
        ["source", sourceLink(run)], ["attempts", `${run.attempt_count}${run.series > 1 ? ` (series ${run.series})` : ""}`],
        ["next retry", when(run.next_retry_at)], ["created", when(run.created_at)], ["finished", when(run.finished_at)]]
        .map(([k, v]) => h("div", { class: "card" }, h("div", { class: "muted" }, k), h("div", {}, v)))));
    fill(actions,
      CANCELLABLE.has(run.status) ? h("button", { type: "button", id: "cancel-run", class: "danger", onclick: cancel }, "Cancel run") : null,
      run.status === "dead_letter" ? h("button", { type: "button", id: "replay-run", class: "primary", onclick: replay }, "Replay") : null,
      FINISHED.has(run.status) && run.status !== "dead_letter" ? h("span", { class: "muted" }, `This run ${{ success: "succeeded", failed: "failed", cancelled: "was cancelled" }[run.status]}: nothing to cancel or replay.`) : null);
    fill(payload, h("h2", { id: "payload-title" }, "Payload"), jsonBlock("run-payload", run.payload, "payload"));
    const list = page.data;
    fill(attempts, h("h2", { id: "attempts-title" }, `Attempts (${list.length})`),
      list.length ? list.map((a, i) => attemptCard(a, list[i + 1] && list[i + 1].series === a.series ? list[i + 1] : null, run))
        : h("p", { class: "muted", id: "no-attempts" }, run.status === "cancelled" ? "Cancelled before any attempt." : `No attempt yet: the first is due ${when(run.deliver_at)}.`));
  });
  const loadRequest = async () => {
    if (requestShown) return;
    let answer = null;
    try { answer = await get(`/v1/task-runs/${id}/request`); } catch (err) { if (err.status !== 404) throw err; }
    if (!ctx.alive()) return;
    requestShown = true;
    fill(request, h("h2", { id: "request-title" }, "Request"), requestPanel(answer));
  };
  const cancel = async () => {
    if (!(await confirmDialog(`Cancel run ${ctx.id}? It will not be delivered afterwards.`, "Cancel run"))) return;
    try { await post(`/v1/task-runs/${id}/cancel`); toast("Run cancelled"); await refresh(); } catch (err) { toast(err.message, true); }
  };
  const replay = async () => {
    if (!(await confirmDialog(`Replay run ${ctx.id}? It gets a new attempt series.`, "Replay"))) return;
    try { await post(`/v1/dead-letters/${id}/replay`); toast("Run replayed"); await refresh(); } catch (err) { toast(err.message, true); }
  };
  // every 3 s while the run can still change, every 15 s once it has finished
  poll(async () => { await refresh(); await loadRequest(); }, { base: () => (FINISHED.has(run.status) ? 15000 : 3000), alive: ctx.alive });
}
