// The graph around some entries: graphView({seedIds, hops}) laid out by our own small
// force-directed layout (layout.js), drawn as SVG.
// Edges are coloured by their type (8 closed types); pan by dragging the background or with
// the arrow keys, zoom with the wheel, + / - or the buttons; click (or Enter on) a node to open
// its entry. Timings land in the Performance API ("console:graph-layout", "console:graph-render").

import {call} from "./api.js";
import {fmtNum, h, preview, replace, s, shortId} from "./dom.js";
import {EDGE_TYPES, SYMMETRIC_EDGE_TYPES, section} from "./ui.js";
import {HEIGHT, layout, WIDTH} from "./layout.js";

const NODE_R = 9;
const SEED_R = 13;
const LABEL_CHARS = 26;
// Above this many nodes every label at once is unreadable: only the seeds keep theirs.
const LABELLED_NODES = 60;

// ---- drawing ------------------------------------------------------------------------------------
function markers() {
  return s("defs", null, EDGE_TYPES.map((type) =>
    s("marker", {id: `arrow-${type}`, viewBox: "0 0 10 10", refX: "9", refY: "5",
                 markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse"},
      s("path", {d: "M0,0 L10,5 L0,10 z", class: `arrowhead t-${type}`}))));
}

function edgePath(a, b, bend, radius) {
  const mx = (a.x + b.x) / 2;
  const my = (a.y + b.y) / 2;
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const d = Math.sqrt(dx * dx + dy * dy) || 1;
  const cx = mx - (dy / d) * bend;
  const cy = my + (dx / d) * bend;
  // stop at the target's circle so the arrowhead stays visible
  const tx = b.x - cx;
  const ty = b.y - cy;
  const td = Math.sqrt(tx * tx + ty * ty) || 1;
  const ex = b.x - (tx / td) * (radius + 2);
  const ey = b.y - (ty / td) * (radius + 2);
  return `M${a.x.toFixed(1)},${a.y.toFixed(1)} Q${cx.toFixed(1)},${cy.toFixed(1)} ${ex.toFixed(1)},${ey.toFixed(1)}`;
}

export function drawGraph(ctx, graph, seedIds) {
  const started = performance.now();
  performance.mark("console:graph-start");
  const positions = layout(graph.nodes, graph.edges);
  const laidOut = performance.now();
  performance.measure("console:graph-layout", "console:graph-start");
  const seeds = new Set(seedIds);
  const where = new Map(graph.nodes.map((node, i) => [node.id, positions[i]]));
  const radiusOf = (id) => (seeds.has(id) ? SEED_R : NODE_R);
  const pairCount = new Map();
  const edgeEls = [];
  const byNode = new Map();
  const counts = Object.fromEntries(EDGE_TYPES.map((t) => [t, 0]));
  for (const edge of graph.edges) {
    const a = where.get(edge.src);
    const b = where.get(edge.dst);
    if (!a || !b) continue;
    counts[edge.type] = (counts[edge.type] || 0) + 1;
    const pair = [edge.src, edge.dst].sort().join("|");
    const nth = pairCount.get(pair) || 0;
    pairCount.set(pair, nth + 1);
    const bend = nth === 0 ? 0 : (nth % 2 ? 1 : -1) * 18 * Math.ceil(nth / 2);
    const el = s("path", {d: edgePath(a, b, bend, radiusOf(edge.dst)),
                          class: `edge t-${edge.type} prov-${edge.provenance}`,
                          "data-type": edge.type, "data-src": edge.src, "data-dst": edge.dst,
                          "marker-end": SYMMETRIC_EDGE_TYPES.has(edge.type) ? null : `url(#arrow-${edge.type})`},
      s("title", null, `${edge.type} (${edge.provenance}, weight ${fmtNum(edge.weight, 2)})`));
    el.style.strokeWidth = String(1 + 2 * edge.weight);
    edgeEls.push(el);
    for (const id of [edge.src, edge.dst]) {
      if (!byNode.has(id)) byNode.set(id, []);
      byNode.get(id).push(el);
    }
  }
  const open = (id) => ctx.navigate(`${ctx.base}/entry/${encodeURIComponent(id)}`);
  const nodeEls = graph.nodes.map((node) => {
    const p = where.get(node.id);
    const label = preview(node.content, LABEL_CHARS);
    const g = s("g", {class: `node hop-${Math.min(node.hop, 3)}${seeds.has(node.id) ? " seed" : ""}${node.stale ? " stale" : ""}`,
                      transform: `translate(${p.x.toFixed(1)},${p.y.toFixed(1)})`, tabindex: "0",
                      role: "link", "data-id": node.id, "data-hop": String(node.hop),
                      "aria-label": `${label} (hop ${node.hop})`},
      s("title", null, `${preview(node.content, 240)}\n${node.id} · hop ${node.hop} · ${node.kind}`),
      s("circle", {r: String(radiusOf(node.id)), class: `kind-${node.kind}`}),
      s("text", {class: "label", x: "0", y: String(radiusOf(node.id) + 13), "text-anchor": "middle"}, label));
    g.addEventListener("click", (event) => {
      if (g.closest("svg").dataset.dragged === "1") { event.preventDefault(); return; }
      open(node.id);
    });
    g.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(node.id); }
    });
    const lit = (on) => (byNode.get(node.id) || []).forEach((el) => el.classList.toggle("lit", on));
    g.addEventListener("mouseenter", () => lit(true));
    g.addEventListener("mouseleave", () => lit(false));
    g.addEventListener("focus", () => lit(true));
    g.addEventListener("blur", () => lit(false));
    return g;
  });
  const viewport = s("g", {class: "viewport"}, s("g", {class: "edges"}, edgeEls),
                     s("g", {class: "nodes"}, nodeEls));
  const svg = s("svg", {class: graph.nodes.length > LABELLED_NODES ? "graph crowded" : "graph", id: "graph-svg", viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
                        role: "application", tabindex: "0",
                        "aria-label": "entry graph: drag or arrow keys to pan, wheel or +/- to zoom, 0 to fit"},
                markers(), viewport);
  const view = {k: 1, x: 0, y: 0};
  const apply = () => viewport.setAttribute("transform", `translate(${view.x.toFixed(1)} ${view.y.toFixed(1)}) scale(${view.k.toFixed(3)})`);
  const zoomAt = (factor, cx = WIDTH / 2, cy = HEIGHT / 2) => {
    const k = Math.min(8, Math.max(0.2, view.k * factor));
    view.x = cx - ((cx - view.x) * k) / view.k;
    view.y = cy - ((cy - view.y) * k) / view.k;
    view.k = k;
    apply();
  };
  const fit = () => { view.k = 1; view.x = 0; view.y = 0; apply(); };
  const toSvg = (event) => {
    const point = svg.createSVGPoint();
    point.x = event.clientX; point.y = event.clientY;
    const m = svg.getScreenCTM();
    return m ? point.matrixTransform(m.inverse()) : {x: WIDTH / 2, y: HEIGHT / 2};
  };
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const p = toSvg(event);
    zoomAt(event.deltaY < 0 ? 1.15 : 1 / 1.15, p.x, p.y);
  }, {passive: false});
  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    drag = {start: toSvg(event), x: view.x, y: view.y, moved: false, id: event.pointerId};
    svg.dataset.dragged = "0";
  });
  svg.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const p = toSvg(event);
    const ddx = p.x - drag.start.x;
    const ddy = p.y - drag.start.y;
    if (!drag.moved && Math.abs(ddx) + Math.abs(ddy) < 4) return;
    if (!drag.moved) { drag.moved = true; svg.setPointerCapture(drag.id); svg.classList.add("panning"); }
    view.x = drag.x + ddx;
    view.y = drag.y + ddy;
    apply();
  });
  const endDrag = () => {
    if (drag && drag.moved) {
      svg.dataset.dragged = "1";
      setTimeout(() => { svg.dataset.dragged = "0"; }, 0);
    }
    drag = null;
    svg.classList.remove("panning");
  };
  svg.addEventListener("pointerup", endDrag);
  svg.addEventListener("pointercancel", endDrag);
  svg.addEventListener("keydown", (event) => {
    const step = 40;
    const keys = {ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step]};
    if (event.target !== svg && !(event.key in {"+": 1, "=": 1, "-": 1, "0": 1})) return;
    if (keys[event.key]) { view.x += keys[event.key][0]; view.y += keys[event.key][1]; apply(); }
    else if (event.key === "+" || event.key === "=") zoomAt(1.25);
    else if (event.key === "-") zoomAt(0.8);
    else if (event.key === "0") fit();
    else return;
    event.preventDefault();
  });
  const controls = h("div", {class: "graph-controls"},
    h("button", {type: "button", id: "zoom-in", "aria-label": "zoom in", onclick: () => zoomAt(1.25)}, "+"),
    h("button", {type: "button", id: "zoom-out", "aria-label": "zoom out", onclick: () => zoomAt(0.8)}, "−"),
    h("button", {type: "button", id: "zoom-fit", onclick: fit}, "fit"));
  const legend = h("ul", {class: "legend", id: "graph-legend"}, EDGE_TYPES.map((type) => {
    const box = h("input", {type: "checkbox", checked: true, "data-type": type, onchange: (event) => {
      svg.classList.toggle(`hide-${type}`, !event.target.checked);
    }});
    return h("li", null, h("label", null, box, h("span", {class: `swatch t-${type}`}), ` ${type} `,
                                  h("small", null, String(counts[type] || 0))));
  }));
  return {svg, controls, legend, layoutMs: laidOut - started, started};
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// ---- the view -----------------------------------------------------------------------------------
export async function graphView(root, ctx) {
  const params = ctx.params;
  const hops = Math.min(3, Math.max(1, parseInt(params.get("hops") || "1", 10) || 1));
  let seedIds = (params.get("seeds") || "").split(",").map((x) => x.trim()).filter(Boolean);
  const q = (params.get("q") || "").trim();
  let seedNote = "";
  if (!seedIds.length && q) {
    const found = await call(ctx.workspace, "recall", {query: q, topK: 10}, ctx.signal);
    seedIds = found.items.map((item) => item.id);
    seedNote = `the top ${seedIds.length} results of “${q}”`;
  } else if (!seedIds.length) {
    const recent = await call(ctx.workspace, "listRecent", {n: 5}, ctx.signal);
    seedIds = recent.items.map((item) => item.id);
    seedNote = `the ${seedIds.length} most recent entries`;
  } else {
    seedNote = seedIds.length === 1 ? `entry ${shortId(seedIds[0])}` : `${seedIds.length} chosen entries`;
  }
  seedIds = seedIds.slice(0, 50);
  const seedsInput = h("input", {id: "graph-seeds", value: params.get("seeds") || "", autocomplete: "off",
                                 spellcheck: "false", placeholder: "entry ids, comma-separated"});
  const queryInput = h("input", {id: "graph-query", value: q, placeholder: "…or the top results of a query"});
  const hopsSelect = h("select", {id: "graph-hops"},
    [1, 2, 3].map((n) => h("option", {value: String(n), selected: n === hops}, `${n} hop${n > 1 ? "s" : ""}`)));
  const form = h("form", {class: "row graph-form", onsubmit: (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (seedsInput.value.trim()) next.set("seeds", seedsInput.value.trim());
    else if (queryInput.value.trim()) next.set("q", queryInput.value.trim());
    next.set("hops", hopsSelect.value);
    ctx.navigate(`${ctx.base}/graph?${next}`);
  }}, seedsInput, queryInput, hopsSelect, h("button", {type: "submit", class: "primary"}, "Draw"));
  const stage = h("div", {class: "graph-stage", id: "graph-stage"});
  const info = h("div", {class: "graph-info", id: "graph-info"});
  root.append(section(null, form), h("div", {class: "graph-layout"}, stage, info));
  if (!seedIds.length) {
    replace(stage, h("p", {class: "hint"}, "This workspace has no entries yet."));
    return;
  }
  const graph = await call(ctx.workspace, "graphView", {seedIds, hops}, ctx.signal);
  const drawn = drawGraph(ctx, graph, seedIds);
  replace(stage, drawn.controls, drawn.svg);
  replace(info,
    section("Graph",
      h("p", {id: "graph-summary"}, `${plural(graph.nodes.length, "node")}, ${plural(graph.edges.length, "edge")} around ${seedNote}, ${hops} hop${hops > 1 ? "s" : ""}.`),
      graph.truncated ? h("p", {class: "warn"}, "Truncated: the service caps the nodes of one view.") : null,
      graph.missingSeedIds.length ? h("p", {class: "warn"}, `Not found: ${graph.missingSeedIds.join(", ")}`) : null,
      h("p", {class: "hint", id: "graph-timing"}, `layout ${fmtNum(drawn.layoutMs, 1)} ms`),
      h("p", {class: "hint"}, "Drag or arrow keys to pan · wheel or +/− to zoom · 0 fits · click or Enter opens an entry.")),
    section("Edge types", drawn.legend));
  // drawn once the browser has painted it: the render time includes style, layout and paint
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  performance.measure("console:graph-render", "console:graph-start");
  const timing = document.getElementById("graph-timing");
  if (timing) timing.textContent = `layout ${fmtNum(drawn.layoutMs, 1)} ms · drawn in ${fmtNum(performance.now() - drawn.started, 1)} ms`;
}
