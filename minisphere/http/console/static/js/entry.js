// One entry: its content, facts, tags, its revisions as a diff over time, its edges in and out
// (type, direction, provenance, weight) and, with a write token, the write controls.

import {call} from "./api.js";
import {add, fmtAge, fmtNum, fmtTime, h, kv, preview, shortId} from "./dom.js";
import {renderDiff, diffWords} from "./diff.js";
import {entryFacts, section, supersededNote, SYMMETRIC_EDGE_TYPES, tagChips} from "./ui.js";
import {entryControls, unlinkButton} from "./write.js";

const API_REVISIONS = 5;           // getEntry returns the newest five revisions

function history(entry) {
  const revisions = [...entry.revisions].reverse();          // oldest first
  if (!revisions.length) {
    return section("History", h("p", {class: "hint", id: "no-revisions"},
                                "Never revised: this is the content it was captured with."));
  }
  const complete = entry.revisionCount <= revisions.length;
  const items = [];
  items.push(h("li", {class: "version first"},
    h("div", {class: "when"}, complete ? `captured ${fmtTime(entry.createdAt)}`
                                       : `an older version (${entry.revisionCount - revisions.length} earlier revisions not shown)`),
    h("details", null, h("summary", null, `${revisions[0].content.length} characters`),
      h("p", {class: "content"}, revisions[0].content))));
  revisions.forEach((revision, index) => {
    const next = index + 1 < revisions.length ? revisions[index + 1].content : entry.content;
    const {body, added, removed} = renderDiff(diffWords(revision.content, next));
    items.push(h("li", {class: "revision", "data-reason": revision.reason},
      h("div", {class: "when"},
        h("span", {class: `badge reason-${revision.reason}`}, revision.reason), " ",
        fmtTime(revision.at), ` (${fmtAge(revision.at)})`,
        h("span", {class: "delta"}, ` +${added} −${removed} characters`),
        index + 1 === revisions.length ? h("span", {class: "hint"}, " → current") : null),
      body));
  });
  const note = entry.revisionCount > API_REVISIONS
    ? h("p", {class: "hint"}, `${entry.revisionCount} revisions in all; the service returns the newest ${API_REVISIONS}.`)
    : null;
  return section(`History (${entry.revisionCount} revision${entry.revisionCount === 1 ? "" : "s"})`,
                 note, h("ol", {class: "timeline", id: "revisions"}, items));
}

function edgeRow(ctx, entry, item, refresh) {
  const {edge, direction} = item;
  const other = item.entry;
  const arrow = direction === "out" ? "→" : direction === "in" ? "←" : "↔";
  return h("tr", {class: "edge-row", "data-type": edge.type, "data-direction": direction},
    h("td", null, h("span", {class: `edge-chip t-${edge.type}`}, edge.type)),
    h("td", {class: "dir", title: direction}, arrow),
    h("td", null, h("a", {href: `${ctx.base}/entry/${encodeURIComponent(other.id)}`, class: "entry-link",
                          "data-id": other.id}, preview(other.content, 90)),
      " ", h("code", null, shortId(other.id))),
    h("td", null, edge.provenance),
    h("td", null, fmtNum(edge.weight, 2)),
    h("td", null, fmtTime(edge.createdAt)),
    ctx.canWrite ? h("td", null, unlinkButton(ctx, edge, refresh)) : null);
}

function connectionsBox(ctx, entry, connections, refresh) {
  const groups = {out: [], in: [], both: []};
  for (const item of connections.items) (groups[item.direction] || groups.both).push(item);
  const table = (items, caption) => items.length ? h("table", {class: "edges"},
    h("caption", null, caption),
    h("thead", null, h("tr", null, ["type", "", "entry", "provenance", "weight", "linked",
                                    ctx.canWrite ? "" : null].filter((x) => x !== null)
                                   .map((c) => h("th", null, c)))),
    h("tbody", null, items.map((item) => edgeRow(ctx, entry, item, refresh)))) : null;
  const body = connections.items.length
    ? [table(groups.out, `out (${groups.out.length})`), table(groups.in, `in (${groups.in.length})`),
       table(groups.both, `symmetric (${groups.both.length})`)]
    : [h("p", {class: "hint"}, "No edges.")];
  return section(`Edges (${connections.items.length})`, h("div", {id: "edges"}, body),
    connections.items.length ? h("p", {class: "hint"},
      `${[...SYMMETRIC_EDGE_TYPES].join(", ")} is symmetric; the other types point from src to dst.`) : null);
}

// A replaced entry says so first, with its newest live replacement and the chain to it; an entry
// that replaces others lists them.
function supersessionBox(ctx, supersession) {
  if (!supersession) return null;
  const link = (id) => h("a", {href: `${ctx.base}/entry/${encodeURIComponent(id)}`, class: "entry-link",
                               "data-id": id}, h("code", null, shortId(id)));
  const links = (ids, gap) => ids.flatMap((id, i) => (i ? [gap, link(id)] : [link(id)]));
  const between = supersession.chain.slice(1, -1);
  const replaced = supersession.supersededBy
    ? h("p", {class: "superseded-notice", id: "superseded-by"},
        supersededNote(ctx.base, supersession.supersededBy),
        between.length ? h("span", {class: "hint"}, " through ", links(between, " → ")) : null)
    : null;
  const replaces = supersession.supersedes.length
    ? h("p", {class: "hint", id: "supersedes"}, "replaces ", links(supersession.supersedes, ", "))
    : null;
  return replaced || replaces ? h("div", {class: "supersession"}, replaced, replaces) : null;
}

export async function entryView(root, ctx) {
  const id = ctx.id;
  const [entry, connections] = await Promise.all([
    call(ctx.workspace, "getEntry", {id}, ctx.signal),
    call(ctx.workspace, "connections", {id}, ctx.signal),
  ]);
  const refresh = () => ctx.reload();
  add(root,
    h("section", {class: "card entry", id: "entry", "data-id": entry.id},
      h("div", {class: "entry-head"},
        h("h2", null, "Entry ", h("code", {id: "entry-id"}, entry.id)),
        entryFacts(entry),
        h("a", {href: `${ctx.base}/graph?seeds=${encodeURIComponent(entry.id)}`, class: "button",
                id: "entry-graph"}, "Graph from here")),
      supersessionBox(ctx, entry.supersession),
      h("p", {class: "content full", id: "entry-content"}, entry.content),
      h("div", {class: "meta"}, tagChips(entry.tags, ctx.base)),
      h("dl", {class: "kvs grid"},
        kv("created", fmtTime(entry.createdAt)),
        kv("updated", `${fmtTime(entry.updatedAt)} (${fmtAge(entry.updatedAt)})`),
        kv("recalled", `${entry.recallCount} time${entry.recallCount === 1 ? "" : "s"}`),
        kv("importance", fmtNum(entry.importance, 2)),
        kv("source", entry.source || "—"),
        kv("claim", entry.claimTag || "—", entry.evidenceRef ? ` · evidence: ${entry.evidenceRef}` : ""),
        kv("status", entry.status), kv("kind", entry.kind), kv("volatility", entry.volatility),
        kv("staleness", entry.stale ? `stale since ${fmtTime(entry.staleSince)}`
                                    : `fresh; stale ${fmtAge(entry.staleDueAt)} (${fmtTime(entry.staleDueAt)})`),
        kv("revisions", String(entry.revisionCount)), kv("edges", String(entry.edgeCount)))),
    history(entry),
    connectionsBox(ctx, entry, connections, refresh),
    ctx.canWrite ? entryControls(ctx, entry, refresh) : null);
}
