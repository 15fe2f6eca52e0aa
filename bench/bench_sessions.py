"""The load agents really produce: sessions arriving at random, each a burst of calls to one
workspace, then silence until it hibernates.

    python -m bench.bench_sessions                       # 500 workspaces, 300 s of arrivals
    python -m bench.bench_sessions --arrivals-s 60       # a quicker look
    python -m bench.bench_sessions --rate 0.5            # half the arrivals (its own report)

One local Ray + Serve, settings at their defaults (the pool follows demand, workspaces hibernate
after MINISPHERE_HIBERNATE_IDLE_S of silence). Sessions arrive as a Poisson process (one per
second on average) on a workspace picked uniformly from those not in a session; each session
makes `--calls` calls about a second apart (70% getCount, 30% capture). The first call of a
session whose workspace is not resident is a wake. Reported: every call's latency (p50, p99),
the first calls' apart, errors (a call over CALL_TIMEOUT_S is one), how the wakes were served
(a warm spare, or a new process the wake waited for) and how many workspaces the resident cap
evicted, from the directory's own counts.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import time
from pathlib import Path

import httpx

from .bench_serverless import create_workspaces
from .common import machine_note, p50, percentile, publish_report, table
from .cpu_ledger import CpuLedger
from .local_service import start_local_service, stop_local_service

ADMIN_TOKEN = "bench-sessions-admin-0123456789abcdef"
WORKSPACES = 500
SESSIONS_PER_S = 1.0
CALLS_PER_SESSION = 30
CALL_GAP_S = 1.0                 # a session's calls are about this far apart (±50%)
READ_SHARE = 0.7
P99_TARGET_MS = 1000.0
CALL_TIMEOUT_S = 30.0            # a call slower than this counts as an error (and ends it)
SPARE_SHARE_TARGET = 0.9
SETTLE_TIMEOUT_S = 60.0          # after the run, waiting for wakes and hibernations to end
SETTLE_S = 3.0


class Sessions:
    """The run's sessions and what they saw."""

    def __init__(self, http: httpx.AsyncClient, spaces: list, calls: int, seed: int):
        self.http, self.spaces, self.calls = http, spaces, calls
        self.rng = random.Random(seed)
        self.busy: set[str] = set()
        self.latencies: list[float] = []
        self.first_calls: list[float] = []
        self.errors: list[str] = []
        self.started = 0

    async def session(self, ws: str, headers: dict) -> None:
        try:
            for n in range(self.calls):
                if self.rng.random() < READ_SHARE:
                    method, body = "getCount", {}
                else:
                    method, body = "capture", {"content": f"session note {n} {self.rng.random()}"}
                began = time.perf_counter()
                try:
                    answer = await self.http.post(f"/v1/w/{ws}/{method}", json=body,
                                                  headers=headers)
                    if answer.status_code != 200:
                        self.errors.append(f"{answer.status_code} {answer.text[:120]}")
                except httpx.HTTPError as exc:
                    self.errors.append(repr(exc))
                elapsed = (time.perf_counter() - began) * 1e3
                self.latencies.append(elapsed)
                if n == 0:
                    self.first_calls.append(elapsed)
                await asyncio.sleep(CALL_GAP_S * self.rng.uniform(0.5, 1.5))
        finally:
            self.busy.discard(ws)

    async def arrivals(self, seconds: float, rate: float) -> None:
        """Poisson arrivals for `seconds`; then wait for every session to end."""
        tasks = []
        stop_at = time.monotonic() + seconds
        while time.monotonic() < stop_at:
            await asyncio.sleep(self.rng.expovariate(rate))
            idle = [space for space in self.spaces if space[0] not in self.busy]
            ws, headers = self.rng.choice(idle)
            self.busy.add(ws)
            self.started += 1
            tasks.append(asyncio.create_task(self.session(ws, headers)))
        await asyncio.gather(*tasks)


def live_workspace_actors(ray) -> int:
    """Workspace actor processes Ray reports alive or starting: each one the directory does not
    account for is a leak (a process and a workspace slot that nothing will ever free)."""
    return sum(1 for actor in ray._private.state.actors().values()    # noqa: SLF001
               if actor.get("ActorClassName") == "WorkspaceActor" and actor["State"] != "DEAD")


