// Search: recall with every option, each result with its score breakdown drawn as bars, the
// query the engine actually ran (queryUsed) and the revalidate prompts of stale results.
// Keyboard: "/" focuses the query, Enter searches, ArrowDown/ArrowUp (or j/k) walk the
// results, Enter opens one, "e" expands its content.

import {call, isAbort} from "./api.js";
import {fmtNum, fmtTime, h, kv, replace, shortId} from "./dom.js";
import {entryFacts, errorBox, loading, section, supersededNote, tagChips} from "./ui.js";

const ARMS = [["keyword", "keyword"], ["graph", "graph"], ["tag", "tag context"],
              ["vector", "vector"], ["recency", "recency"]];
const FACTORS = [["decay", "decay"], ["recall", "recall count"], ["importance", "importance"],
                 ["tagOverlap", "tag overlap"], ["rolledUp", "rolled-up"],
                 ["subject", "subject named"], ["brevity", "brevity"], ["superseded", "superseded"]];
const MAX_TOP_K = 50;

function option(value, label, selected) {
  return h("option", {value, selected: String(selected) === String(value)}, label);
}

function searchForm(ctx, params, tags) {
  const q = params.get("q") || "";
  const query = h("input", {id: "search-query", type: "search", name: "q", value: q,
                            required: true, maxlength: 4000, autocomplete: "off",
                            placeholder: "what do you want to recall?  (press / to come here)",
                            "aria-label": "query"});
  const topK = h("input", {id: "search-topk", type: "number", name: "topK", min: 1,
                           max: MAX_TOP_K, value: params.get("topK") || "10"});
  const tag = h("input", {id: "search-tag", name: "tag", value: params.get("tag") || "",
                          list: "search-tag-list", autocomplete: "off", placeholder: "any"});
  const tagList = h("datalist", {id: "search-tag-list"},
                    tags.map((t) => h("option", {value: t.tag}, `${t.count}`)));
  const kind = h("select", {id: "search-kind", name: "kind"},
                 option("", "any", params.get("kind") || ""),
                 option("episodic", "episodic", params.get("kind")),
                 option("semantic", "semantic", params.get("kind")));
  const hops = h("select", {id: "search-hops", name: "hops"},
                 [0, 1, 2, 3].map((n) => option(n, String(n), params.get("hops") || "1")));
  const full = h("input", {id: "search-full", type: "checkbox", name: "full",
                           checked: params.get("full") === "1"});
  const form = h("form", {id: "search-form", class: "search-form", role: "search",
                          onsubmit: (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    next.set("q", query.value.trim());
    if (topK.value && topK.value !== "10") next.set("topK", topK.value);
    if (tag.value.trim()) next.set("tag", tag.value.trim());
    if (kind.value) next.set("kind", kind.value);
    if (hops.value !== "1") next.set("hops", hops.value);
    if (full.checked) next.set("full", "1");
    next.set("t", String(Date.now() % 1e6));        // the same query again runs again
    ctx.navigate(`${ctx.base}/search?${next}`);
  }},
    h("div", {class: "row"}, query, h("button", {type: "submit", class: "primary",
                                                 id: "search-submit"}, "Recall")),
    h("div", {class: "row options"},
      h("label", null, "top K ", topK), h("label", null, "tag ", tag, tagList),
      h("label", null, "kind ", kind), h("label", null, "graph hops ", hops),
      h("label", null, full, " full content (no snippet budget)")));
  query.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown") {
      const first = document.querySelector(".result");
      if (first) { event.preventDefault(); first.focus(); }
    }
  });
  return {form, query};
}

// ---- the breakdown chart ------------------------------------------------------------------------
function bar(cls, fraction, {align = "left"} = {}) {
  const width = `${Math.max(0, Math.min(1, fraction)) * 100}%`;
  const el = h("span", {class: `bar ${cls}`, "data-fraction": fmtNum(fraction, 4)});
  el.style.width = width;
  if (align === "right") el.style.right = "50%";
  if (align === "center-right") el.style.left = "50%";
  return h("span", {class: "track"}, el);
}

