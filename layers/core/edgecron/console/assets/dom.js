// DOM helpers: every value reaches the page as text (textContent, attributes), never as markup.

/** An element: h("td", {class: "mono"}, "text", child, [more]). Strings become text nodes. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/** A sparkline of 0/1 outcomes (1 = success), oldest first, as an SVG built node by node. */
export function sparkline(outcomes, label) {
  const width = 100, height = 20;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  const step = outcomes.length > 1 ? width / (outcomes.length - 1) : width;
  const points = outcomes.map((ok, i) => `${(i * step).toFixed(1)},${ok ? 3 : height - 3}`).join(" ");
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", points || `0,${height / 2} ${width},${height / 2}`);
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#0b5cad");
  line.setAttribute("stroke-width", "2");
  svg.append(line);
  return svg;
}

export function status(value) {
  return h("span", { class: `status status-${String(value).replace(/[^A-Za-z_]/g, "")}` }, value ?? "-");
}

export function when(iso) {
  if (!iso) return "-";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

/** A time in a named IANA zone, e.g. "2026-03-01 13:00:00 Europe/Paris". */
export function inZone(iso, zone) {
  const date = new Date(iso);
  try {
    const text = new Intl.DateTimeFormat("sv-SE", {
      timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
    }).format(date);
    return `${text} ${zone}`;
  } catch {
    return `${iso} (${zone})`;
  }
}

export function toast(message, isError = false) {
  const box = document.getElementById("toast");
  const p = h("p", { class: isError ? "error" : "" }, message);
  box.append(p);
  setTimeout(() => p.remove(), 6000);
}

/** A confirmation dialog; resolves true when confirmed. */
export function confirmDialog(text, yesLabel = "Confirm") {
  const dialog = document.getElementById("confirm");
  fill(document.getElementById("confirm-text"), text);
  const yes = document.getElementById("confirm-yes");
  const no = document.getElementById("confirm-no");
  yes.textContent = yesLabel;
  return new Promise((resolve) => {
    const done = (answer) => {
      yes.removeEventListener("click", onYes);
      no.removeEventListener("click", onNo);
      dialog.removeEventListener("cancel", onNo);
      dialog.close();
      resolve(answer);
    };
    const onYes = () => done(true);
    const onNo = () => done(false);
    yes.addEventListener("click", onYes);
    no.addEventListener("click", onNo);
    dialog.addEventListener("cancel", onNo);
    dialog.showModal();
    no.focus();
  });
}

/**
 * A table with a header row; `rows` are arrays of cells (strings or nodes). It scrolls sideways in a
 * labelled region a keyboard can reach when the screen is narrower than the table (a phone).
 */
export function table(caption, headers, rows, empty = "Nothing yet.") {
  if (!rows.length) return h("p", { class: "muted" }, empty);
  return h("div", { class: "table-wrap", role: "region", tabindex: "0", "aria-label": caption }, h("table", {},
    h("caption", { class: "muted" }, caption),
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c) => (c instanceof Node && c.tagName === "TD" ? c : h("td", {}, c))))))));
}

export function field(labelText, input) {
  return h("label", {}, labelText, input);
}

/** Put `text` on the clipboard; falls back to a hidden selection where the Clipboard API is refused. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { class: "offscreen", "aria-hidden": "true", tabindex: "-1" });
    area.value = text;
    document.body.append(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch { ok = false; }
    area.remove();
    return ok;
  }
}

/** A Copy button for `text`; `what` names it for screen readers ("Copy payload"). */
export function copyButton(text, what) {
  const button = h("button", { type: "button", class: "copy", "aria-label": `Copy ${what}`, dataset: { what } }, "Copy");
  const say = (label) => {
    button.textContent = label;
    button.setAttribute("aria-label", `${label} ${what}`);
  };
  button.addEventListener("click", async () => {
    say((await copyText(text)) ? "Copied" : "Copy failed");
    setTimeout(() => say("Copy"), 2000);
  });
  return button;
}

/**
 * An id in a fixed width: its start cut with an ellipsis and its last six characters (the random part
 * of a time-ordered id), e.g. "run_01JD…P4R7TV"; the whole id stays in the text (select, copy, find)
 * and in the title, with a Copy button.
 */
export function idCell(id, href) {
  if (!id) return h("span", { class: "muted" }, "-");
  const parts = id.length > 16
    ? [h("span", { class: "id-head" }, id.slice(0, -6)), h("span", { class: "id-tail" }, id.slice(-6))]
    : [id];
  const shown = href ? h("a", { href, class: "id-text mono", title: id }, parts) : h("span", { class: "id-text mono", title: id }, parts);
  return h("span", { class: "id" }, shown, copyButton(id, id));
}

/** What to do when a list is empty: a sentence and the command that makes the first item. */
export function emptyState(id, sentence, command) {
  return h("div", { class: "panel empty", id },
    h("p", {}, sentence),
    command ? h("div", { class: "command" }, h("pre", { tabindex: "0" }, h("code", {}, command)), copyButton(command, "command")) : null);
}

/** The page for an id the API does not know. */
export function notFound(main, kind, id, back, backLabel) {
  document.title = `Not found · EdgeCron console`;
  fill(main, h("section", { class: "panel not-found", id: "not-found", "aria-labelledby": "not-found-title" },
    h("h1", { id: "not-found-title" }, `No ${kind} ${id}`),
    h("p", {}, `This App has no ${kind} with that id: it may have been deleted, belong to another App, or its history may have expired (90 days).`),
    h("p", {}, h("a", { href: back }, backLabel))));
}

/** Pretty-printed JSON with a Copy button. */
export function jsonBlock(id, value, what) {
  const text = value === undefined ? "null" : JSON.stringify(value, null, 2);
  return h("div", { class: "json" }, h("pre", { id, tabindex: "0" }, h("code", {}, text)), copyButton(text, what));
}
