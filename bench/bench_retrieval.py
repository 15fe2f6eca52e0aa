"""Retrieval benchmark: quality on BEIR-layout sets and latency at 100k synthetic entries.

    python -m bench.bench_retrieval --data ../shared/data/msmarco_5k ../shared/data/dbpedia_5k
    python -m bench.bench_retrieval --synthetic 100000
    python -m bench.bench_retrieval --data ../shared/data/msmarco_5k ../shared/data/dbpedia_5k --vectors minilm

Every method runs over the same workspace file in the same run:
  recall          our full pipeline (Workspace.recall, topK=10)
  raw-fts5        FTS5 bm25() with the default tokenizer (unicode61), query = OR of its words
  raw-fts5-porter FTS5 bm25() on our own index (porter), query = OR of all its words
  keyword-arm     our keyword arm alone (distilled terms + proximity boost), no rerank
  graph-arm       our graph arm alone, seeded from the keyword arm (the BEIR sets have no edges,
                  so it reorders the seeds only)
With --vectors PROVIDER (optional binding, see bench/bench_vectors.py) the same workspace is then
bound and more rows follow per set: dense-only (vector arm alone), hybrid (our recall with the
vector arm) and hybrid with MMR off; then the vector weight's sensitivity, embed throughput and
capture latency with the binding on versus off. Saved as bench/results/retrieval-vectors.md.
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from minisphere import Workspace
from minisphere.engine.retrieval.arms import graph_arm, keyword_arm
from minisphere.engine.retrieval.prefilter import Prefilter
from minisphere.engine.retrieval.query_text import distill, match_any, tokenize

from . import beir
from .common import p50, percentile, save_report, table

BATCH = 500


def load_workspace(ws: Workspace, docs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Capture every doc (group-committed batches); entry id -> doc ids (duplicates merge)."""
    docs_of: dict[str, list[str]] = {}
    for start in range(0, len(docs), BATCH):
        chunk = docs[start:start + BATCH]
        outcomes = ws.run_batch([("capture", {"content": text, "kind": "semantic",
                                              "volatility": "durable"}) for _, text in chunk])
        for (doc_id, _), (ok, result) in zip(chunk, outcomes):
            if ok:
                docs_of.setdefault(result.get("id") or result["matchId"], []).append(doc_id)
    ws.conn.execute("CREATE VIRTUAL TABLE raw_fts USING fts5(content)")
    ws.conn.execute("INSERT INTO raw_fts(rowid, content) SELECT seq, content FROM entries")
    return docs_of


def raw_search(conn, table_name: str, query: str, limit: int) -> list[str]:
    tokens = tokenize(query)
    if not tokens:
        return []
    rows = conn.execute(f"SELECT e.id FROM {table_name} f JOIN entries e ON e.seq = f.rowid "
                        f"WHERE {table_name} MATCH ? ORDER BY bm25({table_name}) LIMIT ?",
                        (match_any(tokens), limit)).fetchall()
    return [r[0] for r in rows]


def arm_search(conn, query: str, which: str) -> list[str]:
    count = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    terms, _ = distill(conn, tokenize(query), count)
    if not terms:
        return []
    hits = keyword_arm(conn, terms, Prefilter())
    if which == "graph":
        hits = graph_arm(conn, hits, 1, Prefilter())
    return [h.id for h in hits[:10]]


def methods(ws: Workspace) -> dict:
    conn = ws.conn
    return {
        "recall": lambda q: [i["id"] for i in ws.recall(q, topK=10)["items"]],
        "raw-fts5": lambda q: raw_search(conn, "raw_fts", q, 10),
        "raw-fts5-porter": lambda q: raw_search(conn, "entries_fts", q, 10),
        "keyword-arm": lambda q: arm_search(conn, q, "keyword"),
        "graph-arm": lambda q: arm_search(conn, q, "graph"),
    }


def expand(entry_ids: list[str], docs_of: dict[str, list[str]]) -> list[str]:
    return [doc for entry_id in entry_ids for doc in docs_of.get(entry_id, [])]


def _score(data, search, docs_of) -> list:
    ndcgs, recalls, latencies = [], [], []
    for qid, text in data.queries.items():
        t0 = time.perf_counter()
        ranked = search(text)
        latencies.append((time.perf_counter() - t0) * 1000)
        docs = expand(ranked, docs_of)
        ndcgs.append(beir.ndcg_at(docs, data.qrels[qid]))
        recalls.append(beir.recall_at(docs, data.qrels[qid]))
    return [sum(ndcgs) / len(ndcgs), sum(recalls) / len(recalls), p50(latencies), percentile(latencies, 99)]


