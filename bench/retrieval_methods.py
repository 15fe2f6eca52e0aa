"""The retrieval benchmark's methods and scores: a workspace loaded with a set's documents, each
method compared (our recall, raw FTS5 with either tokenizer, our keyword arm alone, the keyword
and graph arms fused) and the recall and nDCG each method scores over a set's questions."""

from __future__ import annotations

import time
from collections import defaultdict

from minisphere.engine.reads import entry_count
from minisphere.engine.retrieval.arms import graph_arm, keyword_arm
from minisphere.engine.retrieval.fusion import fuse
from minisphere.engine.retrieval.query_text import distill, match_any, tokenize
from minisphere.engine.retrieval.sql_filters import Prefilter
from minisphere.engine.workspace import Workspace

from . import beir, locomo
from .common import p50, percentile

BATCH = 500
TOP_K = 10


def load_workspace(ws: Workspace, docs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Capture every doc (group-committed batches); entry id -> doc ids (duplicates merge)."""
    docs_of: dict[str, list[str]] = {}
    for start in range(0, len(docs), BATCH):
        chunk = docs[start : start + BATCH]
        outcomes = ws.run_batch(
            [
                ("capture", {"content": text, "kind": "semantic", "volatility": "durable"})
                for _, text in chunk
            ]
        )
        for (doc_id, _), (ok, result) in zip(chunk, outcomes):
            if ok:
                docs_of.setdefault(result.get("id") or result["matchId"], []).append(doc_id)
    add_raw_index(ws)
    return docs_of


def add_raw_index(ws: Workspace) -> None:
    """A plain FTS5 table (default tokenizer) over the same entries: the raw-fts5 baseline."""
    ws.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS raw_fts USING fts5(content)")
    ws.conn.execute("INSERT INTO raw_fts(rowid, content) SELECT seq, content FROM entries")


def raw_search(conn, table_name: str, query: str, limit: int) -> list[str]:
    tokens = tokenize(query)
    if not tokens:
        return []
    rows = conn.execute(
        f"SELECT e.id FROM {table_name} f JOIN entries e ON e.seq = f.rowid "
        f"WHERE {table_name} MATCH ? ORDER BY bm25({table_name}) LIMIT ?",
        (match_any(tokens), limit),
    ).fetchall()
    return [r[0] for r in rows]


def arm_search(conn, query: str, which: str) -> list[str]:
    terms, _ = distill(conn, tokenize(query), entry_count(conn))
    if not terms:
        return []
    hits = keyword_arm(conn, terms, Prefilter())
    if which == "keyword":
        return [h.id for h in hits[:TOP_K]]
    fused = fuse({"keyword": hits, "graph": graph_arm(conn, hits, 1, Prefilter())})
    return sorted(fused, key=lambda i: -fused[i]["fused"])[:TOP_K]


def recall_ids(ws: Workspace, query: str, top_k: int = TOP_K) -> list[str]:
    return [i["id"] for i in ws.recall(query, topK=top_k)["items"]]


def methods(ws: Workspace) -> dict:
    conn = ws.conn
    return {
        "recall": lambda q: recall_ids(ws, q),
        "raw-fts5": lambda q: raw_search(conn, "raw_fts", q, TOP_K),
        "raw-fts5-porter": lambda q: raw_search(conn, "entries_fts", q, TOP_K),
        "keyword-arm": lambda q: arm_search(conn, q, "keyword"),
        "keyword+graph": lambda q: arm_search(conn, q, "graph"),
    }


def reset_recall_counts(ws: Workspace) -> None:
    """Each recall-based row starts from the same state: earlier rows' recalls must not boost
    (recall-count factor) what this row returns."""
    ws.conn.execute("UPDATE entries SET recall_count = 0")


# ---- scoring ------------------------------------------------------------------------------------
class Scores:
    """Per-question nDCG@10, R@10 and latency of each method, with a category per question."""

    def __init__(self):
        self.values: dict[str, list[tuple[float, float, float, str | None]]] = defaultdict(list)

    def run(self, name: str, search, questions) -> None:
        """questions: (text, judge(ranked entry ids) -> (ndcg, recall), category)."""
        for text, judge, category in questions:
            t0 = time.perf_counter()
            ranked = search(text)
            ms = (time.perf_counter() - t0) * 1000
            ndcg, rec = judge(ranked)
            self.values[name].append((ndcg, rec, ms, category))

    def row(self, name: str) -> list[float]:
        v = self.values[name]
        latencies = [x[2] for x in v]
        return [
            sum(x[0] for x in v) / len(v),
            sum(x[1] for x in v) / len(v),
            p50(latencies),
            percentile(latencies, 99),
        ]

    def by_category(self, name: str, index: int) -> dict[str, float]:
        groups: dict[str, list[float]] = defaultdict(list)
        for value in self.values[name]:
            groups[value[3]].append(value[index])
        return {c: sum(v) / len(v) for c, v in groups.items()}


def beir_questions(data, docs_of) -> list:
    def judge_for(qid):
        def judge(ranked):
            docs = [doc for entry_id in ranked for doc in docs_of.get(entry_id, [])]
            return beir.ndcg_at(docs, data.qrels[qid]), beir.recall_at(docs, data.qrels[qid])

        return judge

    return [(text, judge_for(qid), None) for qid, text in data.queries.items()]


def conversation_questions(conversation, turns_of) -> list:
    def judge_for(evidence):
        def judge(ranked):
            turns = locomo.expand(ranked, turns_of)
            return locomo.ndcg_at(turns, evidence), locomo.recall_at(turns, evidence)

        return judge

    return [
        (q.text, judge_for(q.evidence), locomo.CATEGORY_NAMES.get(q.category, str(q.category)))
        for q in conversation.questions
    ]
