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
import tempfile
import time
from pathlib import Path

from minisphere.engine.workspace import Workspace

from . import beir, locomo
from .common import save_report, table
from .retrieval_held_out import held_out_sections
from .retrieval_latency import latency, stand_in_cost
from .retrieval_methods import (
    Scores,
    add_raw_index,
    beir_questions,
    conversation_questions,
    load_workspace,
    methods,
    recall_ids,
    reset_recall_counts,
)


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
            zero_binding_run(Path(tmp), conversation, scores)
            if provider is None:
                continue
            bound, bound_questions, rows = bound_run(Path(tmp), conversation, provider, scores)
            dedup_rows += rows
            bound_runs.append((bound, bound_questions))
        if bound_runs and not skip_sensitivity:
            sensitivity = bound_sensitivity(data.name, bound_runs)
    turns = sum(len(c.turns) for c in data.conversations)
    questions = sum(len(c.questions) for c in data.conversations)
    note = (
        f"{data.name}: {len(data.conversations)} conversations, {turns} turns captured and "
        f"linked in {time.perf_counter() - started:.1f} s (all runs), {questions} questions"
    )
    return note, scores, dedup_rows, sensitivity


def zero_binding_run(tmp: Path, conversation, scores: Scores) -> None:
    """Every zero-binding method over one conversation's own workspace."""
    with Workspace(tmp / f"{conversation.id}.db", synchronous="NORMAL") as ws:
        info = locomo.capture_conversation(ws, conversation)
        add_raw_index(ws)
        questions = conversation_questions(conversation, info["turns_of"])
        for name, search in methods(ws).items():
            reset_recall_counts(ws)
            scores.run(name, search, questions)


def bound_run(tmp: Path, conversation, provider, scores: Scores) -> tuple[Workspace, list, list]:
    """The conversation captured again with the binding on and its bound methods scored:
    (the open bound workspace, its questions, its dedup rows)."""
    from . import bench_vectors

    bound = Workspace(tmp / f"{conversation.id}-bound.db", synchronous="NORMAL", embedder=provider)
    bound_info = locomo.capture_conversation(bound, conversation)
    dedup_rows = [
        [
            conversation.id,
            len(conversation.turns),
            bound_info["outcomes"].get("stored", 0),
            len(bound_info["blocked"]),
            bound_info["duplicate_candidates"],
            bound_info["auto_links"],
        ]
    ]
    for blocked_text, matched_text, cosine in bound_info["blocked"]:
        dedup_rows.append(
            ["  blocked", f"{cosine:.3f}", blocked_text[:60], matched_text[:60], "", ""]
        )
    bound_questions = conversation_questions(conversation, bound_info["turns_of"])
    for name, search in bench_vectors.methods(bound, provider).items():
        reset_recall_counts(bound)
        scores.run(name, search, bound_questions)
    return bound, bound_questions, dedup_rows


def bound_sensitivity(name: str, bound_runs: list) -> list:
    """The hybrid's settings varied over every bound conversation at once; closes them."""
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

    sensitivity = [[name, *r] for r in bench_vectors.sensitivity(reset, measure)]
    for bound, _ in bound_runs:
        bound.close()
    return sensitivity


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


def parse_cli() -> argparse.Namespace:
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
    return parser.parse_args()


def make_providers(args) -> tuple:
    """(provider, embedding cache, second provider to compare), each None when not asked for."""
    provider = cache = compare = None
    if args.vectors:
        from . import bench_vectors

        provider, cache = (
            bench_vectors.make(args.vectors),
            bench_vectors.cache_dir(args.embed_cache),
        )
        compare = bench_vectors.make(args.compare_vectors) if args.compare_vectors else None
    return provider, cache, compare


def quality_runs(
    args, provider, cache
) -> tuple[dict[str, Scores], dict[str, str], list, list, list]:
    """(scores by set, kind by set, notes, sensitivity rows, dedup rows) over every set."""
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
    return results, kinds, notes, sensitivity, dedup


def quality_sections(results: dict[str, Scores], kinds: dict[str, str], notes: list) -> list[str]:
    """Quality and latency per set and method, per category on conversations, the targets."""
    rows = [
        [name, method, *scores.row(method)]
        for name, scores in results.items()
        for method in QUALITY_METHODS
        if method in scores.values
    ]
    out = [
        "## Quality (nDCG@10, R@10) and query latency (ms)\n\n"
        + "\n".join(f"- {n}" for n in notes)
        + "\n\n"
        + table(["set", "method", "nDCG@10", "R@10", "p50 ms", "p99 ms"], rows)
    ]
    for name, scores in results.items():
        if kinds[name] == "conversations":
            out += category_sections(name, scores)
    out.append(
        "## Targets\n\n"
        + table(["set", "target", "figure", "bar (same run)", ""], targets(results, kinds))
    )
    return out


def category_sections(name: str, scores: Scores) -> list[str]:
    """R@10, then nDCG@10, by question category of one conversational set."""
    out = []
    categories = list(locomo.CATEGORY_NAMES.values())
    for index, label in ((1, "R@10"), (0, "nDCG@10")):
        cat_rows = []
        for method in QUALITY_METHODS:
            if method in scores.values:
                values = scores.by_category(method, index)
                cat_rows.append([method, *[values.get(c, float("nan")) for c in categories]])
        counts = scores.by_category("recall", 1)
        sizes = {c: sum(1 for v in scores.values["recall"] if v[3] == c) for c in counts}
        out.append(
            f"## {name}: {label} by question category\n\n"
            + table(["method", *[f"{c} ({sizes.get(c, 0)})" for c in categories]], cat_rows)
        )
    return out


def conversation_sections(args, provider, cache, results, kinds, compare) -> list[str]:
    """Per conversational set: the held-out sections, then with --http recall over HTTP."""
    out = []
    for path in args.conversations:
        out += held_out_sections(path, provider, cache, results, kinds, compare)
        if args.http:
            from . import recall_http

            body, http_notes = recall_http.section(
                path, [args.vectors] if args.vectors in ("minilm", "minilm-int8") else []
            )
            out.append(body + "\n\n" + "\n".join(f"- {n}" for n in http_notes))
    return out


def dedup_section(dedup: list) -> str:
    return (
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


def stand_in_section(args) -> str:
    note, rows = stand_in_cost(args.data, args.conversations)
    return (
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


def latency_sections(entries: int) -> list[str]:
    note, rows, large = latency(entries)
    return [
        f"## Latency at scale\n\n- {note}\n\n"
        + table(["data", "method", "p50 ms", "p99 ms", "p50 / raw", "p99 / raw"], rows),
        "## MMR + rerank against entry size (recall read path, ms)\n\n"
        + table(
            ["entries", "query", "recall p50", "rerank + MMR p50", "hydrate + snippets p50"],
            large,
        ),
    ]


def main() -> None:
    args = parse_cli()
    out = []
    provider, cache, compare = make_providers(args)
    results, kinds, notes, sensitivity, dedup = quality_runs(args, provider, cache)
    if results:
        out += quality_sections(results, kinds, notes)
    out += conversation_sections(args, provider, cache, results, kinds, compare)
    if dedup:
        out.append(dedup_section(dedup))
    if args.stand_in_cost and args.data:
        out.append(stand_in_section(args))
    if args.synthetic:
        out += latency_sections(args.synthetic)
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
