"""Maintenance benchmark (engine level, no Ray).

    python -m bench.bench_maintenance [--entries 100000] [--limit 1000] [--queries 300]

1. Fill one workspace with N entries through run_batch (a third each durable / state /
   volatile), then copy its file: workspace L (lazy: never passed) and workspace P.
2. Advance a ManualClock past the longest threshold, so every entry is due.
3. Pass throughput: runStalenessPass({limit}) on P until `remaining` is 0 (entries/s, calls,
   per-call p50/max), then the idle pass right after (nothing to do).
4. Recall latency (the read pipeline, without its recall-count follow-up write), same run,
   same queries, alternating L and P call by call: L judges every result's staleness at read
   time (lazy path), P reads the persisted marks. listRecent(n=20)
   likewise. Both answers are checked to agree (ids, tags, stale fields).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from minisphere.engine.clock import ManualClock
from minisphere.engine.constants import DAY_MS, STALE_AFTER_MS
from minisphere.engine.methods import METHODS, parse_args
from minisphere.engine.workspace import Workspace

from .bench_engine import make_items, make_vocabulary
from .common import p50, percentile, save_report, table

BATCH_SIZE = 256
VOLATILITIES = ("durable", "state", "volatile")
WARMUP_CALLS = 20


def fill(ws: Workspace, n: int, seed: int) -> float:
    items = make_items(n, seed)
    started = time.perf_counter()
    for start in range(0, n, BATCH_SIZE):
        chunk = items[start : start + BATCH_SIZE]
        outcomes = ws.run_batch(
            [
                (
                    "capture",
                    {"content": text, "tags": tags, "volatility": VOLATILITIES[(start + i) % 3]},
                )
                for i, (text, tags) in enumerate(chunk)
            ]
        )
        assert all(ok for ok, _ in outcomes)
    return time.perf_counter() - started


def stale_view(items: list[dict]) -> list[tuple]:
    return [(e["id"], tuple(e["tags"]), e["stale"], e["staleSince"]) for e in items]


def recall_read(ws: Workspace, query: str) -> dict:
    """The recall pipeline only (no recall-count follow-up write), so both workspaces stay
    identical and the timing is the read path the lazy judgement lives in."""
    method = METHODS["recall"]
    return method.handler(
        ws.conn, parse_args(method, {"query": query, "topK": 10}), ws.clock.now_ms()
    )


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1e3, result


def parse_cli(argv: list[str] | None):
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_maintenance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--limit", type=int, default=1000, help="runStalenessPass limit per call")
    parser.add_argument("--queries", type=int, default=300, help="timed recalls per workspace")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--no-save", action="store_true")
    return parser.parse_args(argv)


def fill_pair(workdir: Path, clock: ManualClock, args) -> tuple[float, Workspace, Workspace]:
    """(fill seconds, passed, lazy): one filled file and its copy, every entry then due."""
    print(f"filling {args.entries:,} entries ...", file=sys.stderr, flush=True)
    base = Workspace(workdir / "passed.db", clock=clock, synchronous="NORMAL")
    fill_s = fill(base, args.entries, args.seed)
    base.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    base.close()
    shutil.copyfile(workdir / "passed.db", workdir / "lazy.db")
    passed = Workspace(workdir / "passed.db", clock=clock, synchronous="NORMAL")
    lazy = Workspace(workdir / "lazy.db", clock=clock, synchronous="NORMAL")
    clock.advance(ms=max(STALE_AFTER_MS.values()) + DAY_MS)
    return fill_s, passed, lazy


def pass_until_done(passed: Workspace, args) -> tuple[float, list[float], list[float]]:
    """(pass seconds, per-call ms, idle-pass ms): staleness passes until nothing remains."""
    print("passing ...", file=sys.stderr, flush=True)
    call_ms: list[float] = []
    marked = 0
    started = time.perf_counter()
    while True:
        ms, result = timed(lambda: passed.run_staleness_pass(limit=args.limit))
        call_ms.append(ms)
        marked += result["marked"]
        if result["remaining"] == 0:
            break
    pass_s = time.perf_counter() - started
    assert marked == args.entries, (marked, args.entries)
    idle_ms = [timed(lambda: passed.run_staleness_pass(limit=args.limit))[0] for _ in range(20)]
    return pass_s, call_ms, idle_ms


def recall_lazy_vs_passed(lazy: Workspace, passed: Workspace, args) -> tuple[dict, dict, int]:
    """(recall ms, listRecent ms, stale results): the same queries on both workspaces,
    alternating which goes first, their answers checked to agree."""
    print("recall, lazy vs passed ...", file=sys.stderr, flush=True)
    rng = random.Random(args.seed)
    vocabulary = [w for w in make_vocabulary(random.Random(args.seed)) if len(w) > 3]
    queries = [" ".join(rng.sample(vocabulary, 2)) for _ in range(args.queries + WARMUP_CALLS)]
    recall_ms: dict[str, list[float]] = {"lazy": [], "passed": []}
    recent_ms: dict[str, list[float]] = {"lazy": [], "passed": []}
    stale_items = 0
    for index, query in enumerate(queries):
        answers = {}
        order = (
            (("lazy", lazy), ("passed", passed))
            if index % 2
            else (("passed", passed), ("lazy", lazy))
        )
        for name, ws in order:
            ms, answers[name] = timed(lambda ws=ws, query=query: recall_read(ws, query))
            ms_recent, _recent = timed(lambda ws=ws: ws.list_recent(n=20))
            if index >= WARMUP_CALLS:
                recall_ms[name].append(ms)
                recent_ms[name].append(ms_recent)
        assert stale_view(answers["lazy"]["items"]) == stale_view(answers["passed"]["items"])
        assert answers["lazy"]["revalidate"] == answers["passed"]["revalidate"]
        stale_items += len(answers["passed"]["revalidate"])
    return recall_ms, recent_ms, stale_items


def result_rows(args, fill_s, pass_s, call_ms, idle_ms, recall_ms, recent_ms) -> list[list]:
    rows = [
        [
            "fill (run_batch x256)",
            f"{args.entries / fill_s:,.0f} entries/s",
            f"{fill_s:.1f} s for {args.entries:,}",
        ],
        [
            f"staleness pass, limit {args.limit}",
            f"{args.entries / pass_s:,.0f} entries/s",
            f"{len(call_ms)} calls, {pass_s:.2f} s; per call p50 {p50(call_ms):.1f} ms, "
            f"max {max(call_ms):.1f} ms",
        ],
        ["idle pass (nothing due)", f"{p50(idle_ms):.3f} ms p50", f"max {max(idle_ms):.3f} ms"],
    ]
    for name in ("lazy", "passed"):
        label = "lazy (never passed)" if name == "lazy" else "freshly passed"
        rows.append(
            [
                f"recall topK=10, {label}",
                f"{p50(recall_ms[name]):.3f} ms p50",
                f"p95 {percentile(recall_ms[name], 95):.3f} ms, "
                f"p99 {percentile(recall_ms[name], 99):.3f} ms",
            ]
        )
    for name in ("lazy", "passed"):
        label = "lazy (never passed)" if name == "lazy" else "freshly passed"
        rows.append(
            [
                f"listRecent n=20, {label}",
                f"{p50(recent_ms[name]):.3f} ms p50",
                f"p95 {percentile(recent_ms[name], 95):.3f} ms",
            ]
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_cli(argv)

    load_before = os.getloadavg()[0]
    wall = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="bench-maint-", dir=args.dir))
    clock = ManualClock()
    try:
        fill_s, passed, lazy = fill_pair(workdir, clock, args)
        pass_s, call_ms, idle_ms = pass_until_done(passed, args)
        recall_ms, recent_ms, stale_items = recall_lazy_vs_passed(lazy, passed, args)
        lazy.close()
        passed.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    rows = result_rows(args, fill_s, pass_s, call_ms, idle_ms, recall_ms, recent_ms)
    body = table(["measure", "result", "detail"], rows)
    notes = (
        f"\n\n{args.entries:,} entries (a third each durable/state/volatile), all due after a "
        f"ManualClock jump of 366 days; SQLite WAL, synchronous=NORMAL. Recall: "
        f"{args.queries} two-word queries (after {WARMUP_CALLS} warm-up), the same query on both "
        "workspaces back to back in alternating order; the recall pipeline only (its "
        "recall-count follow-up write is not made, so both files stay identical). Both "
        "workspaces' answers were checked to agree on ids, tags, stale and "
        f"staleSince ({stale_items} stale results carried revalidate prompts).\n"
        f"Total wall time {time.perf_counter() - wall:.0f} s on {os.cpu_count()} CPUs; 1-minute "
        f"load average {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end "
        "(shared machine)."
    )
    print(body + notes)
    if not args.no_save:
        print(f"saved {save_report('maintenance', body + notes)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
