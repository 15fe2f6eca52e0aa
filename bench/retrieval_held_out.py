"""The retrieval benchmark's held-out sections: the leave-one-conversation-out folds, the
per-category table, the hybrid's settings and recall's own cost with and without a binding."""

from __future__ import annotations

from . import locomo
from .common import table
from .retrieval_methods import Scores

FOLD_TOLERANCE = 0.005  # the hybrid may trail zero-binding by this much on a fold
FOLD_MEAN_GAIN = 0.015  # ...and must gain this much on the mean over the folds
OPEN_DOMAIN_TARGET = 0.40  # zero-binding open-domain R@10, mean over the held-out folds


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
