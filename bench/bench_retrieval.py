"""Retrieval benchmark: quality on BEIR-layout and conversational sets, latency at 100k entries.

    python -m bench.bench_retrieval --data ../shared/data/msmarco_5k ../shared/data/dbpedia_5k \
        --conversations ../shared/data/locomo_dev
    python -m bench.bench_retrieval --synthetic 100000
    python -m bench.bench_retrieval --data ... --conversations ... --vectors minilm --embed-cache DIR
    python -m bench.bench_retrieval --conversations ... --vectors minilm --compare-vectors minilm-int8
    flock /tmp/ray.lock python -m bench.bench_retrieval --conversations ... --vectors minilm --http

Every method runs over the same workspace file(s) in the same run:
  recall          our full pipeline, zero bindings (Workspace.recall, topK=10)
  raw-fts5        FTS5 bm25() with the default tokenizer (unicode61), query = OR of its words
  raw-fts5-porter FTS5 bm25() on our own index (porter), query = OR of all its words
  keyword-arm     our keyword arm alone (distilled terms + proximity + feedback), no rerank
  keyword+graph   the keyword and graph arms fused (the lexical score), no rerank, no MMR
With --vectors PROVIDER (optional binding, see bench/bench_vectors.py): dense-only (the vector
arm's KNN alone), dense+feedback (its one feedback round on its own head, no lexical arm),
hybrid (our recall with the binding) and hybrid with MMR off; then the hybrid's sensitivity to
its settings, embed throughput and capture latency with the binding on versus off.

The conversational set (--conversations, LoCoMo layout; protocol in bench/locomo.py) gets one
workspace per conversation; its rows average over every question of every conversation, with a
per-category table. With --vectors the bound rows use workspaces captured with the binding on
(semantic dedup and auto-links active, as a user who turns it on gets), and the run reports what
dedup and auto-linking did to the turns.

--synthetic N times recall at N entries against raw FTS5 top-50 on "specific" (rare-word) and
"mixed" queries, through the read path a service replica runs (a read-only connection, one read
transaction; the recall-count follow-up write is queued, not awaited: it is timed in its own
row), the methods interleaved query by query; plus MMR + rerank time at topK=50 over 64 KiB
entries versus short ones.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from minisphere.engine import db
from minisphere.engine.methods import find_method, parse_args
from minisphere.engine.reads import entry_count
from minisphere.engine.retrieval.arms import graph_arm, keyword_arm
from minisphere.engine.retrieval.fusion import fuse
from minisphere.engine.retrieval.query_text import distill, match_any, tokenize
from minisphere.engine.retrieval.recall import recall as run_recall
from minisphere.engine.retrieval.sql_filters import Prefilter
from minisphere.engine.workspace import Workspace

from . import beir, locomo
from .common import p50, percentile, save_report, table

BATCH = 500
TOP_K = 10
LARGE_ENTRY_CHARS = 64 * 1024  # the contract's content limit
LARGE_ENTRY_COUNT = 150  # topK=50 × MMR's pool factor 3
LARGE_TOP_K = 50
LARGE_REPEATS = 10
FOLD_TOLERANCE = 0.005  # the hybrid may trail zero-binding by this much on a fold
FOLD_MEAN_GAIN = 0.015  # ...and must gain this much on the mean over the folds
OPEN_DOMAIN_TARGET = 0.40  # zero-binding open-domain R@10, mean over the held-out folds
LATENCY_PASSES = 3  # each query set timed this many times, methods interleaved


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


# ---- quality runs --------------------------------------------------------------------------------
def beir_quality(path: str, vectors=None, cache=None) -> tuple[str, Scores, list]:
    data = beir.load(path)
    scores, sensitivity = Scores(), []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Workspace(Path(tmp) / "bench.db", synchronous="NORMAL") as ws,
    ):
        started = time.perf_counter()
        docs_of = load_workspace(ws, data.corpus)
        load_s = time.perf_counter() - started
        questions = beir_questions(data, docs_of)
        for name, search in methods(ws).items():
            reset_recall_counts(ws)
            scores.run(name, search, questions)
        vector_note = ""
        if vectors is not None:  # same file, now bound: dense-only and hybrid rows
            from . import bench_vectors

            provider = bench_vectors.CachedProvider(
                vectors,
                bench_vectors.vector_table(
                    vectors,
                    [t for _, t in data.corpus],
                    list(data.queries.values()),
                    cache,
                    data.name,
                ),
            )
            vector_note = bench_vectors.bind(ws, provider, data.name)
            for name, search in bench_vectors.methods(ws, provider).items():
                reset_recall_counts(ws)
                scores.run(name, search, questions)
            sensitivity = bench_vectors.sensitivity(
                lambda: [reset_recall_counts(ws)], lambda: scores_of_hybrid(ws, questions)
            )
    note = f"{data.name}: {len(data.corpus)} docs loaded in {load_s:.1f} s, {len(data.queries)} judged queries"
    return (
        note + (f"; {vector_note}" if vector_note else ""),
        scores,
        [[data.name, *r] for r in sensitivity],
    )


def scores_of_hybrid(ws: Workspace, questions) -> tuple[float, float]:
    scores = Scores()
    scores.run("hybrid", lambda q: recall_ids(ws, q), questions)
    ndcg, rec, _, _ = scores.row("hybrid")
    return ndcg, rec


def conversation_quality(
    path: str, vectors=None, cache=None, skip_sensitivity: bool = True
) -> tuple[str, Scores, list, list]:
    """skip_sensitivity: the hybrid's settings are judged by leave-one-conversation-out
    (held_out_sections) on conversations; the whole-split sensitivity table is the passages'."""
    data = locomo.load(path)
    scores = Scores()
    dedup_rows: list[list] = []
    sensitivity: list = []
    provider = None
    if vectors is not None:
        from . import bench_vectors

        provider = bench_vectors.CachedProvider(
            vectors,
            bench_vectors.vector_table(
                vectors, data.turn_texts, data.question_texts, cache, data.name
            ),
        )
    started = time.perf_counter()
    bound_runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for conversation in data.conversations:
            with Workspace(Path(tmp) / f"{conversation.id}.db", synchronous="NORMAL") as ws:
                info = locomo.capture_conversation(ws, conversation)
                add_raw_index(ws)
                questions = conversation_questions(conversation, info["turns_of"])
                for name, search in methods(ws).items():
                    reset_recall_counts(ws)
                    scores.run(name, search, questions)
            if provider is None:
                continue
            from . import bench_vectors

            bound = Workspace(
                Path(tmp) / f"{conversation.id}-bound.db", synchronous="NORMAL", embedder=provider
            )
            bound_info = locomo.capture_conversation(bound, conversation)
            dedup_rows.append(
                [
                    conversation.id,
                    len(conversation.turns),
                    bound_info["outcomes"].get("stored", 0),
                    len(bound_info["blocked"]),
                    bound_info["duplicate_candidates"],
                    bound_info["auto_links"],
                ]
            )
            for blocked_text, matched_text, cosine in bound_info["blocked"]:
                dedup_rows.append(
                    ["  blocked", f"{cosine:.3f}", blocked_text[:60], matched_text[:60], "", ""]
                )
            bound_questions = conversation_questions(conversation, bound_info["turns_of"])
            for name, search in bench_vectors.methods(bound, provider).items():
                reset_recall_counts(bound)
                scores.run(name, search, bound_questions)
            bound_runs.append((bound, bound_questions))
        if bound_runs and not skip_sensitivity:
            from . import bench_vectors

            def reset():
                for bound, _ in bound_runs:
                    reset_recall_counts(bound)

            def measure():
                run = Scores()
                for bound, questions in bound_runs:
                    run.run("hybrid", lambda q, ws=bound: recall_ids(ws, q), questions)
                ndcg, rec, _, _ = run.row("hybrid")
                return ndcg, rec

            sensitivity = [[data.name, *r] for r in bench_vectors.sensitivity(reset, measure)]
            for bound, _ in bound_runs:
                bound.close()
    turns = sum(len(c.turns) for c in data.conversations)
    questions = sum(len(c.questions) for c in data.conversations)
    note = (
        f"{data.name}: {len(data.conversations)} conversations, {turns} turns captured and "
        f"linked in {time.perf_counter() - started:.1f} s (all runs), {questions} questions"
    )
    return note, scores, dedup_rows, sensitivity


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