def settled_status(ray, directory) -> dict:
    """The directory's residency once no wake or hibernation is in flight (at most
    SETTLE_TIMEOUT_S): an actor being killed is still alive for Ray a moment longer."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        status = ray.get(directory.residency_status.remote(), timeout=60)
        state = status["state"]
        if (not state["activations"] and not state["hibernations"]
                and not status["spares"]["starting"]) or time.monotonic() > deadline:
            time.sleep(SETTLE_S)                  # Ray's view of the last kills catches up
            return ray.get(directory.residency_status.remote(), timeout=60)
        time.sleep(0.5)


def cpu_rows(ledger: CpuLedger, seconds: float, sessions: int) -> list[list]:
    """Where the CPU went over the arrivals window, by kind of process."""
    spent = ledger.by_kind()
    capacity = (os.cpu_count() or 1) * seconds
    rows = [[kind, f"{cpu:.0f} CPU-s", f"{cpu / max(1, sessions):.2f} CPU-s per session",
             f"{cpu / capacity:.0%} of the machine"] for kind, cpu in spent.items() if cpu >= 0.5]
    total = sum(spent.values())
    rows.append(["all", f"{total:.0f} CPU-s", f"{total / max(1, sessions):.2f} CPU-s per session",
                 f"{total / capacity:.0%} of {os.cpu_count()} CPUs over {seconds:.0f} s"])
    return rows


def run(url: str, admin: dict, directory, args) -> tuple[list, list]:
    import ray
    with httpx.Client(base_url=url, timeout=300) as http:
        spaces = create_workspaces(http, admin, args.workspaces, "session")
    before = ray.get(directory.residency_status.remote(), timeout=60)

    async def drive() -> Sessions:
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
        async with httpx.AsyncClient(base_url=url, timeout=CALL_TIMEOUT_S,
                                     limits=limits) as http:
            sessions = Sessions(http, spaces, args.calls, seed=7)
            await sessions.arrivals(args.arrivals_s, args.rate)
            return sessions
    print(f"sessions arriving for {args.arrivals_s:.0f} s ...", flush=True)
    ledger = CpuLedger()
    ledger.start()
    began = time.monotonic()
    sessions = asyncio.run(drive())
    took = time.monotonic() - began
    ledger.stop()
    after = settled_status(ray, directory)
    processes = live_workspace_actors(ray)
    lru = after["hibernations"].get("lru", 0) - before["hibernations"].get("lru", 0)
    spare = after["wakes"]["spare"] - before["wakes"]["spare"]
    new = after["wakes"]["new"] - before["wakes"]["new"]
    wakes = spare + new
    share = spare / wakes if wakes else 1.0
    p99 = percentile(sessions.latencies, 99)
    pool = after["spares"]
    rows = [
        [f"{sessions.started} sessions of {args.calls} calls over {args.workspaces} workspaces",
         f"p50 {p50(sessions.latencies):.1f} ms, p99 {p99:.0f} ms",
         f"{len(sessions.latencies)} calls in {took:.0f} s, errors {len(sessions.errors)}",
         f"p99 ≤ {P99_TARGET_MS:.0f} ms, 0 errors: "
         f"{'met' if p99 <= P99_TARGET_MS and not sessions.errors else 'missed'}"],
        ["a session's first call", f"p50 {p50(sessions.first_calls):.1f} ms, "
         f"p99 {percentile(sessions.first_calls, 99):.0f} ms", "a wake unless still resident", ""],
        ["wakes served by a warm spare", f"{spare}/{wakes} ({share:.0%})",
         f"{new} waited for a new process; pool at the end: size {pool['size']}, ready "
         f"{pool['ready']}, peak {pool['peakWakesPerMinute']} wakes/min",
         f"≥ {SPARE_SHARE_TARGET:.0%}: {'met' if share >= SPARE_SHARE_TARGET else 'missed'}"]]
    tracked = after["resident"] + pool["ready"] + pool["starting"] + after["state"]["activations"]
    rows.append(["workspace actor processes at the end", f"{processes} alive",
                 f"the directory accounts for {tracked} (resident, spares ready or starting, "
                 f"activations); {max(0, processes - tracked)} more are nobody's",
                 f"none unaccounted: {'met' if processes <= tracked else 'missed'}"])
    notes = [f"resident at the end {after['resident']} (cap {after['maxResident']}); idle "
             f"workspaces hibernate after {after['idleS']:g} s; {lru} hibernated to make room "
             f"under the cap ({lru / max(1, sessions.started):.2f} per session)",
             *(f"error: {error}" for error in sessions.errors[:5])]
    return rows, notes, cpu_rows(ledger, took, sessions.started)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspaces", type=int, default=WORKSPACES)
    parser.add_argument("--arrivals-s", type=float, default=300.0,
                        help="how long sessions keep arriving, seconds")
    parser.add_argument("--rate", type=float, default=SESSIONS_PER_S, help="sessions per second")
    parser.add_argument("--calls", type=int, default=CALLS_PER_SESSION, help="calls per session")
    args = parser.parse_args(argv)
    settings, url, admin = start_local_service("bench-sessions", ADMIN_TOKEN)
    from actors.directory_actor import get_directory
    try:
        rows, notes, cpu = run(url, admin, get_directory(settings), args)
    finally:
        stop_local_service(settings)
        shutil.rmtree(Path(settings.data_dir), ignore_errors=True)
    body = "\n\n".join([
        table(["measure", "figure", "detail", "target"], rows),
        "Where the CPU went while sessions arrived and ran (every process on the machine, "
        "sampled each second):",
        table(["processes", "CPU", "per session", "share"], cpu)])
    # another arrival rate is another workload: its report is kept beside the default one
    name = "sessions" if args.rate == SESSIONS_PER_S else f"sessions-at-{args.rate:g}-per-s"
    return publish_report(name, body, [*notes, machine_note("; settings at their defaults")])


if __name__ == "__main__":
    raise SystemExit(main())
