// Pieces shared by the views: error boxes, the confirm dialog, notices, entry cards, chips.

import {ApiError} from "./api.js";
import {add, chip, fmtAge, fmtTime, h, preview, shortId} from "./dom.js";

// The 8 closed edge types of the contract (EDGE_TYPES in minisphere/engine/arguments.py), each
// with its colour class in console.css.
export const EDGE_TYPES = ["relates_to", "supersedes", "caused_by", "decided", "about_person",
                           "part_of_project", "follows", "document_of"];
export const SYMMETRIC_EDGE_TYPES = new Set(["relates_to"]);

export function errorBox(error) {
  const text = error instanceof ApiError ? `${error.code}: ${error.message}`
                                         : String((error && error.message) || error);
  return h("p", {class: "error", role: "alert"}, text);
}

export function notice(text, cls = "ok") {
  const box = document.getElementById("toast");
  box.className = `toast ${cls}`;
  box.textContent = text;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { box.className = "toast"; box.textContent = ""; }, 6000);
}

/** A modal confirm dialog; resolves true when the user confirms. Cancel has the focus. */
export function confirmDialog({title, message, confirmLabel = "Confirm", details = []}) {
  return new Promise((resolve) => {
    const dialog = h("dialog", {class: "confirm", id: "confirm-dialog", "aria-labelledby": "confirm-title"});
    const cancel = h("button", {type: "button", id: "confirm-cancel"}, "Cancel");
    const ok = h("button", {type: "button", id: "confirm-ok", class: "danger"}, confirmLabel);
    const done = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    cancel.addEventListener("click", () => done(false));
    ok.addEventListener("click", () => done(true));
    dialog.addEventListener("cancel", (event) => { event.preventDefault(); done(false); });
    add(dialog, h("h2", {id: "confirm-title"}, title), h("p", null, message),
                  details.length ? h("ul", null, details.map((d) => h("li", null, d))) : null,
                  h("div", {class: "actions"}, cancel, ok));
    document.body.appendChild(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

export function section(title, ...children) {
  return h("section", {class: "card"}, title ? h("h2", null, title) : null, ...children);
}

export function loading(text = "Loading…") {
  return h("p", {class: "hint loading"}, text);
}

export function tagChips(tags, base) {
  return h("span", {class: "tags"}, (tags || []).map((tag) => {
    const cls = tag.startsWith("stale:") ? "stale" : "";
    return base ? h("a", {class: `chip tag ${cls}`, href: `${base}/list?tag=${encodeURIComponent(tag)}`}, tag)
                : chip(tag, `tag ${cls}`);
  }));
}

export function claimBadge(entry) {
  if (!entry.claimTag) return null;
  return h("span", {class: `claim claim-${entry.claimTag.toLowerCase()}`,
                    title: entry.evidenceRef ? `evidence: ${entry.evidenceRef}` : "no evidence given"},
           entry.claimTag, entry.evidenceRef ? ` · ${preview(entry.evidenceRef, 60)}` : "");
}

export function staleBadge(entry) {
  if (!entry.stale) return null;
  return h("span", {class: "badge stale", title: `stale since ${fmtTime(entry.staleSince)}`},
           `stale ${fmtAge(entry.staleSince)}`);
}

/** The one-line facts of an entry: kind, volatility, status, claim, stale. */
export function entryFacts(entry) {
  return h("span", {class: "facts"},
    h("span", {class: `badge kind-${entry.kind}`}, entry.kind),
    entry.volatility ? h("span", {class: `badge vol-${entry.volatility}`}, entry.volatility) : null,
    entry.status && entry.status !== "canonical" ? h("span", {class: `badge status-${entry.status}`}, entry.status) : null,
    claimBadge(entry), staleBadge(entry));
}

/** "superseded by <id>": a replaced entry names its newest live replacement, linked. */
export function supersededNote(base, successorId) {
  return h("span", {class: "superseded-by"},
    h("span", {class: "badge superseded"}, "superseded"), " by ",
    h("a", {href: `${base}/entry/${encodeURIComponent(successorId)}`, class: "entry-link successor",
            "data-id": successorId}, h("code", null, shortId(successorId))));
}

export function entryLink(base, entry, text) {
  return h("a", {href: `${base}/entry/${encodeURIComponent(entry.id)}`, class: "entry-link",
                 "data-id": entry.id}, text ?? preview(entry.content ?? entry.preview, 90));
}

/** A compact card for lists (recent, by tag, stale, resurface). */
export function entryRow(base, entry) {
  return h("li", {class: "entry-row", "data-id": entry.id},
    entryLink(base, entry),
    h("div", {class: "meta"}, h("code", {title: entry.id}, shortId(entry.id)), " · ",
      `updated ${fmtAge(entry.updatedAt)}`, " ", entry.kind ? entryFacts(entry) : null,
      " ", tagChips(entry.tags, base)));
}
