// A force-directed layout of our own (no library): repulsion between every pair of nodes,
// springs along edges, a pull to the centre that keeps separate islands in view, and cooling.
// Starting positions come from each node's hop and a hash of its id, so the same graph is
// always drawn the same way. O(n^2) per step: graphView returns at most 200 nodes.

export const WIDTH = 1000;
export const HEIGHT = 700;
const GRAVITY = 1.0;        // per unit of distance from the centre, against k^2/d per pair

function hash01(text) {            // a stable pseudo-random number in [0, 1) from an id
  let x = 2166136261;
  for (let i = 0; i < text.length; i++) { x ^= text.charCodeAt(i); x = Math.imul(x, 16777619); }
  return ((x >>> 0) % 100000) / 100000;
}

export function layout(nodes, edges, {width = WIDTH, height = HEIGHT} = {}) {
  const n = nodes.length;
  const index = new Map(nodes.map((node, i) => [node.id, i]));
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  const maxHop = Math.max(1, ...nodes.map((node) => node.hop || 0));
  const ring = Math.min(width, height) * 0.42 / maxHop;
  nodes.forEach((node, i) => {            // start on rings by hop, at a stable angle
    const angle = hash01(node.id) * Math.PI * 2;
    const radius = (node.hop || 0) * ring + (node.hop ? 0 : 20 * hash01(node.id + "r"));
    xs[i] = width / 2 + radius * Math.cos(angle);
    ys[i] = height / 2 + radius * Math.sin(angle);
  });
  const links = [];
  for (const edge of edges) {
    const a = index.get(edge.src);
    const b = index.get(edge.dst);
    if (a !== undefined && b !== undefined && a !== b) links.push([a, b]);
  }
  const k = Math.sqrt((width * height) / Math.max(1, n)) * 0.55;
  const iterations = n <= 60 ? 300 : n <= 150 ? 200 : 120;
  let temperature = width / 10;
  const cool = temperature / (iterations + 1);
  const dx = new Float64Array(n);
  const dy = new Float64Array(n);
  for (let step = 0; step < iterations; step++) {
    dx.fill(0);
    dy.fill(0);
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        let ddx = xs[i] - xs[j];
        let ddy = ys[i] - ys[j];
        let d2 = ddx * ddx + ddy * ddy;
        if (d2 < 0.01) { ddx = 0.1 * (hash01(`${i}:${j}`) - 0.5); ddy = 0.1; d2 = 0.02; }
        const force = (k * k) / d2;
        dx[i] += ddx * force; dy[i] += ddy * force;
        dx[j] -= ddx * force; dy[j] -= ddy * force;
      }
    }
    for (const [a, b] of links) {
      const ddx = xs[a] - xs[b];
      const ddy = ys[a] - ys[b];
      const d = Math.sqrt(ddx * ddx + ddy * ddy) || 0.01;
      const force = d / k;
      dx[a] -= ddx * force; dy[a] -= ddy * force;
      dx[b] += ddx * force; dy[b] += ddy * force;
    }
    for (let i = 0; i < n; i++) {       // the pull to the centre keeps islands in view
      dx[i] += (width / 2 - xs[i]) * GRAVITY;
      dy[i] += (height / 2 - ys[i]) * GRAVITY;
      const d = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 1;
      const move = Math.min(d, temperature);
      xs[i] += (dx[i] / d) * move;
      ys[i] += (dy[i] / d) * move;
    }
    temperature -= cool;
  }
  // fit into the box with a margin for labels
  let minX = Infinity; let maxX = -Infinity; let minY = Infinity; let maxY = -Infinity;
  for (let i = 0; i < n; i++) {
    minX = Math.min(minX, xs[i]); maxX = Math.max(maxX, xs[i]);
    minY = Math.min(minY, ys[i]); maxY = Math.max(maxY, ys[i]);
  }
  const margin = 60;
  const scale = Math.min((width - 2 * margin) / Math.max(1, maxX - minX),
                         (height - 2 * margin) / Math.max(1, maxY - minY), 3);
  const offX = (width - (maxX - minX) * scale) / 2;
  const offY = (height - (maxY - minY) * scale) / 2;
  return nodes.map((_node, i) => ({x: offX + (xs[i] - minX) * scale, y: offY + (ys[i] - minY) * scale}));
}