def quality(path: str, vectors=None, cache=None, sensitivity: list | None = None) -> tuple[str, list[list]]:
    data = beir.load(path)
    sensitivity = [] if sensitivity is None else sensitivity
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with Workspace(Path(tmp) / "bench.db", synchronous="NORMAL") as ws:
            started = time.perf_counter()
            docs_of = load_workspace(ws, data.corpus)
            load_s = time.perf_counter() - started
            for name, search in methods(ws).items():
                rows.append([data.name, name, *_score(data, search, docs_of)])
            vector_note = ""
            if vectors is not None:  # same file, now bound: dense-only and hybrid rows
                from . import bench_vectors
                provider, vector_note = bench_vectors.bind(ws, vectors, data, cache)
                for name, search in bench_vectors.methods(ws, provider).items():
                    bench_vectors.reset_recall_counts(ws)
                    rows.append([data.name, name, *_score(data, search, docs_of)])
                sensitivity += bench_vectors.weight_sensitivity(ws, data, docs_of, _score)
    note = f"{data.name}: {len(data.corpus)} docs loaded in {load_s:.1f} s, {len(data.queries)} judged queries"
    return note + (f"; {vector_note}" if vector_note else ""), rows


def synthetic_docs(n: int, seed: int = 7) -> tuple[list[tuple[str, str]], dict[str, list[str]]]:
    """n short docs over a 20k-word Zipf vocabulary, and two query sets drawn from random docs:
    `mixed` takes 2-4 of the doc's words at random (often very common words), `specific` takes
    the doc's 2-4 rarest words (how people ask for a particular memory)."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}{rng.choice('aeiou')}{rng.choice('nrst')}" for i in range(20_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    rank_of = {word: rank for rank, word in enumerate(vocabulary)}
    docs = []
    for i in range(n):
        words = rng.choices(vocabulary, weights=weights, k=rng.randint(8, 30))
        docs.append((str(i), " ".join(words) + f" item{i}"))
    queries: dict[str, list[str]] = {"mixed": [], "specific": []}
    for _ in range(200):
        words = list(dict.fromkeys(docs[rng.randrange(n)][1].split()[:-1]))
        k = min(len(words), rng.randint(2, 4))
        queries["mixed"].append(" ".join(rng.sample(words, k)))
        queries["specific"].append(" ".join(sorted(words, key=lambda w: -rank_of[w])[:k]))
    return docs, queries


def latency(n: int) -> tuple[str, list[list]]:
    docs, query_sets = synthetic_docs(n)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with Workspace(Path(tmp) / "bench.db", synchronous="NORMAL") as ws:
            started = time.perf_counter()
            load_workspace(ws, docs)
            load_s = time.perf_counter() - started
            conn = ws.conn
            runs = {
                "raw-fts5 top-50": lambda q: raw_search(conn, "raw_fts", q, 50),
                "raw-fts5-porter top-50": lambda q: raw_search(conn, "entries_fts", q, 50),
                "recall topK=10": lambda q: ws.recall(q, topK=10),
            }
            for set_name, queries in query_sets.items():
                baseline = None
                for name, run in runs.items():
                    for q in queries[:20]:
                        run(q)  # warm caches
                    samples = []
                    for q in queries:
                        t0 = time.perf_counter()
                        run(q)
                        samples.append((time.perf_counter() - t0) * 1000)
                    row_p50, row_p99 = p50(samples), percentile(samples, 99)
                    baseline = baseline or (row_p50, row_p99)
                    rows.append([f"{n:,} / {set_name}", name, row_p50, row_p99,
                                 row_p50 / baseline[0], row_p99 / baseline[1]])
    sizes = ", ".join(f"{len(q)} {name}" for name, q in query_sets.items())
    return f"{n:,} synthetic entries loaded in {load_s:.1f} s; queries: {sizes}", rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="*", default=[], help="BEIR-layout folders")
    parser.add_argument("--synthetic", type=int, default=0, help="entries for the latency run")
    parser.add_argument("--vectors", choices=["minilm", "hash"], default=None,
                        help="also bind this embedding provider: dense-only and hybrid rows")
    parser.add_argument("--embed-cache", default=None,
                        help="folder caching corpus embeddings between runs (default: a temp dir)")
    args = parser.parse_args()
    out = []
    provider = cache = None
    if args.vectors:
        from . import bench_vectors
        provider, cache = bench_vectors.make(args.vectors), bench_vectors.cache_dir(args.embed_cache)
    if args.data:
        notes, rows, sensitivity = [], [], []
        for path in args.data:
            note, part = quality(path, provider, cache, sensitivity)
            notes.append(note)
            rows += part
        out.append("## Quality (nDCG@10, R@10) and query latency (ms)\n\n" + "\n".join(f"- {n}" for n in notes)
                   + "\n\n" + table(["set", "method", "nDCG@10", "R@10", "p50 ms", "p99 ms"], rows))
    if args.synthetic:
        note, rows = latency(args.synthetic)
        out.append(f"## Latency at scale\n\n- {note}\n\n" + table(
            ["data", "method", "p50 ms", "p99 ms", "p50 / raw", "p99 / raw"], rows))
    if provider is not None:
        from . import bench_vectors
        out += bench_vectors.report_sections(provider, args.data, sensitivity if args.data else [])
    report = "\n\n".join(out)
    print(report)
    print("\nsaved to", save_report("retrieval-vectors" if provider is not None else "retrieval", report))


if __name__ == "__main__":
    main()
