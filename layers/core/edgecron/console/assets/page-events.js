// Events: publish with a JSON editor and see the fan-out (one run per matched endpoint).

import { freshView, get, post, poll } from "/console/api.js";
import { emptyState, field, fill, h, idCell, notFound, status, table, toast, when } from "/console/dom.js";
import { endpointLink, pager, runLink } from "/console/page-runs.js";

async function detail(main, ctx) {
  try { await get(`/v1/events/${encodeURIComponent(ctx.id)}`, { limit: 1 }); } catch (err) {
    if (err.status === 404) { notFound(main, "event", ctx.id, "#/events", "All events"); return; }
    throw err;
  }
  const box = h("div", { "aria-live": "polite" });
  fill(main, h("h1", {}, "Event ", h("span", { class: "mono" }, ctx.id)), h("p", {}, h("a", { href: "#/events" }, "All events")), box);
  const show = freshView();
  const refresh = () => show(() => get(`/v1/events/${encodeURIComponent(ctx.id)}`, { limit: 100 }), (event) => {
    if (!ctx.alive()) return;
    fill(box,
      h("p", {}, "Name ", h("strong", {}, event.name), " · fan-out ", status(event.fanout_status),
        ` · ${event.matched_endpoints} endpoint(s) matched · ${when(event.created_at)}`),
      event.fanout_error ? h("p", { class: "error" }, event.fanout_error) : null,
      h("h2", {}, "Payload"), h("pre", { class: "mono panel", tabindex: "0" }, JSON.stringify(event.payload, null, 2)),
      h("h2", {}, "Runs"),
      table("One task run per matched endpoint", ["run", "endpoint", "status", "attempts", "last code", "last error"],
        event.deliveries.map((d) => [runLink(d.task_run_id), endpointLink(d.endpoint_id), status(d.status || "expired"),
          String(d.attempt_count), d.last_status_code === null ? "-" : String(d.last_status_code), d.last_error || ""]),
        "No endpoint matched this event (yet)."));
  });
  poll(refresh, { base: 3000, alive: ctx.alive });
}

export async function render(main, ctx) {
  if (ctx.id) return detail(main, ctx);
  const name = h("input", { id: "event-name", type: "text", required: true, placeholder: "invoice.paid" });
  const payload = h("textarea", { id: "event-payload", rows: 8, spellcheck: "false", "aria-describedby": "payload-state" }, '{\n  "amount": 4200\n}');
  const state = h("p", { id: "payload-state", class: "muted" }, "Valid JSON");
  const check = () => {
    try { JSON.parse(payload.value); state.textContent = "Valid JSON"; state.className = "muted"; return true; }
    catch (err) { state.textContent = `Not JSON: ${err.message}`; state.className = "error"; return false; }
  };
  payload.addEventListener("input", check);
  const format = h("button", { type: "button", onclick: () => { if (check()) payload.value = JSON.stringify(JSON.parse(payload.value), null, 2); } }, "Format JSON");
  const form = h("form", { "aria-label": "Publish an event" },
    h("div", { class: "inline filters" }, field("Event name", name)), field("Payload (JSON)", payload), state,
    h("p", { class: "filters" }, format, h("button", { type: "submit", class: "primary", id: "publish" }, "Publish")));
  const box = h("div", { "aria-live": "polite" });
  const pages = pager("events", "events", 50, () => refresh().catch((err) => toast(err.message, true)));
  fill(main, h("h1", {}, "Events"), form, pages.el, box);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!check()) return;
    try {
      const event = await post("/v1/events", { name: name.value.trim(), payload: JSON.parse(payload.value) });
      ctx.navigate(`#/events/${encodeURIComponent(event.id)}`);
    } catch (err) { toast(err.field ? `${err.field}: ${err.message}` : err.message, true); }
  });
  const show = freshView();
  const refresh = () => show(() => get("/v1/events", { limit: 50, cursor: pages.cursor() }), (page) => {
    if (!ctx.alive()) return;
    pages.update(page.data.length, page.next_cursor);
    fill(box, page.data.length
      ? h("div", {}, table("Events, newest first", ["id", "name", "fan-out", "matched", "published"],
        page.data.map((ev) => [idCell(ev.id, `#/events/${encodeURIComponent(ev.id)}`), ev.name,
          status(ev.fanout_status), String(ev.matched_endpoints), when(ev.created_at)])))
      : emptyState("events-empty", "No events yet. Publish one with the form above, or from the command line; every active Endpoint whose events match gets a run:",
        `edgecron events publish invoice.paid --payload '{"amount": 4200}'`));
  });
  poll(refresh, { base: 10000, alive: ctx.alive });
}
