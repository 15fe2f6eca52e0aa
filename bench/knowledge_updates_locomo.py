"""The knowledge-update benchmark's LoCoMo part (bench_knowledge_updates.py --locomo): R@10,
nDCG@10 and recall p50 of this tree against a baseline tree, each side in a process of its own
(`--locomo-json`), alternated over rounds, and the cost of the supersession probe interleaved."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import p50, table

P50_TOLERANCE = 0.05  # recall p50 may be at most 5% above the baseline's
TIMING_PASSES = 2  # each LoCoMo question timed this many times in a round
INTERLEAVED_PASSES = 3  # each LoCoMo question, with and without the supersession probe


def locomo_figures(data: str, with_folds: bool) -> dict:
    """Zero-binding R@10 / nDCG@10 per held-out conversation and their mean (bench/folds.py;
    with `with_folds`), and recall p50 (ms) over every question asked TIMING_PASSES times, on
    this process's code."""
    from . import folds, locomo

    bench = folds.ConversationBench(locomo.load(data))
    try:
        rows = folds.fold_rows(bench) if with_folds else []
        timings = []
        for _ in range(TIMING_PASSES):
            for _cid, ws, questions in bench.runs[False]:
                for question, _ in questions:
                    ws.conn.execute("UPDATE entries SET recall_count = 0")
                    started = time.perf_counter()
                    ws.recall(question.text, topK=10)
                    timings.append((time.perf_counter() - started) * 1000)
    finally:
        bench.close()
    import minisphere

    return {
        "folds": [[r[0], r[1], r[2], r[3]] for r in rows],
        "p50": p50(timings),
        "code": str(Path(minisphere.__file__).resolve().parents[1]),
    }


def interleaved_cost(data: str, passes: int) -> tuple[float, float]:
    """Recall p50 (ms) over every LoCoMo question with and without looking for supersession and
    for the query's names, in one process, question by question in alternating order: the
    machine's load falls on both alike. Without the look (the pool's probe for `supersedes`
    edges answering no, no names found in the query), recall runs the code before supersession
    and the name factor: every later step depends on that probe, and the name factor is 1
    without names."""
    from minisphere.engine.retrieval import recall as pipeline

    from . import folds, locomo

    probe, names = pipeline.any_replaced, pipeline.query_names
    skipped: dict[bool, list[float]] = {True: [], False: []}
    bench = folds.ConversationBench(locomo.load(data))
    try:
        for n in range(passes):
            for _cid, ws, questions in bench.runs[False]:
                for k, (question, _) in enumerate(questions):
                    for skip in (False, True) if (n + k) % 2 else (True, False):
                        pipeline.any_replaced = (lambda conn, ids: False) if skip else probe
                        pipeline.query_names = (lambda q, s: frozenset()) if skip else names
                        ws.conn.execute("UPDATE entries SET recall_count = 0")
                        started = time.perf_counter()
                        ws.recall(question.text, topK=10)
                        skipped[skip].append((time.perf_counter() - started) * 1000)
    finally:
        pipeline.any_replaced, pipeline.query_names = probe, names
        bench.close()
    return p50(skipped[True]), p50(skipped[False])


def baseline_tree(revision: str, folder: Path) -> Path:
    """The baseline's files, exported (not checked out) into `folder`, with this module beside
    its own benchmarks so the same measurement runs on its code."""
    repo = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", revision], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    shutil.copy(Path(__file__), folder / "bench" / Path(__file__).name)
    return folder


def measure_in(tree: Path, data: str, with_folds: bool) -> dict:
    flags = [] if with_folds else ["--timing-only"]
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_knowledge_updates", "--locomo-json", data, *flags],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    if Path(found["code"]) != tree.resolve():  # another tree's minisphere was imported
        raise RuntimeError(f"measured {found['code']}, not {tree}")
    return found


def locomo_comparison(data: str, revision: str, rounds: int) -> tuple[str, list[str]]:
    """The fold table and the notes: quality and p50 against the baseline tree, and the cost of
    reading supersession measured in one process."""
    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = baseline_tree(revision, Path(tmp))
        runs: dict[str, list[dict]] = {"baseline": [], "this tree": []}
        for n in range(rounds):  # alternated: a busy spell of the machine hits both sides
            runs["baseline"].append(measure_in(old_tree, data, n == 0))
            runs["this tree"].append(measure_in(here, data, n == 0))
    before, after = runs["baseline"][0]["folds"], runs["this tree"][0]["folds"]
    rows = [
        [b[0], b[1], b[2], a[2], a[2] - b[2], b[3], a[3], a[3] - b[3]]
        for b, a in zip(before, after)
    ]
    p50s = {side: statistics.median(r["p50"] for r in found) for side, found in runs.items()}
    without, with_reading = interleaved_cost(data, INTERLEAVED_PASSES)
    ratio = with_reading / without
    mean_before, mean_after = before[-1], after[-1]
    notes = [
        f"R@10 mean over folds {mean_before[2]:.4f} -> {mean_after[2]:.4f}, nDCG@10 "
        f"{mean_before[3]:.4f} -> {mean_after[3]:.4f}: "
        + (
            "unchanged or better"
            if mean_after[2] >= mean_before[2] and mean_after[3] >= mean_before[3]
            else "LOWER"
        ),
        f"recall p50, one process, every question {INTERLEAVED_PASSES} times with and without "
        f"the supersession probe and the name factor, interleaved: {without:.3f} ms -> {with_reading:.3f} ms "
        f"({ratio - 1:+.1%}): "
        + ("within 5%" if ratio <= 1 + P50_TOLERANCE else "MORE than 5% slower"),
        f"recall p50, the baseline tree against this tree, each in processes of its own "
        f"(median of {rounds} alternated rounds; the machine's load moves these more than the "
        f"code does): {p50s['baseline']:.3f} ms -> {p50s['this tree']:.3f} ms; rounds: baseline "
        f"{[round(r['p50'], 3) for r in runs['baseline']]}, this tree "
        f"{[round(r['p50'], 3) for r in runs['this tree']]}",
    ]
    headers = ["held-out conversation", "questions", "R@10 before", "R@10 after", "Δ",
               "nDCG@10 before", "nDCG@10 after", "Δ"]  # fmt: skip
    return table(headers, rows), notes
