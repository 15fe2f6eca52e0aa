// Overview (getBrief, getStats, tag vocabulary, recent entries), entries by tag, and the
// "needs revalidation" list (stale entries with the question to ask before relying on them).

import {call} from "./api.js";
import {fmtAge, fmtNum, fmtTime, h, renderInSlices, shortId} from "./dom.js";
import {entryRow, section} from "./ui.js";

const STALE_PREFIX = "stale:as-of:";
const REVALIDATE_PREVIEW_CHARS = 120;   // REVALIDATE_PREVIEW_CHARS in minisphere/engine/constants.py
const LIST_MAX = 200;                   // listRecent's most

function counts(title, byName, total) {
  const rows = Object.entries(byName || {}).sort((a, b) => b[1] - a[1]);
  return h("div", {class: "counts"}, h("h3", null, title), h("ul", null, rows.map(([name, n]) => {
    const bar = h("span", {class: "bar count"});
    bar.style.width = `${total ? (100 * n) / total : 0}%`;
    return h("li", null, h("span", {class: "blabel"}, name), h("span", {class: "track"}, bar),
             h("span", {class: "bvalue"}, String(n)));
  })));
}

function topicList(topics, base) {
  const most = Math.max(1, ...topics.map((t) => t.count));
  return h("ul", {class: "topics"}, topics.map((t) => {
    const bar = h("span", {class: "bar count"});
    bar.style.width = `${(100 * t.count) / most}%`;
    return h("li", null, h("a", {class: "blabel", href: `${base}/list?tag=${encodeURIComponent(t.tag)}`}, t.tag),
             h("span", {class: "track"}, bar), h("span", {class: "bvalue"}, String(t.count)));
  }));
}

// One open supersession hint: the new entry, what changed, and the entry it may replace.
function hintPair(base, hint) {
  const changed = `${hint.before.join(", ") || "—"} → ${hint.after.join(", ") || "—"}`;
  return h("li", {class: "hint-pair", "data-id": hint.entry.id},
    h("ul", {class: "entries"}, entryRow(base, hint.entry)),
    h("p", {class: "changed"}, "may replace (", h("code", null, changed), "):"),
    h("ul", {class: "entries candidate"}, entryRow(base, hint.candidate)));
}

export async function overviewView(root, ctx) {
  const [brief, stats, tags, recent] = await Promise.all([
    call(ctx.workspace, "getBrief", {}, ctx.signal),
    call(ctx.workspace, "getStats", {}, ctx.signal),
    call(ctx.workspace, "getTags", {}, ctx.signal),
    call(ctx.workspace, "listRecent", {n: 20}, ctx.signal),
  ]);
  const staleCount = tags.tags.filter((t) => t.tag.startsWith(STALE_PREFIX))
                              .reduce((n, t) => n + t.count, 0);
  const activity = brief.recentActivity;
  const vocabulary = h("ul", {class: "vocabulary", id: "tag-vocabulary"});
  const sortedTags = [...tags.tags].sort((a, b) => b.count - a.count || a.tag.localeCompare(b.tag));
  root.append(
    h("div", {class: "stat-cards", id: "stats"},
      h("div", {class: "stat"}, h("strong", {id: "stat-count"}, String(stats.count)), " entries"),
      h("div", {class: "stat"}, h("strong", null, String(stats.edgeCount)), " edges"),
      h("div", {class: "stat"}, h("strong", null, String(stats.unclassified)), " unclassified"),
      h("div", {class: "stat"}, h("strong", null, fmtNum(stats.avgImportance, 2)), " avg importance"),
      h("a", {class: "stat link", href: `${ctx.base}/stale`},
        h("strong", {id: "stat-stale"}, String(staleCount)), " need revalidation")),
    h("div", {class: "columns"},
      h("div", {class: "main-col"},
        section(`Recent activity (last ${Math.round(activity.windowMs / 86_400_000)} days)`,
          h("p", null, `${activity.captured} captured, ${activity.revised} revised.`),
          h("ul", {class: "entries", id: "brief-recent"}, activity.entries.map((e) => entryRow(ctx.base, e)))),
        brief.revalidate.length ? section("Supersession hints",
          h("p", {class: "hint"}, "New entries that restate an earlier one with a detail changed (getBrief). " +
            "Link supersedes to confirm, unlink their relates_to edge to dismiss."),
          h("ul", {class: "hint-pairs", id: "supersession-hints"}, brief.revalidate.map((r) => hintPair(ctx.base, r)))) : null,
        section("Resurface", h("p", {class: "hint"}, "Entries worth a look again (getBrief)."),
          brief.resurface.length ? h("ul", {class: "entries", id: "resurface"}, brief.resurface.map((e) => entryRow(ctx.base, e)))
                                 : h("p", {class: "hint"}, "Nothing to resurface.")),
        section("Latest entries", h("ul", {class: "entries", id: "recent"}, recent.items.map((e) => entryRow(ctx.base, e))))),
      h("aside", {class: "side-col"},
        section("Top topics", topicList(stats.topTopics, ctx.base)),
        section("Shape", counts("status", stats.byStatus, stats.count), counts("kind", stats.byKind, stats.count),
                counts("volatility", stats.byVolatility, stats.count),
                h("p", {class: "hint"}, `${stats.unclassified} entries were captured without a kind or volatility (inferred).`)),
        section(`Tags (${tags.tags.length})`, vocabulary))));
  renderInSlices(vocabulary, sortedTags, (t) => h("li", null,
    h("a", {class: `chip tag${t.tag.startsWith("stale:") ? " stale" : ""}`, href: `${ctx.base}/list?tag=${encodeURIComponent(t.tag)}`},
      t.tag, " ", h("small", null, String(t.count)))), {first: 150, step: 300});
}

