// A word-level diff of two texts (longest common subsequence over words and whitespace), for
// an entry's revisions. Common prefix and suffix are trimmed first (an append is a pure
// suffix), and a middle too large for the table falls back to "replaced by", so a 64 KiB entry
// never stalls the page.

import {h} from "./dom.js";

const MAX_CELLS = 1_500_000;
const KEEP_CONTEXT = 160;          // characters shown around a change inside unchanged text

export function tokenize(text) {
  return String(text).match(/\s+|[^\s]+/g) || [];
}

function push(parts, op, text) {
  if (!text) return;
  const last = parts[parts.length - 1];
  if (last && last.op === op) last.text += text;
  else parts.push({op, text});
}

export function diffWords(before, after) {
  const a = tokenize(before);
  const b = tokenize(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
  const parts = [];
  push(parts, "same", a.slice(0, start).join(""));
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const n = midA.length;
  const m = midB.length;
  if (n === 0 || m === 0 || (n + 1) * (m + 1) > MAX_CELLS) {
    push(parts, "del", midA.join(""));
    push(parts, "ins", midB.join(""));
  } else {
    const width = m + 1;
    const table = new Uint32Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        table[i * width + j] = midA[i] === midB[j]
          ? table[(i + 1) * width + j + 1] + 1
          : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (midA[i] === midB[j]) { push(parts, "same", midA[i]); i++; j++; }
      else if (table[(i + 1) * width + j] >= table[i * width + j + 1]) { push(parts, "del", midA[i]); i++; }
      else { push(parts, "ins", midB[j]); j++; }
    }
    while (i < n) push(parts, "del", midA[i++]);
    while (j < m) push(parts, "ins", midB[j++]);
  }
  push(parts, "same", a.slice(endA).join(""));
  return parts;
}

function sameText(text, first, last) {
  // long unchanged stretches are shortened around the changes, with a count of what is hidden
  if (first && last) return [text];
  const keepHead = first ? 0 : KEEP_CONTEXT;
  const keepTail = last ? 0 : KEEP_CONTEXT;
  if (text.length <= keepHead + keepTail + 80 || text.length < 400) return [text];
  const head = text.slice(0, keepHead);
  const tail = text.slice(text.length - keepTail);
  const hidden = text.length - head.length - tail.length;
  return [head, h("span", {class: "diff-gap"}, ` … ${hidden} unchanged characters … `), tail];
}

export function renderDiff(parts) {
  const added = parts.filter((p) => p.op === "ins").reduce((n, p) => n + p.text.length, 0);
  const removed = parts.filter((p) => p.op === "del").reduce((n, p) => n + p.text.length, 0);
  const body = h("p", {class: "diff"}, parts.map((part, index) => {
    if (part.op === "ins") return h("ins", null, part.text);
    if (part.op === "del") return h("del", null, part.text);
    return sameText(part.text, index === 0, index === parts.length - 1);
  }));
  return {body, added, removed};
}
