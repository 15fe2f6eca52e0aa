"""The spare pool following demand, on the launcher's cluster: wakes after a warm-up burst.

    python -m bench.bench_spare_demand

One local Ray + Serve (settings at their defaults: the pool follows demand). Every figure is
an HTTP getCount, beside a warm call to a resident workspace in the same run:
1. warm: sequential getCount on one resident workspace, back to back (the targets' baseline)
   and one per second (any call after a pause is slower on this machine: the trickle's own
   pacing, shown beside it);
2. a warm-up burst: 30 new workspaces called back to back (each call the workspace's first
   wake), then every one hibernates, and the pool is given the time its process starts take to
   grow (up to `POOL_GROWTH_WAIT_S`);
3. 20 of them woken again back to back (target p50 ≤ 3× warm);
4. 10 others woken one per second right after, while the pool refills the 20 spares the burst
   took (a process start each, one at a time: shown, no target);
5. once the pool is full again, the last 10 woken one per second: the steady trickle, where
   each wake's replacement starts half a second after it (target p50 ≤ 2× warm).
"""

from __future__ import annotations

import argparse
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from .bench_serverless import create_workspaces, timed
from .bench_service import server_timing
from .common import machine_note, p50, percentile, publish_report, table
from .local_service import start_local_service, stop_local_service

ADMIN_TOKEN = "bench-spare-demand-admin-0123456789"
BURST = 20
POOL_GROWTH_WAIT_S = 120.0
TRICKLE_WAKES = 10
PACED_WARM_CALLS = 15  # warm calls one per second, the trickle's pacing
BURST_TARGET, TRICKLE_TARGET = 3.0, 2.0


class Wakes:
    """getCount on each workspace in turn (each a wake), `gap_s` apart: latencies in ms, and
    the ingress's own split of each (its Server-Timing): waiting for the actor (the
    directory's activation) and the call to the woken actor."""

    def __init__(self, http: httpx.Client, spaces: list, gap_s: float = 0.0):
        self.latencies: list[float] = []
        self.parts: list[dict[str, float]] = []
        for ws, headers in spaces:
            started = time.perf_counter()
            answer = http.post(f"/v1/w/{ws}/getCount", json={}, headers=headers)
            assert answer.status_code == 200
            self.latencies.append((time.perf_counter() - started) * 1e3)
            self.parts.append(server_timing(answer))
            time.sleep(gap_s)

    def at_ingress(self) -> str:
        def part(name: str) -> float:
            return p50([parts.get(name, 0.0) for parts in self.parts])

        return (
            f"at the ingress p50: waiting for the actor {part('activate'):.0f} ms, "
            f"then the call {part('rpc'):.0f} ms"
        )


def wake_parts(http: httpx.Client, admin: dict, spaces: list, wakes: Wakes) -> str:
    """Where each wake's time went (p50 ms): at the ingress, in the directory, binding. A
    workspace already hibernated again (residency pressure on a busy machine) has no wake
    record left, and is counted apart."""
    answers = [
        http.get(f"/v1/workspaces/{ws}", headers=admin).json()["durability"]["wake"]
        for ws, _ in spaces
    ]
    records = [wake for wake in answers if wake]
    spare = sum(wake["actor"] == "spare" for wake in records)
    gone = (
        f" ({len(answers) - len(records)} hibernated since, no record)"
        if len(records) < len(answers)
        else ""
    )
    return (
        f"{spare}/{len(records)} from a spare{gone}; {wakes.at_ingress()}; in the directory p50 "
        f"{p50([w['wakeMs'] for w in records]):.0f} ms, of it binding "
        f"{p50([w['bindMs'] for w in records]):.0f} ms, of that the actor opening the file "
        f"{p50([w.get('openMs') or 0 for w in records]):.0f} ms"
    )


def wait_pool(directory, ready: int | None = None) -> dict:
    """The pool's status once it holds `ready` spares (default: its size) and starts no more,
    or after POOL_GROWTH_WAIT_S."""
    import ray

    deadline = time.monotonic() + POOL_GROWTH_WAIT_S
    while True:
        status = ray.get(directory.spares.remote(), timeout=60)
        wanted = status["size"] if ready is None else ready
        if (status["ready"] >= wanted and not status["starting"]) or time.monotonic() > deadline:
            return status
        time.sleep(0.5)


@dataclass
class DemandRun:
    """What one run measured: warm calls, then each group of wakes and the pool around it."""

    warm: list[float]
    paced: list[float]
    first: list[float]
    before: dict
    grown: dict
    second: list[float]
    refilling: list[float]
    refilled: dict
    refill_s: float
    trickle: list[float]
    second_parts: str
    refill_parts: str
    trickle_parts: str


def run(http: httpx.Client, admin: dict, directory, samples: int) -> tuple[list, dict]:
    import ray

    rows = demand_rows(measure(http, admin, directory, samples))
    return rows, ray.get(directory.spares.remote(), timeout=60)