# ---- leave-one-conversation-out, recall's own cost ---------------------------------------------------
def held_out_sections(
    path: str, vectors, cache, results: dict[str, Scores], kinds: dict[str, str], compare=None
) -> list[str]:
    """Every setting judged on conversations it was not chosen on (bench/folds.py), the weak
    categories per fold, recall against getCount stage by stage (bench/recall_cost.py), and
    with a second provider (`compare`) the hybrid per fold with either encoder."""
    from . import folds

    data = locomo.load(path)
    provider = None
    if vectors is not None:
        provider = _cached(vectors, data, cache)
    bench = folds.ConversationBench(data, provider)
    try:
        sections = [_fold_section(bench, results, kinds)]
        if provider is not None and compare is not None:
            sections.append(_encoder_section(bench, data, provider, _cached(compare, data, cache)))
        sections += [
            _category_section(bench),
            _settings_section(bench),
            _cost_section(bench, vectors, provider),
        ]
    finally:
        bench.close()
    return sections


def _cached(vectors, data, cache):
    from . import bench_vectors

    return bench_vectors.CachedProvider(
        vectors,
        bench_vectors.vector_table(vectors, data.turn_texts, data.question_texts, cache, data.name),
    )


def _encoder_section(bench, data, provider, other) -> str:
    from . import bench_vectors, folds

    other_bench = folds.ConversationBench(data, other, zero=False)
    try:
        return bench_vectors.encoder_section(bench, other_bench, [provider, other])
    finally:
        other_bench.close()


