"""The retrieval benchmark's timings: recall at N synthetic entries against raw FTS5 through a
service replica's read path, the stand-in's own cost on the real sets, and MMR + rerank over the
largest entries the contract allows."""

from __future__ import annotations

import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from minisphere.engine import db
from minisphere.engine.methods import find_method, parse_args
from minisphere.engine.retrieval.recall import recall as run_recall
from minisphere.engine.workspace import Workspace

from . import beir, locomo
from .common import p50, percentile
from .retrieval_methods import TOP_K, load_workspace, raw_search

LARGE_ENTRY_CHARS = 64 * 1024  # the contract's content limit
LARGE_ENTRY_COUNT = 150  # topK=50 × MMR's pool factor 3
LARGE_TOP_K = 50
LARGE_REPEATS = 10
LATENCY_PASSES = 3  # each query set timed this many times, methods interleaved


# ---- latency --------------------------------------------------------------------------------------
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


def read_path_recall(ws: Workspace, reader):
    """recall as a read-pool thread serves it: parsed, run inside one read transaction on a
    read-only connection; the recall-count follow-up is not part of the answer's latency."""
    method = find_method("recall")

    def run(query: str, top_k: int = TOP_K):
        args = parse_args(method, {"query": query, "topK": top_k})
        reader.execute("BEGIN")
        try:
            return run_recall(reader, args, ws.clock.now_ms())
        finally:
            reader.execute("COMMIT")

    return run


def _timed_together(
    runs: dict, queries: list[str], passes: int = LATENCY_PASSES, warmup: int = 20
) -> dict[str, list[float]]:
    """ms per query of each run, the runs interleaved query by query (and the order rotated),
    so a load spike on this shared machine hits the baseline and the measured run alike."""
    names = list(runs)
    for q in queries[:warmup]:
        for name in names:
            runs[name](q)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for rotation in range(passes):
        for index, q in enumerate(queries):
            shift = (index + rotation) % len(names)
            for name in names[shift:] + names[:shift]:
                t0 = time.perf_counter()
                runs[name](q)
                samples[name].append((time.perf_counter() - t0) * 1000)
    return samples


def latency(n: int) -> tuple[str, list[list], list[list]]:
    docs, query_sets = synthetic_docs(n)
    rows = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Workspace(Path(tmp) / "bench.db", synchronous="NORMAL") as ws,
    ):
        started = time.perf_counter()
        load_workspace(ws, docs)
        load_s = time.perf_counter() - started
        reader = db.connect(ws.path, readonly=True)
        try:
            runs = {
                "raw-fts5 top-50": lambda q: raw_search(reader, "raw_fts", q, 50),
                "raw-fts5-porter top-50": lambda q: raw_search(reader, "entries_fts", q, 50),
                "recall topK=10 (read path)": read_path_recall(ws, reader),
                "recall topK=10 + follow-up write (Workspace.recall)": lambda q: ws.recall(
                    q, topK=10
                ),
            }
            for set_name, queries in query_sets.items():
                baseline = None
                for name, samples in _timed_together(runs, queries).items():
                    row_p50, row_p99 = p50(samples), percentile(samples, 99)
                    baseline = baseline or (row_p50, row_p99)
                    rows.append(
                        [
                            f"{n:,} / {set_name}",
                            name,
                            row_p50,
                            row_p99,
                            row_p50 / baseline[0],
                            row_p99 / baseline[1],
                        ]
                    )
        finally:
            reader.close()
    sizes = ", ".join(f"{len(q)} {name}" for name, q in query_sets.items())
    return (
        f"{n:,} synthetic entries loaded in {load_s:.1f} s; queries: {sizes}",
        rows,
        large_entries(),
    )


def stand_in_cost(data_paths: list[str], conversation_paths: list[str]) -> tuple[str, list[list]]:
    """Recall with and without stand-ins for unknown words (respell.py) on one workspace holding
    every passage set's corpus (10k entries with the two 5k sets), read path, interleaved: the
    passage sets' own queries, and the conversations' questions, whose names and words these
    passages mostly lack (a heavy case: many unknown words per query)."""
    from .folds import applied

    corpus = [doc for path in data_paths for doc in beir.load(path).corpus]
    query_sets = {
        "passage queries": [q for path in data_paths for q in beir.load(path).queries.values()]
    }
    for path in conversation_paths:
        query_sets["conversation questions"] = locomo.load(path).question_texts
    rows = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Workspace(Path(tmp) / "stand-ins.db", synchronous="OFF") as ws,
    ):
        load_workspace(ws, corpus)
        reader = db.connect(ws.path, readonly=True)
        try:
            run = read_path_recall(ws, reader)
            rewrite: dict[bool, list[float]] = {True: [], False: []}

            def timed(on: bool):
                def call(query: str) -> None:
                    with applied({"RESPELL_UNKNOWN_WORDS": on}):
                        rewrite[on].append(run(query)["timings"]["rewriteMs"])

                return call

            for set_name, queries in query_sets.items():
                with applied({"RESPELL_UNKNOWN_WORDS": True}):
                    touched = sum(bool(run(q)["queryUsed"]["standIns"]) for q in queries)
                for on in rewrite:
                    rewrite[on].clear()
                samples = _timed_together({"on": timed(True), "off": timed(False)}, queries)
                rows.append(
                    [
                        set_name,
                        len(queries),
                        touched / len(queries),
                        p50(samples["off"]),
                        p50(samples["on"]),
                        percentile(samples["off"], 99),
                        percentile(samples["on"], 99),
                        p50(rewrite[False]),
                        p50(rewrite[True]),
                    ]
                )
        finally:
            reader.close()
    return f"{len(corpus):,} passages in one workspace", rows


def large_entries() -> list[list]:
    """recall topK=50 over LARGE_ENTRY_COUNT entries that all match, 64 KiB each versus 200
    characters each: MMR and rerank must not pay for the entries' length."""
    rng = random.Random(11)
    words = [f"x{i}{rng.choice('aeiou')}" for i in range(3000)]
    rows = []
    for chars in (200, LARGE_ENTRY_CHARS):
        with (
            tempfile.TemporaryDirectory() as tmp,
            Workspace(Path(tmp) / "large.db", synchronous="OFF") as ws,
        ):
            calls = []
            for i in range(LARGE_ENTRY_COUNT):
                text, size = [f"zephyr note {i}"], 0
                while size < chars - 20:
                    word = rng.choice(words)
                    text.append(word)
                    size += len(word) + 1
                calls.append(("capture", {"content": " ".join(text)[: chars - 1]}))
            ws.run_batch(calls)
            reader = db.connect(ws.path, readonly=True)
            try:
                run = read_path_recall(ws, reader)
                samples, stages = [], defaultdict(list)
                for _ in range(LARGE_REPEATS + 2):
                    t0 = time.perf_counter()
                    result = run("zephyr note", LARGE_TOP_K)
                    samples.append((time.perf_counter() - t0) * 1000)
                    for stage, ms in result["timings"].items():
                        stages[stage].append(ms)
            finally:
                reader.close()
            samples = samples[2:]
            rows.append(
                [
                    f"{LARGE_ENTRY_COUNT} entries × {chars:,} chars",
                    f"topK={LARGE_TOP_K}",
                    p50(samples),
                    p50(stages["rerankMs"]),
                    p50(stages["hydrateMs"]),
                ]
            )
    return rows
