// DOM helpers. Every piece of data goes into the page as a text node or an attribute value
// (never as markup): memory content is untrusted. There is no innerHTML anywhere.

const SVG_NS = "http://www.w3.org/2000/svg";

function apply(el, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "text") {
      el.textContent = String(value);
    } else if (name === "href") {
      el.setAttribute("href", safeHref(value));
    } else if (name === "value" && "value" in el) {
      el.value = String(value);
    } else if (name === "checked" || name === "selected" || name === "disabled") {
      el[name] = Boolean(value);
    } else if (name === "style" && typeof value === "object") {
      for (const [prop, v] of Object.entries(value)) el.style.setProperty(prop, String(v));
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** h("div", {class: "x", onclick: f}, "text", otherNode, [more]) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/** Links are the console's own routes only (hash routes or same-origin paths). */
export function safeHref(value) {
  const text = String(value);
  return text.startsWith("#") || (text.startsWith("/") && !text.startsWith("//")) ? text : "#";
}

/** Append children, skipping null/false (Element.append would insert them as "null" text). */
export function add(el, ...children) {
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

// ---- formatting -------------------------------------------------------------------------------
export function fmtTime(ms) {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return "—";
  return d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

export function fmtAge(ms, now = Date.now()) {
  if (ms === null || ms === undefined) return "—";
  let seconds = Math.round((now - ms) / 1000);
  const future = seconds < 0;
  seconds = Math.abs(seconds);
  let text;
  if (seconds < 60) text = `${seconds} s`;
  else if (seconds < 3600) text = `${Math.round(seconds / 60)} min`;
  else if (seconds < 86400 * 2) text = `${Math.round(seconds / 3600)} h`;
  else if (seconds < 86400 * 60) text = `${Math.round(seconds / 86400)} d`;
  else if (seconds < 86400 * 730) text = `${Math.round(seconds / (86400 * 30))} mo`;
  else text = `${Math.round(seconds / (86400 * 365))} y`;
  return future ? `in ${text}` : `${text} ago`;
}

export function fmtNum(value, digits = 3) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 0.001 || abs >= 1e6)) return value.toExponential(2);
  return value.toFixed(digits).replace(/\.?0+$/, "") || "0";
}

export function preview(text, chars = 80) {
  const flat = String(text || "").replace(/\s+/g, " ").trim();
  return flat.length > chars ? flat.slice(0, chars - 1).trimEnd() + "…" : flat;
}

export function shortId(id) {
  return String(id || "").slice(0, 8);
}

/** A labelled value: <div class="kv"><dt>label</dt><dd>value</dd></div> */
export function kv(label, ...value) {
  return h("div", {class: "kv"}, h("dt", null, label), h("dd", null, ...value));
}

export function chip(text, cls = "") {
  return h("span", {class: `chip ${cls}`.trim()}, text);
}

/** Render a long list in slices, so a thousand rows never block the page at once. */
export function renderInSlices(container, items, render, {first = 100, step = 200, after = null} = {}) {
  let shown = 0;
  const more = h("button", {type: "button", class: "more"});
  function next(count) {
    const fragment = document.createDocumentFragment();
    const until = Math.min(items.length, shown + count);
    for (; shown < until; shown++) fragment.appendChild(render(items[shown], shown));
    container.appendChild(fragment);
    if (shown < items.length) {
      more.textContent = `Show ${Math.min(step, items.length - shown)} more (${items.length - shown} left)`;
      (after || container).after(more);
    } else {
      more.remove();
    }
  }
  more.addEventListener("click", () => next(step));
  next(first);
  return more;
}

/** Run `work(item)` over items with at most `limit` in flight. */
export async function pool(items, limit, work) {
  let index = 0;
  async function lane() {
    while (index < items.length) {
      const item = items[index++];
      try { await work(item); } catch (_e) { /* each item shows its own error */ }
    }
  }
  await Promise.all(Array.from({length: Math.min(limit, items.length)}, lane));
}
