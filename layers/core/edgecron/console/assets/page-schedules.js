// Schedules: create, next fires in the schedule's zone and UTC, fire timeline by status, pause/resume,
// trigger now; jitter and overlap policy in the form and on the detail.

import { get, post, poll } from "/console/api.js";
import { emptyState, field, fill, h, idCell, inZone, notFound, status, table, toast, when } from "/console/dom.js";
import { pager, runLink } from "/console/page-runs.js";

const FIRE_STATUSES = ["COMPLETED", "FAILED", "MISSED", "CANCELLED", "SKIPPED", "BUFFERED", "SCHEDULED"];
const OVERLAP_POLICIES = ["ALLOW", "SKIP", "BUFFER_ONE"];

function timeline(fires) {
  const oldestFirst = [...fires].reverse();
  return h("div", {},
    h("ul", { class: "timeline", id: "fire-timeline", "aria-label": `Last ${fires.length} fires, oldest first` },
      oldestFirst.map((f) => h("li", { class: `fire-${f.status.replace(/[^A-Z]/g, "")}`, title: `${f.fire_time} ${f.status}${f.due_at !== f.fire_time ? ` (due ${f.due_at})` : ""}`,
        "aria-label": `${f.fire_time}: ${f.status}` }))),
    h("ul", { class: "legend", "aria-label": "Legend" }, FIRE_STATUSES.map((s) => h("li", { class: `fire-${s}` }, s))));
}

async function detail(main, ctx) {
  const id = encodeURIComponent(ctx.id);
  try { await get(`/v1/schedules/${id}`); } catch (err) {
    if (err.status === 404) { notFound(main, "schedule", ctx.id, "#/schedules", "All schedules"); return; }
    throw err;
  }
  const head = h("div");
  const preview = h("div");
  const fires = h("div", { "aria-live": "polite" });
  fill(main, h("h1", {}, "Schedule ", h("span", { class: "mono" }, ctx.id)), h("p", {}, h("a", { href: "#/schedules" }, "All schedules")), head, preview, fires);
  const refresh = async () => {
    const [schedule, history] = await Promise.all([get(`/v1/schedules/${id}`, { preview: 5 }), get(`/v1/schedules/${id}/fires`, { limit: 50 })]);
    if (!ctx.alive()) return;
    const toggle = schedule.status === "ACTIVE"
      ? h("button", { type: "button", id: "pause", class: "danger", onclick: () => act("pause") }, "Pause")
      : h("button", { type: "button", id: "resume", class: "primary", onclick: () => act("resume") }, "Resume");
    fill(head, h("div", { class: "cards" },
      h("div", { class: "card" }, h("div", { class: "muted" }, "status"), status(schedule.status)),
      h("div", { class: "card" }, h("div", { class: "muted" }, "when"), schedule.cron || schedule.at || "-"),
      h("div", { class: "card" }, h("div", { class: "muted" }, "zone"), schedule.timezone),
      h("div", { class: "card", id: "schedule-jitter" }, h("div", { class: "muted" }, "jitter"), `${schedule.jitter_sec} s`),
      h("div", { class: "card", id: "schedule-overlap" }, h("div", { class: "muted" }, "overlap policy"), schedule.overlap_policy),
      h("div", { class: "card", id: "schedule-failures" }, h("div", { class: "muted" }, "failed fires in a row"), String(schedule.consecutive_failures)),
      h("div", { class: "card" }, h("div", { class: "muted" }, "next fire"), when(schedule.next_fire_time)),
      h("div", { class: "card" }, h("div", { class: "muted" }, "last fire"), when(schedule.last_fire_time))),
      schedule.status === "PAUSED"
        ? h("p", { class: "panel", id: "pause-reason" }, h("strong", {}, "Paused: "), schedule.pause_reason || "no reason was given",
          schedule.consecutive_failures ? ` (after ${schedule.consecutive_failures} failed ${schedule.consecutive_failures === 1 ? "fire" : "fires"} in a row)` : "",
          ". Resume to fire again; resuming resets the failure count.")
        : null,
      h("p", {}, schedule.finished ? "This schedule has no more fire times." : [toggle, " ",
        schedule.status === "ACTIVE" ? h("button", { type: "button", id: "trigger", onclick: trigger }, "Trigger now") : ""]));
    fill(preview, h("h2", {}, "Next fires"),
      table("Next fire times", [`in ${schedule.timezone}`, "in UTC"],
        (schedule.preview || []).map((t) => [inZone(t, schedule.timezone), inZone(t, "UTC")]),
        schedule.status === "PAUSED" ? "No upcoming fire times while the schedule is paused." : "No upcoming fire times."));
    fill(fires, h("h2", {}, "Fire timeline"), timeline(history.data),
      table("Recent fires, newest first", ["fire time", "due at", "status", "duration", "runs", "error"],
        history.data.map((f) => [[when(f.fire_time), f.manual ? " (manual)" : ""], when(f.due_at), status(f.status),
          f.duration_ms === null ? "-" : `${f.duration_ms} ms`,
          h("td", {}, f.runs.length ? f.runs.map((r) => h("div", {}, runLink(r.id), " ", status(r.status))) : h("span", { class: "muted" }, "none")), f.error || ""]),
        "No fires yet. The first fire time is in Next fires above."));
  };
  const act = async (verb) => {
    try { await post(`/v1/schedules/${id}/${verb}`); toast(`Schedule ${verb === "pause" ? "paused" : "resumed"}`); await refresh(); }
    catch (err) { toast(err.message, true); }
  };
  const trigger = async () => {
    try { const fire = await post(`/v1/schedules/${id}/trigger`); toast(`Fired now: ${fire.fire_time}`); await refresh(); }
    catch (err) { toast(err.message, true); }
  };
  poll(refresh, { base: 3000, alive: ctx.alive });
}