def measure(http: httpx.Client, admin: dict, directory, samples: int) -> DemandRun:
    import ray

    warm, paced = warm_calls(http, admin, samples)
    spaces = create_workspaces(http, admin, BURST + 2 * TRICKLE_WAKES, "sleeper")
    wait_pool(directory)
    before = ray.get(directory.spares.remote(), timeout=60)
    first = Wakes(http, spaces).latencies  # the warm-up burst: each workspace's first wake
    for ws, _ in spaces:  # then all hibernate (snapshotted, closed)
        assert http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin).status_code == 200
    grown = wait_pool(directory, BURST)
    during, steady = spaces[BURST : BURST + TRICKLE_WAKES], spaces[BURST + TRICKLE_WAKES :]
    second_wakes = Wakes(http, spaces[:BURST])
    burst_ended = time.monotonic()
    refill_wakes = Wakes(http, during, gap_s=1.0)
    refilled = wait_pool(directory)
    refill_s = time.monotonic() - burst_ended
    trickle_wakes = Wakes(http, steady, gap_s=1.0)
    return DemandRun(
        warm,
        paced,
        first,
        before,
        grown,
        second_wakes.latencies,
        refill_wakes.latencies,
        refilled,
        refill_s,
        trickle_wakes.latencies,
        wake_parts(http, admin, spaces[:BURST], second_wakes),
        wake_parts(http, admin, during, refill_wakes),
        wake_parts(http, admin, steady, trickle_wakes),
    )


def warm_calls(http: httpx.Client, admin: dict, samples: int) -> tuple[list[float], list[float]]:
    """getCount on one resident workspace: back to back, then one per second (ms)."""
    (one,) = create_workspaces(http, admin, 1, "warm")
    http.post(f"/v1/w/{one[0]}/getCount", json={}, headers=one[1])
    warm = timed(lambda i: http.post(f"/v1/w/{one[0]}/getCount", json={}, headers=one[1]), samples)
    paced = []
    for _ in range(PACED_WARM_CALLS):
        time.sleep(1.0)
        started = time.perf_counter()
        http.post(f"/v1/w/{one[0]}/getCount", json={}, headers=one[1])
        paced.append((time.perf_counter() - started) * 1e3)
    return warm, paced


def demand_rows(m: DemandRun) -> list[list]:
    warm, paced, first, second, refilling, trickle = (
        m.warm,
        m.paced,
        m.first,
        m.second,
        m.refilling,
        m.trickle,
    )
    before, grown, refilled, refill_s = m.before, m.grown, m.refilled, m.refill_s
    second_parts, refill_parts, trickle_parts = m.second_parts, m.refill_parts, m.trickle_parts
    warm_p50, paced_p50 = p50(warm), p50(paced)
    return [
        [
            "warm getCount (one resident workspace)",
            f"p50 {warm_p50:.1f} ms",
            f"p99 {percentile(warm, 99):.1f} ms",
            "baseline",
        ],
        [
            "warm getCount one per second (the same workspace)",
            f"p50 {paced_p50:.1f} ms",
            f"p99 {percentile(paced, 99):.1f} ms; {paced_p50 / warm_p50:.2f}× back to back",
            "",
        ],
        [
            f"warm-up burst: {len(first)} first wakes back to back, then all hibernate",
            f"p50 {p50(first):.0f} ms",
            f"pool before: size {before['size']}, ready {before['ready']}",
            "",
        ],
        [
            f"{BURST} of them woken again back to back",
            f"p50 {p50(second):.1f} ms ({p50(second) / warm_p50:.1f}×)",
            f"pool grown to size {grown['size']}, ready {grown['ready']}; {second_parts}",
            f"≤ {BURST_TARGET:g}× warm: "
            f"{'met' if p50(second) <= BURST_TARGET * warm_p50 else 'missed'}",
        ],
        [
            f"{TRICKLE_WAKES} others woken one per second right after, while the pool refills",
            f"p50 {p50(refilling):.1f} ms ({p50(refilling) / warm_p50:.1f}×)",
            f"p99 {percentile(refilling, 99):.1f} ms; the pool full again {refill_s:.0f} s after "
            f"the burst (size {refilled['size']}); {refill_parts}",
            "",
        ],
        [
            f"the last {TRICKLE_WAKES} woken one per second, the pool full",
            f"p50 {p50(trickle):.1f} ms ({p50(trickle) / warm_p50:.1f}×)",
            f"p99 {percentile(trickle, 99):.1f} ms; {p50(trickle) / paced_p50:.1f}× a warm call "
            f"one per second; {trickle_parts}",
            f"≤ {TRICKLE_TARGET:g}× warm: "
            f"{'met' if p50(trickle) <= TRICKLE_TARGET * warm_p50 else 'missed'}",
        ],
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100, help="warm calls timed")
    args = parser.parse_args(argv)
    settings, url, admin = start_local_service("bench-spare-demand", ADMIN_TOKEN)
    from actors.directory.actor import get_directory

    try:
        with httpx.Client(base_url=url, timeout=300) as http:
            rows, pool = run(http, admin, get_directory(settings), args.samples)
    finally:
        stop_local_service(settings)
        shutil.rmtree(Path(settings.data_dir), ignore_errors=True)
    body = table(["measure", "figure", "detail", "target"], rows)
    notes = [
        f"the pool at the end: size {pool['size']} (floor {pool['floor']}, budget "
        f"{pool['ceiling']}), peak {pool['peakWakesPerMinute']} wakes/min, spare start "
        f"p50 {pool['startSecondsP50'] or 0:.2f} s",
        machine_note("; settings at their defaults"),
    ]
    return publish_report("spare-demand", body, notes)


if __name__ == "__main__":
    raise SystemExit(main())