/** A multiplier around 1 (no opinion): boosts grow right of the centre, penalties left. */
function multiplierBar(cls, factor) {
  const span = Math.log(2.5);               // ×2.5 (or ×0.4) fills half the track
  const amount = Math.min(1, Math.abs(Math.log(Math.max(factor, 1e-6))) / span) / 2;
  const el = h("span", {class: `bar ${cls} ${factor >= 1 ? "up" : "down"}`,
                        "data-fraction": fmtNum(factor, 4)});
  el.style.width = `${amount * 100}%`;
  if (factor >= 1) el.style.left = "50%";
  else el.style.right = "50%";
  return h("span", {class: "track centred"}, el);
}

function armNote(name, detail) {
  const parts = [`#${detail.rank}`];
  if (name === "keyword") {
    parts.push(`bm25 ${fmtNum(detail.bm25)}`, `proximity ${fmtNum(detail.proximity)}`,
               `feedback ${fmtNum(detail.feedback)}`);
  } else if (name === "graph") {
    parts.push(`hop ${detail.hop}`, detail.via ? `via ${shortId(detail.via)}` : "seed");
  } else if (name === "tag") {
    parts.push(`tag ${detail.tag}`, `weight ${fmtNum(detail.weight)}`);
  } else if (name === "vector") {
    parts.push(`cosine ${fmtNum(detail.cosine)}`);
  } else if (name === "recency") {
    parts.push(fmtTime(detail.createdAt));
  }
  return parts.join(" · ");
}

export function breakdownChart(breakdown, maxFused) {
  const rows = [];
  for (const [name, label] of ARMS) {
    const detail = breakdown[name];
    if (!detail) continue;
    rows.push(h("div", {class: "brow", "data-factor": name},
      h("span", {class: "blabel"}, label), bar(`arm arm-${name}`, detail.rrf / maxFused),
      h("span", {class: "bvalue"}, `${fmtNum(detail.rrf, 4)} `, h("small", null, armNote(name, detail)))));
  }
  rows.push(h("div", {class: "brow total", "data-factor": "fused"},
    h("span", {class: "blabel"}, "fused (RRF)"), bar("fused", breakdown.fused / maxFused),
    h("span", {class: "bvalue"}, fmtNum(breakdown.fused, 4))));
  const rerank = breakdown.rerank || {};
  for (const [name, label] of FACTORS) {
    if (rerank[name] === undefined) continue;
    const extra = name === "tagOverlap" && rerank.tagShare ? ` (${fmtNum(rerank.tagShare, 2)} of terms)` : "";
    rows.push(h("div", {class: "brow", "data-factor": name},
      h("span", {class: "blabel"}, `× ${label}`), multiplierBar(`factor factor-${name}`, rerank[name]),
      h("span", {class: "bvalue"}, `×${fmtNum(rerank[name], 3)}${extra}`)));
  }
  rows.push(h("div", {class: "brow total", "data-factor": "rerank"},
    h("span", {class: "blabel"}, "rerank product"), multiplierBar("factor product", rerank.product ?? 1),
    h("span", {class: "bvalue"}, `×${fmtNum(rerank.product ?? 1, 3)}`)));
  const mmr = breakdown.mmr;
  if (mmr) {
    rows.push(h("div", {class: "brow", "data-factor": "mmr-relevance"},
      h("span", {class: "blabel"}, "MMR relevance"), bar("mmr relevance", mmr.relevance),
      h("span", {class: "bvalue"}, fmtNum(mmr.relevance))));
    rows.push(h("div", {class: "brow", "data-factor": "mmr-similarity"},
      h("span", {class: "blabel"}, "MMR max similarity"), bar("mmr similarity", mmr.maxSimilarity),
      h("span", {class: "bvalue"}, `${fmtNum(mmr.maxSimilarity)} → mmr ${fmtNum(mmr.mmr)}`)));
  }
  rows.push(h("div", {class: "brow final", "data-factor": "final"},
    h("span", {class: "blabel"}, "final"), h("span", {class: "track none"}),
    h("span", {class: "bvalue"}, fmtNum(breakdown.final, 5))));
  return h("div", {class: "breakdown", role: "group", "aria-label": "score breakdown"}, rows);
}