export async function render(main, ctx) {
  if (ctx.id) return detail(main, ctx);
  const name = h("input", { id: "new-schedule-name", type: "text" });
  const cron = h("input", { id: "new-schedule-cron", type: "text", required: true, placeholder: "*/10 * * * * *" });
  const zone = h("input", { id: "new-schedule-zone", type: "text", value: "UTC" });
  const endpoints = h("input", { id: "new-schedule-endpoints", type: "text", placeholder: "ep_…, ep_… (empty = all active)" });
  const payload = h("textarea", { id: "new-schedule-payload", rows: 3 }, "{}");
  const jitter = h("input", { id: "new-schedule-jitter", type: "number", min: 0, max: 3600, step: 1, value: 0 });
  const overlap = h("select", { id: "new-schedule-overlap" }, OVERLAP_POLICIES.map((p) => h("option", { value: p }, p)));
  const form = h("form", { class: "inline", "aria-label": "Create a schedule" },
    field("Name", name), field("Cron (5 or 6 fields, seconds first)", cron), field("Time zone", zone),
    field("Endpoints", endpoints), field("Payload (JSON)", payload), field("Jitter (seconds, 0-3600)", jitter),
    field("While the previous fire is open", overlap), h("button", { type: "submit", class: "primary", id: "create-schedule" }, "Create schedule"));
  const box = h("div", { "aria-live": "polite" });
  const pages = pager("schedules", "schedules", 50, () => refresh().catch((err) => toast(err.message, true)));
  fill(main, h("h1", {}, "Schedules"), form, pages.el, box);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let body;
    try { body = JSON.parse(payload.value || "null"); } catch (err) { toast(`Payload is not JSON: ${err.message}`, true); return; }
    try {
      const made = await post("/v1/schedules", {
        name: name.value.trim() || undefined, cron: cron.value.trim(), timezone: zone.value.trim() || "UTC",
        endpoint_ids: endpoints.value.split(",").map((x) => x.trim()).filter(Boolean), payload: body,
        jitter_sec: Number(jitter.value || 0), overlap_policy: overlap.value,
      });
      ctx.navigate(`#/schedules/${encodeURIComponent(made.id)}`);
    } catch (err) { toast(err.field ? `${err.field}: ${err.message}` : err.message, true); }
  });
  const refresh = async () => {
    const page = await get("/v1/schedules", { limit: 50, cursor: pages.cursor() });
    if (!ctx.alive()) return;
    pages.update(page.data.length, page.next_cursor);
    fill(box, page.data.length
      ? h("div", {}, table("Schedules of this App", ["id", "name", "when", "zone", "status", "next fire", "last fire"],
        page.data.map((s) => [idCell(s.id, `#/schedules/${encodeURIComponent(s.id)}`), s.name || "",
          s.cron || s.at || "", s.timezone, status(s.status), when(s.next_fire_time), when(s.last_fire_time)])))
      : emptyState("schedules-empty", "No schedules yet. Create one with the form above, or from the command line:",
        'edgecron schedules create --cron "*/5 * * * *" --endpoint ep_… --payload \'{"report": "daily"}\''));
  };
  poll(refresh, { base: 10000, alive: ctx.alive });
}