def _fold_section(bench, results: dict[str, Scores], kinds: dict[str, str]) -> str:
    from . import folds

    bound = bool(bench.runs[True])
    headers = ["held-out conversation", "questions", "zero R@10", "zero nDCG@10"]
    if bound:
        headers += ["hybrid R@10", "hybrid nDCG@10", "Δ R@10", "Δ nDCG@10"]
    rows = folds.fold_rows(bench)
    for name, scores in results.items():  # the passage sets beside the folds
        if kinds[name] != "passages":
            continue
        zn, zr = scores.row("recall")[:2]
        row = [f"{name} (passages)", len(scores.values["recall"]), zr, zn]
        if bound and "hybrid" in scores.values:
            hn, hr = scores.row("hybrid")[:2]
            row += [hr, hn, hr - zr, hn - zn]
        rows.append(row + [""] * (len(headers) - len(row)))
    checks = ""
    if bound:
        folds_only = rows[: len(bench.conversations)]
        mean_row = rows[len(bench.conversations)]
        worst = min(min(r[6], r[7]) for r in folds_only)
        checks = (
            f"\n\nHybrid never below zero-binding − {FOLD_TOLERANCE} on a fold (R@10 and nDCG@10): "
            f"worst fold Δ {worst:+.4f}, {'met' if worst >= -FOLD_TOLERANCE else 'missed'}; "
            f"mean Δ ≥ +{FOLD_MEAN_GAIN}: R@10 {mean_row[6]:+.4f}, nDCG@10 {mean_row[7]:+.4f}, "
            f"{'met' if min(mean_row[6], mean_row[7]) >= FOLD_MEAN_GAIN else 'missed'}."
        )
    return (
        "## Leave-one-conversation-out: the shipped settings on each held-out conversation\n\n"
        "Each fold is a conversation none of the settings below was chosen on (they are "
        "chosen on the other four); the passage sets are beside them.\n\n"
        + table(headers, rows)
        + checks
    )


def _category_section(bench) -> str:
    from . import folds

    categories, rows = folds.category_rows(bench)
    without = folds.category_rows(bench, {"RESPELL_UNKNOWN_WORDS": False})[1]
    rows.insert(
        len(bench.conversations) + 1,
        ["mean over folds, no stand-ins", *without[len(bench.conversations)][1:]],
    )
    open_domain = rows[len(bench.conversations)][1 + categories.index("open-domain")]
    return (
        "## Zero-binding R@10 by question category, per held-out conversation\n\n"
        + table(["held-out conversation", *categories], rows)
        + f"\n\nOpen-domain R@10, mean over the held-out folds ≥ {OPEN_DOMAIN_TARGET}: "
        f"{open_domain:.4f}, {'met' if open_domain >= OPEN_DOMAIN_TARGET else 'missed'} "
        "(the row without stand-ins for unknown words is the same run with them off)."
    )


def _settings_section(bench) -> str:
    from . import folds

    per_fold, summary = folds.settings_rows(bench)
    return (
        "## Settings, each chosen on four conversations and scored on the fifth\n\n"
        "Baseline: the value shipped before the held-out tuning. Δ = held-out fold mean of "
        "the chosen value minus the baseline's; worst = the lowest single-fold Δ. A setting is kept only if the "
        "held-out mean improves.\n\n"
        + table(
            ["setting", "arm", "before", "shipped", "Δ R@10", "Δ nDCG@10", "worst fold Δ"], summary
        )
        + "\n\nBy fold (the value the other four chose, its gain on the held-out one):\n\n"
        + table(
            ["setting", "held out", "chosen on the other four", "Δ R@10", "Δ nDCG@10"], per_fold
        )
    )