// ---- results ------------------------------------------------------------------------------------
function resultCard(ctx, item, index, maxFused) {
  const content = h("p", {class: "content clamped"}, item.content);
  const expand = h("button", {type: "button", class: "link expand", "data-truncated": item.truncated ? "1" : "0"},
                   item.truncated ? `Show all ${item.contentChars} characters` : "Expand");
  let expanded = false;
  expand.addEventListener("click", async () => {
    if (item.truncated && !expanded) {
      expand.disabled = true;
      try {
        const full = await call(ctx.workspace, "getEntry", {id: item.id}, ctx.signal);
        content.textContent = full.content;
      } catch (error) {
        content.after(errorBox(error));
      }
      expand.disabled = false;
    }
    expanded = !expanded;
    content.classList.toggle("clamped", !expanded);
    expand.textContent = expanded ? "Collapse" : (item.truncated ? `Show all ${item.contentChars} characters` : "Expand");
  });
  const open = `${ctx.base}/entry/${encodeURIComponent(item.id)}`;
  const card = h("li", {class: "result", tabindex: "0", "data-id": item.id,
                        "aria-label": `result ${index + 1}`},
    h("div", {class: "result-head"},
      h("span", {class: "rank"}, `${index + 1}`),
      h("a", {href: open, class: "entry-link", "data-id": item.id}, h("code", null, shortId(item.id))),
      entryFacts(item),
      h("span", {class: "score", title: "final score"}, fmtNum(item.score, 5))),
    content, expand,
    h("div", {class: "meta"}, tagChips(item.tags, ctx.base),
      item.evidenceRef ? h("span", {class: "evidence"}, "evidence: ", item.evidenceRef) : null,
      item.stale ? h("span", {class: "stale-since"}, `stale since ${fmtTime(item.staleSince)}`) : null,
      item.supersededBy ? supersededNote(ctx.base, item.supersededBy) : null,
      h("span", null, `updated ${fmtTime(item.updatedAt)}`),
      h("a", {href: `${ctx.base}/graph?seeds=${encodeURIComponent(item.id)}`}, "graph")),
    h("details", {class: "why", open: index < 3},
      h("summary", null, "score breakdown"), breakdownChart(item.breakdown, maxFused)));
  card.addEventListener("keydown", (event) => {
    if (event.target !== card) return;
    if (event.key === "ArrowDown" || event.key === "j") {
      event.preventDefault();
      (card.nextElementSibling || card).focus();
    } else if (event.key === "ArrowUp" || event.key === "k") {
      event.preventDefault();
      const prev = card.previousElementSibling;
      if (prev) prev.focus(); else document.getElementById("search-query").focus();
    } else if (event.key === "Enter") {
      ctx.navigate(open);
    } else if (event.key === "e") {
      expand.click();
    }
  });
  return card;
}

// How a bound recall weighed its arms: the lexical share it gave, how sharply each arm's head
// stands out, how far the lexical arm backs the dense one, and whether the lexical order held.
function fusionText(fusion) {
  return [`lexical share ${fmtNum(fusion.lexicalShare, 2)}`,
          `lexical margin ${fmtNum(fusion.lexicalMargin, 2)}`,
          `dense margin ${fmtNum(fusion.denseMargin, 2)}`,
          `support ${fmtNum(fusion.support, 2)}`,
          fusion.lexicalLed ? "page kept the lexical order" : "page in the fused order of both arms"].join(" · ");
}