export async function listView(root, ctx) {
  const tag = ctx.params.get("tag") || "";
  const args = {n: LIST_MAX};
  if (tag) args.tag = tag;
  const found = await call(ctx.workspace, "listRecent", args, ctx.signal);
  const list = h("ul", {class: "entries", id: "tag-entries"});
  root.append(section(tag ? `Tagged ${tag}` : "Latest entries",
    h("p", {class: "hint"}, `${found.items.length} entr${found.items.length === 1 ? "y" : "ies"}, newest first` +
                             (found.items.length >= LIST_MAX ? ` (the newest ${LIST_MAX})` : "") + "."),
    list));
  renderInSlices(list, found.items, (e) => entryRow(ctx.base, e));
}

/** The question recall would attach to a stale entry (revalidate_prompt in staleness.py). */
export function revalidateQuestion(entry) {
  let text = String(entry.content).split(/\s+/).filter(Boolean).join(" ");
  if (text.length > REVALIDATE_PREVIEW_CHARS) text = text.slice(0, REVALIDATE_PREVIEW_CHARS).trimEnd() + "…";
  const confirmed = new Date(entry.updatedAt).toISOString().slice(0, 10);
  return `Last confirmed ${confirmed} (${entry.volatility}): is this still true? "${text}"`;
}

export async function staleView(root, ctx) {
  const tags = await call(ctx.workspace, "getTags", {}, ctx.signal);
  const staleTags = tags.tags.filter((t) => t.tag.startsWith(STALE_PREFIX))
                             .sort((a, b) => a.tag.localeCompare(b.tag));     // longest overdue first
  const total = staleTags.reduce((n, t) => n + t.count, 0);
  const lists = await Promise.all(staleTags.map((t) =>
    call(ctx.workspace, "listRecent", {n: LIST_MAX, tag: t.tag}, ctx.signal)));
  const seen = new Set();
  const entries = [];
  for (const found of lists) {
    for (const entry of found.items.slice().sort((a, b) => a.updatedAt - b.updatedAt)) {
      if (!seen.has(entry.id) && entry.stale) { seen.add(entry.id); entries.push(entry); }
    }
  }
  const list = h("ol", {class: "stale-list", id: "stale-list"});
  root.append(section(`Needs revalidation (${total})`,
    h("p", {class: "hint"}, "Entries older than their volatility allows (durable 365 days, state 30, " +
                             "volatile 2), longest overdue first. Ask the question; an append or update " +
                             "confirms the entry."),
    total > entries.length ? h("p", {class: "warn"}, `Showing ${entries.length} of ${total}: at most ${LIST_MAX} per day.`) : null,
    entries.length ? list : h("p", {class: "hint", id: "nothing-stale"}, "Nothing is stale.")));
  renderInSlices(list, entries, (entry) => h("li", {class: "stale-item", "data-id": entry.id},
    h("p", {class: "question"}, revalidateQuestion(entry)),
    h("div", {class: "meta"},
      h("a", {href: `${ctx.base}/entry/${encodeURIComponent(entry.id)}`, class: "entry-link", "data-id": entry.id},
        h("code", null, shortId(entry.id))),
      ` · stale since ${fmtTime(entry.staleSince)} (${fmtAge(entry.staleSince)}) · ${entry.volatility}`,
      entry.tags.filter((t) => !t.startsWith(STALE_PREFIX)).length
        ? ` · ${entry.tags.filter((t) => !t.startsWith(STALE_PREFIX)).join(", ")}` : "")));
}
