// Write controls, shown only to a token that may write (a workspace write token or the admin
// token). A read token never sees them, and the service refuses its writes anyway (403).
// Destructive actions (forget, unlink, deprecate) ask first.

import {call} from "./api.js";
import {h, preview, shortId} from "./dom.js";
import {confirmDialog, EDGE_TYPES, errorBox, notice, section} from "./ui.js";

function splitTags(text) {
  return text.split(",").map((t) => t.trim()).filter(Boolean);
}

function select(name, values, selected, {blank} = {}) {
  return h("select", {name, id: name},
    blank !== undefined ? h("option", {value: ""}, blank) : null,
    values.map((v) => h("option", {value: v, selected: v === selected}, v)));
}

/** Submit handler wrapper: disables the form while the call runs, shows errors inside it. */
function handle(form, work) {
  return async (event) => {
    event.preventDefault();
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    form.querySelectorAll(".error").forEach((e) => e.remove());
    try {
      await work();
    } catch (error) {
      if (error.status !== 401) form.appendChild(errorBox(error));
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  };
}

export function unlinkButton(ctx, edge, refresh) {
  return h("button", {type: "button", class: "small danger unlink", onclick: async () => {
    const ok = await confirmDialog({
      title: "Remove this edge?", confirmLabel: "Unlink",
      message: `${edge.type} from ${shortId(edge.src)} to ${shortId(edge.dst)} will be removed.`});
    if (!ok) return;
    try {
      await call(ctx.workspace, "unlink", {src: edge.src, dst: edge.dst, type: edge.type});
      notice("Edge removed.");
      refresh();
    } catch (error) {
      if (error.status !== 401) notice(`${error.code}: ${error.message}`, "error");
    }
  }}, "unlink");
}

export function entryControls(ctx, entry, refresh) {
  const addition = h("textarea", {name: "addition", id: "append-text", rows: 3, required: true,
                                  placeholder: "text to add (the current content is kept as a revision)"});
  const appendTags = h("input", {name: "tags", id: "append-tags", placeholder: "tags to add, comma-separated"});
  const appendForm = h("form", {class: "write-form", id: "append-form"},
    h("h3", null, "Append"), addition, appendTags,
    h("button", {type: "submit", class: "primary"}, "Append"));
  appendForm.addEventListener("submit", handle(appendForm, async () => {
    const args = {id: entry.id, addition: addition.value};
    const tags = splitTags(appendTags.value);
    if (tags.length) args.tags = tags;
    await call(ctx.workspace, "append", args);
    notice("Appended.");
    refresh();
  }));

  const status = select("status", ["canonical", "draft", "deprecated"], entry.status);
  const statusForm = h("form", {class: "write-form inline", id: "status-form"},
    h("h3", null, "Status"), status, h("button", {type: "submit"}, "Set status"));
  statusForm.addEventListener("submit", handle(statusForm, async () => {
    if (status.value === entry.status) return;
    if (status.value === "deprecated") {
      const ok = await confirmDialog({title: "Deprecate this entry?", confirmLabel: "Deprecate",
        message: "Deprecated entries are left out of every recall and graph walk."});
      if (!ok) return;
    }
    await call(ctx.workspace, "setStatus", {id: entry.id, status: status.value});
    notice(`Status set to ${status.value}.`);
    refresh();
  }));

  const dst = h("input", {name: "dst", id: "link-dst", required: true, placeholder: "id of the other entry",
                          autocomplete: "off", spellcheck: "false"});
  const type = select("link-type", EDGE_TYPES, "relates_to");
  const weight = h("input", {name: "weight", id: "link-weight", type: "number", min: "0.01", max: "1",
                             step: "0.01", value: "1"});
  const provenance = select("link-provenance", ["explicit", "inferred", "system"], "explicit");
  const linkForm = h("form", {class: "write-form", id: "link-form"},
    h("h3", null, "Link from this entry"),
    h("div", {class: "row"}, dst, type, h("label", null, "weight ", weight), provenance,
      h("button", {type: "submit"}, "Link")));
  linkForm.addEventListener("submit", handle(linkForm, async () => {
    await call(ctx.workspace, "link", {src: entry.id, dst: dst.value.trim(), type: type.value,
                                       weight: Number(weight.value), provenance: provenance.value});
    notice(`Linked (${type.value}).`);
    refresh();
  }));

  const forget = h("button", {type: "button", class: "danger", id: "forget", onclick: async () => {
    const ok = await confirmDialog({
      title: "Forget this entry permanently?", confirmLabel: "Forget",
      message: "Its content, tags, edges and revisions are deleted and cannot be brought back " +
               "(older snapshots still hold it until they are pruned).",
      details: [preview(entry.content, 140)]});
    if (!ok) return;
    try {
      await call(ctx.workspace, "forget", {id: entry.id});
      notice("Forgotten.");
      ctx.navigate(`${ctx.base}/overview`);
    } catch (error) {
      if (error.status !== 401) notice(`${error.code}: ${error.message}`, "error");
    }
  }}, "Forget…");

  return section("Change this entry", h("div", {class: "write-controls", id: "write-controls"},
    appendForm, statusForm, linkForm,
    h("div", {class: "write-form"}, h("h3", null, "Forget"), forget)));
}

export async function captureView(root, ctx) {
  const content = h("textarea", {name: "content", id: "capture-content", rows: 6, required: true,
                                 placeholder: "what should this workspace remember?"});
  const tags = h("input", {name: "tags", id: "capture-tags", placeholder: "tags, comma-separated"});
  const kind = select("capture-kind", ["episodic", "semantic"], "", {blank: "kind: default (semantic)"});
  const volatility = select("capture-volatility", ["durable", "state", "volatile"], "",
                            {blank: "volatility: infer from the text"});
  const status = select("capture-status", ["canonical", "draft"], "canonical");
  const importance = h("input", {name: "importance", id: "capture-importance", type: "number",
                                 min: "0", max: "1", step: "0.05", value: "0"});
  const claim = select("capture-claim", ["VERIFIED", "INFERRED", "UNKNOWN"], "", {blank: "claim: none"});
  const evidence = h("input", {name: "evidenceRef", id: "capture-evidence", placeholder: "evidence reference"});
  const source = h("input", {name: "source", id: "capture-source", placeholder: "source (who or what said it)"});
  const outcome = h("div", {id: "capture-outcome"});
  const form = h("form", {class: "write-form capture write-controls", id: "capture-form"},
    content, tags,
    h("div", {class: "row"}, kind, volatility, status, h("label", null, "importance ", importance)),
    h("div", {class: "row"}, claim, evidence, source),
    h("button", {type: "submit", class: "primary"}, "Capture"), outcome);
  form.addEventListener("submit", handle(form, async () => {
    const args = {content: content.value};
    const tagList = splitTags(tags.value);
    if (tagList.length) args.tags = tagList;
    if (kind.value) args.kind = kind.value;
    if (volatility.value) args.volatility = volatility.value;
    if (status.value !== "canonical") args.status = status.value;
    if (Number(importance.value)) args.importance = Number(importance.value);
    if (claim.value) args.claimTag = claim.value;
    if (evidence.value.trim()) args.evidenceRef = evidence.value.trim();
    if (source.value.trim()) args.source = source.value.trim();
    const answer = await call(ctx.workspace, "capture", args);
    const id = answer.id || answer.matchId;
    outcome.replaceChildren(h("p", {class: "ok"}, `${answer.outcome}: `,
      id ? h("a", {href: `${ctx.base}/entry/${encodeURIComponent(id)}`, class: "entry-link", "data-id": id}, id) : ""));
    if (answer.outcome === "stored") form.reset();
  }));
  root.append(section("Capture", form));
  content.focus();
}