function queryUsedBox(used, timings) {
  const bounds = used.since || used.until
    ? `${used.sinceIso || "…"} → ${used.untilIso || "…"}${used.boundsRelaxed ? " (relaxed: nothing matched inside them)" : ""}`
    : "none";
  return section("Query used",
    h("dl", {class: "kvs", id: "query-used"},
      kv("original", used.original),
      kv("searched text", used.text || "—"),
      kv("terms", used.terms.length ? used.terms.join(", ") : "—"),
      kv("dropped terms", used.droppedTerms.length ? used.droppedTerms.join(", ") : "none"),
      kv("time phrases", used.timePhrases.length ? used.timePhrases.join(", ") : "none"),
      kv("time bounds", bounds),
      kv("filters", `kind ${used.filters.kind || "any"} · tag ${used.filters.tag || "any"}`),
      kv("hits per arm", Object.entries(used.arms || {}).map(([arm, n]) => `${arm} ${n}`).join(" · ") || "—"),
      used.vector ? kv("vector arm", `${used.vector.arm} (${used.vector.provider})${used.vector.reason ? ` — ${used.vector.reason}` : ""}`) : null,
      used.fusion ? kv("arm weighting", fusionText(used.fusion)) : null,
      timings ? kv("engine time", Object.entries(timings).map(([k, v]) => `${k.replace(/Ms$/, "")} ${fmtNum(v, 2)} ms`).join(" · ")) : null));
}

export async function searchView(root, ctx) {
  const tags = await call(ctx.workspace, "getTags", {}, ctx.signal).then((r) => r.tags).catch(() => []);
  const {form, query} = searchForm(ctx, ctx.params, tags);
  const results = h("div", {id: "search-results"});
  root.append(section(null, form), results);
  query.focus();
  const q = (ctx.params.get("q") || "").trim();
  if (!q) {
    results.appendChild(h("p", {class: "hint"}, "Type a question or some words and press Enter. " +
      "Each result shows why it ranked where it did."));
    return;
  }
  results.appendChild(loading("Recalling…"));
  const args = {query: q, topK: Math.min(MAX_TOP_K, Math.max(1, parseInt(ctx.params.get("topK") || "10", 10) || 10)),
                hops: parseInt(ctx.params.get("hops") || "1", 10)};
  if (ctx.params.get("tag")) args.tag = ctx.params.get("tag");
  if (ctx.params.get("kind")) args.kind = ctx.params.get("kind");
  if (ctx.params.get("full") === "1") args.full = true;
  let answer;
  try {
    answer = await call(ctx.workspace, "recall", args, ctx.signal);
  } catch (error) {
    if (error.status === 401 || isAbort(error)) throw error;
    replace(results, errorBox(error));
    return;
  }
  const maxFused = Math.max(1e-9, ...answer.items.map((item) => item.breakdown.fused));
  const list = h("ol", {class: "results", id: "results"},
                 answer.items.map((item, index) => resultCard(ctx, item, index, maxFused)));
  const seeds = answer.items.slice(0, 10).map((item) => item.id);
  replace(results,
    h("div", {class: "results-head"},
      h("span", {id: "result-count"}, `${answer.items.length} result${answer.items.length === 1 ? "" : "s"}`),
      seeds.length ? h("a", {href: `${ctx.base}/graph?seeds=${seeds.map(encodeURIComponent).join(",")}`,
                             id: "graph-of-results"}, "Graph of the top results") : null,
      h("span", {class: "hint"}, "↓/↑ or j/k move · Enter opens · e expands")),
    h("div", {class: "columns"},
      h("div", {class: "main-col"}, answer.items.length ? list
        : h("p", {class: "hint", id: "no-results"}, "Nothing matched.")),
      h("aside", {class: "side-col"}, queryUsedBox(answer.queryUsed, answer.timings),
        answer.revalidate.length ? section("Revalidate before relying on these",
          h("ul", {class: "revalidate"}, answer.revalidate.map((r) =>
            h("li", null, h("a", {href: `${ctx.base}/entry/${encodeURIComponent(r.id)}`}, shortId(r.id)),
              " ", r.question)))) : null)));
  // "Expand" only where there is more to see: cut by the snippet budget, or taller than the clamp
  for (const card of list.children) {
    const content = card.querySelector(".content");
    const expand = card.querySelector(".expand");
    if (expand.dataset.truncated !== "1" && content.scrollHeight <= content.clientHeight + 1) expand.hidden = true;
  }
}