def _cost_section(bench, vectors, provider) -> str:
    from . import recall_cost

    fresh = None
    if provider is not None:  # queries embedded fresh, turns from the cache
        asked = set(bench.data.question_texts)
        fresh = recall_cost.FreshQueries(
            vectors, {t: v for t, v in provider.table.items() if t not in asked}
        )
        for _, ws in bench.workspaces(True):
            ws.vectors.provider = fresh
    bound = dict(bench.workspaces(True))
    pairs = [
        (ws, bound.get(cid), [q.text for q, _ in questions])
        for cid, ws, questions in bench.runs[False]
    ]
    rows, stage_rows = recall_cost.report_rows(
        recall_cost.measure(pairs), fresh.embed_ms if fresh else []
    )
    return (
        "## Recall's own cost: recall against getCount on the same workspace (in process, ms)"
        "\n\n"
        + recall_cost.NOTE
        + "\n\n"
        + table(["call", "p50 ms", "p99 ms", "p50 / getCount p50"], rows)
        + "\n\nWhere recall's time goes (ms per call; p50 of the calls a stage ran in, and the "
        "mean over every call):\n\n"
        + table(["stage", "zero p50", "zero mean", "bound p50", "bound mean"], stage_rows)
    )


# ---- report ------------------------------------------------------------------------------------------
QUALITY_METHODS = [
    "raw-fts5",
    "raw-fts5-porter",
    "keyword-arm",
    "keyword+graph",
    "recall",
    "dense-only",
    "dense+feedback",
    "hybrid",
    "hybrid, MMR off",
]


