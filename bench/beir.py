"""Reading a BEIR-layout retrieval set and scoring rankings: nDCG@k with exponential gains
(2^grade - 1, as trec_eval/pytrec_eval and the figures in the data README) and R@k."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path


@dataclass
class BeirSet:
    name: str
    corpus: list[tuple[str, str]]  # (doc id, text)
    queries: dict[str, str]  # query id -> text (judged queries only)
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> grade


def load(path: str | Path) -> BeirSet:
    root = Path(path)
    corpus = []
    with (root / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            title, text = (doc.get("title") or "").strip(), (doc.get("text") or "").strip()
            corpus.append((str(doc["_id"]), f"{title}\n{text}" if title else text))
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.strip().split("\t")
            if len(parts) != 3 or not parts[2].lstrip("-").isdigit():
                continue  # header or blank
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = {}
    with (root / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if str(q["_id"]) in qrels and any(g > 0 for g in qrels[str(q["_id"])].values()):
                queries[str(q["_id"])] = q["text"]
    return BeirSet(root.name, corpus, queries, qrels)


def ndcg_at(ranked: list[str], grades: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** grades.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], grades: dict[str, int], k: int = 10) -> float:
    relevant = {d for d, g in grades.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0