def targets(results: dict[str, Scores], kinds: dict[str, str]) -> list[list]:
    """The retrieval targets, checked on this run's rows (4 decimals: a miss by less than 0.0005
    must not print as a tie)."""
    rows = []
    for name, scores in results.items():
        have = scores.values
        if "hybrid" in have:
            best_arm = max(scores.row("keyword-arm")[0], scores.row("dense-only")[0])
            hybrid = scores.row("hybrid")[0]
            rows.append(
                [
                    name,
                    "hybrid nDCG@10 ≥ max(keyword-arm, dense-only)",
                    f"{hybrid:.4f}",
                    f"{best_arm:.4f}",
                    "met" if hybrid >= best_arm else "missed",
                ]
            )
            zero = scores.row("recall")[0]
            rows.append(
                [
                    name,
                    "hybrid nDCG@10 ≥ zero-binding recall",
                    f"{hybrid:.4f}",
                    f"{zero:.4f}",
                    "met" if hybrid >= zero else "missed",
                ]
            )
        if kinds[name] == "conversations":
            rec = scores.row("recall")[1]
            rows.append(
                [
                    name,
                    "zero-binding R@10 ≥ 0.68",
                    f"{rec:.4f}",
                    "0.6800",
                    "met" if rec >= 0.68 else "missed",
                ]
            )
        else:
            zero, keyword = scores.row("recall")[0], scores.row("keyword-arm")[0]
            rows.append(
                [
                    name,
                    "zero-binding nDCG@10 ≥ keyword-arm",
                    f"{zero:.4f}",
                    f"{keyword:.4f}",
                    "met" if zero >= keyword else "missed",
                ]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", nargs="*", default=[], help="BEIR-layout folders")
    parser.add_argument(
        "--conversations", nargs="*", default=[], help="LoCoMo-layout folders (conversations.jsonl)"
    )
    parser.add_argument("--synthetic", type=int, default=0, help="entries for the latency run")
    parser.add_argument(
        "--vectors",
        choices=["minilm", "minilm-int8", "hash"],
        default=None,
        help="also bind this embedding provider: dense-only and hybrid rows",
    )
    parser.add_argument(
        "--compare-vectors",
        choices=["minilm", "minilm-int8", "hash"],
        default=None,
        help="with --vectors and --conversations: also the hybrid per held-out "
        "conversation with this provider, and its query embedding time",
    )
    parser.add_argument(
        "--http",
        action="store_true",
        help="with --conversations: also recall against getCount over HTTP on "
        "the real service (bench/recall_http.py; starts Ray: run it under "
        "flock /tmp/ray.lock), bound with MiniLM when --vectors minilm",
    )
    parser.add_argument(
        "--stand-in-cost",
        action="store_true",
        help="with --data: recall with and without stand-ins for unknown words "
        "on one workspace holding every --data corpus (10k entries with "
        "the two 5k sets)",
    )
    parser.add_argument(
        "--embed-cache",
        default=None,
        help="folder caching embeddings between runs (default: a temp dir)",
    )
    args = parser.parse_args()
    out = []
    provider = cache = compare = None
    if args.vectors:
        from . import bench_vectors

        provider, cache = (
            bench_vectors.make(args.vectors),
            bench_vectors.cache_dir(args.embed_cache),
        )
        compare = bench_vectors.make(args.compare_vectors) if args.compare_vectors else None
    results: dict[str, Scores] = {}
    kinds: dict[str, str] = {}
    notes, sensitivity, dedup = [], [], []
    for path in args.data:
        note, scores, sens = beir_quality(path, provider, cache)
        name = Path(path).name
        results[name], kinds[name] = scores, "passages"
        notes.append(note)
        sensitivity += sens
    for path in args.conversations:
        note, scores, dedup_rows, sens = conversation_quality(path, provider, cache)
        name = Path(path).name
        results[name], kinds[name] = scores, "conversations"
        notes.append(note)
        dedup += dedup_rows
        sensitivity += sens
    if results:
        rows = [
            [name, method, *scores.row(method)]
            for name, scores in results.items()
            for method in QUALITY_METHODS
            if method in scores.values
        ]
        out.append(
            "## Quality (nDCG@10, R@10) and query latency (ms)\n\n"
            + "\n".join(f"- {n}" for n in notes)
            + "\n\n"
            + table(["set", "method", "nDCG@10", "R@10", "p50 ms", "p99 ms"], rows)
        )
        for name, scores in results.items():
            if kinds[name] != "conversations":
                continue
            categories = list(locomo.CATEGORY_NAMES.values())
            for index, label in ((1, "R@10"), (0, "nDCG@10")):
                cat_rows = []
                for method in QUALITY_METHODS:
                    if method in scores.values:
                        values = scores.by_category(method, index)
                        cat_rows.append(
                            [method, *[values.get(c, float("nan")) for c in categories]]
                        )
                counts = scores.by_category("recall", 1)
                sizes = {c: sum(1 for v in scores.values["recall"] if v[3] == c) for c in counts}
                out.append(
                    f"## {name}: {label} by question category\n\n"
                    + table(["method", *[f"{c} ({sizes.get(c, 0)})" for c in categories]], cat_rows)
                )
        out.append(
            "## Targets\n\n"
            + table(["set", "target", "figure", "bar (same run)", ""], targets(results, kinds))
        )
    for path in args.conversations:
        out += held_out_sections(path, provider, cache, results, kinds, compare)
        if args.http:
            from . import recall_http

            body, http_notes = recall_http.section(
                path, [args.vectors] if args.vectors in ("minilm", "minilm-int8") else []
            )
            out.append(body + "\n\n" + "\n".join(f"- {n}" for n in http_notes))
    if dedup:
        out.append(
            "## Semantic dedup and auto-links when capturing conversations with the binding on\n\n"
            + table(
                [
                    "conversation",
                    "turns",
                    "stored",
                    "blocked (semantic)",
                    "duplicate-candidate",
                    "auto-link edges",
                ],
                dedup,
            )
        )
    if args.stand_in_cost and args.data:
        note, rows = stand_in_cost(args.data, args.conversations)
        out.append(
            "## Stand-ins for unknown words: their cost per recall (read path, ms)\n\n"
            f"- {note}; each query recalled with and without stand-ins, interleaved\n\n"
            + table(
                [
                    "queries",
                    "n",
                    "share with stand-ins",
                    "p50 off",
                    "p50 on",
                    "p99 off",
                    "p99 on",
                    "rewrite p50 off",
                    "rewrite p50 on",
                ],
                rows,
            )
        )
    if args.synthetic:
        note, rows, large = latency(args.synthetic)
        out.append(
            f"## Latency at scale\n\n- {note}\n\n"
            + table(["data", "method", "p50 ms", "p99 ms", "p50 / raw", "p99 / raw"], rows)
        )
        out.append(
            "## MMR + rerank against entry size (recall read path, ms)\n\n"
            + table(
                ["entries", "query", "recall p50", "rerank + MMR p50", "hydrate + snippets p50"],
                large,
            )
        )
    if provider is not None:
        from . import bench_vectors

        out += bench_vectors.report_sections(provider, args.data, sensitivity)
    report = "\n\n".join(out)
    print(report)
    print(
        "\nsaved to",
        save_report("retrieval-vectors" if provider is not None else "retrieval", report),
    )


if __name__ == "__main__":
    main()
