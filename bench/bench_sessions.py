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
the first calls' apart, errors (a call over CALL_TIMEOUT_S is one), the refusals (503
`overloaded` with Retry-After: the call is sent again after that pause, up to three times, as the
clients do; a session whose call stays refused is turned away), calls left without any answer
for 2 s, the sessions completed per second, how the wakes were served (a recycled process, a
pre-started spare, or a new process the wake waited for), the CPU per session and how many
workspaces the resident cap evicted, from the directory's own counts.

    python -m bench.bench_sessions --rate 2 --arrivals-s 120   # more than 2 cores can serve
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import threading
import time
from pathlib import Path

import aiohttp
import httpx

from minisphere.client.exchange import OVERLOAD_RETRY_JITTER

from .bench_serverless import create_workspaces
from .closed_loop import READ_SHARE, refused_for, session
from .common import machine_note, p50, percentile, publish_report, table
from .cpu_ledger import OTHER, CpuLedger
from .local_service import start_local_service, stop_local_service

ADMIN_TOKEN = "bench-sessions-admin-0123456789abcdef"
WORKSPACES = 500
SESSIONS_PER_S = 1.0
CALLS_PER_SESSION = 30
CALL_GAP_S = 1.0  # a session's calls are about this far apart (±50%)
P99_TARGET_MS = 1000.0
CONNECTIONS = 256
CALL_TIMEOUT_S = 30.0  # a call slower than this counts as an error (and ends it)
SPARE_SHARE_TARGET = 0.95
OVERLOAD_RESENDS = 3  # as the clients: a refused call is sent again this many times
UNANSWERED_MS = 2000.0  # a call with no answer by then counts as left waiting
REFUSAL_P99_TARGET_MS = 100.0
CPU_PER_SESSION_TARGET_S = 1.2
STEADY_CPU_PER_SESSION_TARGET_S = 0.5
# a session lasts about CALLS_PER_SESSION s and its workspace hibernates about 10 s later: by
# then as many hibernate as wake
STEADY_AFTER_S = 60.0
# the spare pool's counters shown for the steady window: processes started, handed to wakes,
# recycled, and ended because the pool had no room for them or shrank
STEADY_POOL_COUNTERS = ("started", "handedOut", "recycled", "notKept", "shrunk")
SETTLE_TIMEOUT_S = 60.0  # after the run, waiting for wakes and hibernations to end
SETTLE_S = 3.0


class Sessions:
    """The run's sessions and what they saw."""

    def __init__(self, http: aiohttp.ClientSession, spaces: list, calls: int, seed: int):
        self.http, self.spaces, self.calls = http, spaces, calls
        self.rng = random.Random(seed)
        self.busy: set[str] = set()
        self.latencies: list[float] = []
        self.first_calls: list[float] = []
        self.errors: list[str] = []
        self.refusals: list[float] = []  # how long a 503 overloaded took to arrive, ms
        self.slow = 0  # calls with no answer (of any kind) within 2 s
        self.started = self.completed = self.turned_away = 0

    async def session(self, ws: str, headers: dict) -> None:
        """One session's calls; a call refused with 503 + Retry-After is sent again after the
        pause it asks for (jittered, at most OVERLOAD_RESENDS times), as the clients do, and a
        session whose call stays refused gives up (turned away)."""
        try:
            for n in range(self.calls):
                if self.rng.random() < READ_SHARE:
                    method, body = "getCount", {}
                else:
                    method, body = "capture", {"content": f"session note {n} {self.rng.random()}"}
                if not await self.one_call(ws, headers, method, body, first=n == 0):
                    self.turned_away += 1
                    return
                await asyncio.sleep(CALL_GAP_S * self.rng.uniform(0.5, 1.5))
            self.completed += 1
        finally:
            self.busy.discard(ws)

    async def one_call(self, ws: str, headers: dict, method: str, body: dict, first: bool) -> bool:
        """Send until answered (True) or refused past the resends (False)."""
        for resent in range(OVERLOAD_RESENDS + 1):
            began = time.perf_counter()
            retry_after = None
            try:
                async with self.http.post(
                    f"/v1/w/{ws}/{method}", json=body, headers=headers
                ) as answer:
                    text = await answer.text()
                    retry_after = refused_for(answer.status, answer.headers)
                if retry_after is not None:
                    self.refusals.append((time.perf_counter() - began) * 1e3)
                    if json.loads(text)["error"]["code"] != "overloaded":
                        self.errors.append(f"503 {text[:120]}")
                elif answer.status != 200:
                    self.errors.append(f"{answer.status} {text[:120]}")
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.errors.append(repr(exc))
            elapsed = (time.perf_counter() - began) * 1e3
            if elapsed > UNANSWERED_MS:
                self.slow += 1
            if retry_after is None:
                self.latencies.append(elapsed)
                if first and not resent:
                    self.first_calls.append(elapsed)
                return True
            if resent < OVERLOAD_RESENDS:
                await asyncio.sleep(retry_after * self.rng.uniform(*OVERLOAD_RETRY_JITTER))
        return False

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
    return sum(
        1
        for actor in ray._private.state.actors().values()
        if actor.get("ActorClassName") == "WorkspaceActor" and actor["State"] != "DEAD"
    )


def settled_status(ray, directory) -> dict:
    """The directory's residency once no wake or hibernation is in flight (at most
    SETTLE_TIMEOUT_S): an actor being killed is still alive for Ray a moment longer."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        status = ray.get(directory.residency_status.remote(), timeout=60)
        state = status["state"]
        if (
            not state["activations"]
            and not state["hibernations"]
            and not status["spares"]["starting"]
        ) or time.monotonic() > deadline:
            time.sleep(SETTLE_S)  # Ray's view of the last kills catches up
            return ray.get(directory.residency_status.remote(), timeout=60)
        time.sleep(0.5)


def tracked_processes(status: dict) -> int:
    """Workspace processes the directory accounts for: resident, spares ready or starting, and
    activations under way."""
    pool = status["spares"]
    return status["resident"] + pool["ready"] + pool["starting"] + status["state"]["activations"]


def accounted_processes(ray, directory) -> tuple[dict, int]:
    """The settled status and the live workspace processes, once Ray's view of the last kills
    has caught up with the directory's (at most SETTLE_TIMEOUT_S): a process killed on a loaded
    node is reported dead seconds later. One still unaccounted for by then is a leak."""
    status = settled_status(ray, directory)
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while (live := live_workspace_actors(ray)) > tracked_processes(
        status
    ) and time.monotonic() < deadline:
        time.sleep(1.0)
        status = ray.get(directory.residency_status.remote(), timeout=60)
    return status, live


def cpu_rows(ledger: CpuLedger, seconds: float, sessions: int) -> list[list]:
    """Where the CPU went over the arrivals window, by kind of process."""
    spent = ledger.by_kind()
    capacity = (os.cpu_count() or 1) * seconds
    rows = [
        [
            kind,
            f"{cpu:.0f} CPU-s",
            f"{cpu / max(1, sessions):.2f} CPU-s per session",
            f"{cpu / capacity:.0%} of the machine",
        ]
        for kind, cpu in spent.items()
        if cpu >= 0.5
    ]
    total = sum(spent.values())
    rows.append(
        [
            "all",
            f"{total:.0f} CPU-s",
            f"{total / max(1, sessions):.2f} CPU-s per session",
            f"{total / capacity:.0%} of {os.cpu_count()} CPUs over {seconds:.0f} s",
        ]
    )
    return rows


class SteadyWindow:
    """The machine's CPU from STEADY_AFTER_S into the arrivals to their end: by then as many
    sessions end (and their workspaces hibernate, handing their processes back) as begin, so
    the processes that had to start once for the residents a run builds up are behind it. Its
    CPU per session is that window's CPU over the sessions that began in it."""

    def __init__(self, sessions_started, pool_status, after_s: float, until_s: float):
        self.count = sessions_started  # () -> sessions begun so far
        self.pool_status = pool_status  # () -> the spare pool's status (its counters)
        self.ledger: CpuLedger | None = None
        self.sessions = 0
        self.pool_change: dict[str, int] = {}
        self.seconds = max(0.0, until_s - after_s)
        self._timers = [
            threading.Timer(after_s, self._open),
            threading.Timer(until_s, self._close),
        ]

    def start(self) -> None:
        if self.seconds > 0:
            for timer in self._timers:
                timer.start()

    def _open(self) -> None:
        self.ledger = CpuLedger()
        self.ledger.start()
        self._began = self.count()
        self._pool = self.pool_status()

    def _close(self) -> None:
        if self.ledger is not None:
            self.ledger.stop()
            self.sessions = self.count() - self._began
            now = self.pool_status()
            self.pool_change = {
                key: now[key] - self._pool[key] for key in STEADY_POOL_COUNTERS if key in now
            }

    def service_cpu_per_session(self) -> float | None:
        """CPU-s per session of every process but the shared machine's unrelated ones (None:
        the run was too short to have a steady window)."""
        if self.ledger is None or not self.sessions:
            return None
        spent = self.ledger.by_kind()
        return (sum(spent.values()) - spent.get(OTHER, 0.0)) / self.sessions


def run(url: str, admin: dict, directory, args) -> tuple[list, list]:
    import ray

    with httpx.Client(base_url=url, timeout=300) as http:
        spaces = create_workspaces(http, admin, args.workspaces, "session")
    before = ray.get(directory.residency_status.remote(), timeout=60)

    async def drive() -> Sessions:
        async with session(url, CONNECTIONS, CALL_TIMEOUT_S) as http:  # aiohttp's: closed_loop
            sessions = Sessions(http, spaces, args.calls, seed=7)
            steady = SteadyWindow(
                lambda: sessions.started,
                lambda: ray.get(directory.spares.remote(), timeout=60),
                STEADY_AFTER_S,
                args.arrivals_s,
            )
            steady.start()
            await sessions.arrivals(args.arrivals_s, args.rate)
            return sessions, steady

    print(f"sessions arriving for {args.arrivals_s:.0f} s ...", flush=True)
    ledger = CpuLedger()
    ledger.start()
    began = time.monotonic()
    sessions, steady = asyncio.run(drive())
    took = time.monotonic() - began
    ledger.stop()
    after, processes = accounted_processes(ray, directory)
    rows, notes = report_rows(sessions, before, after, processes, took, args)
    cpu = cpu_rows(ledger, took, sessions.started)
    spent = ledger.by_kind()
    total_cpu = sum(spent.values()) / max(1, sessions.started)
    # the machine is shared: what unrelated processes spent is shown, not charged to sessions
    service_cpu = total_cpu - spent.get(OTHER, 0.0) / max(1, sessions.started)
    rows.append(
        [
            "CPU per session",
            f"{service_cpu:.2f} CPU-s",
            f"the service's processes and the benchmark's clients; {total_cpu:.2f} CPU-s "
            "with every process on the machine",
            f"≤ {CPU_PER_SESSION_TARGET_S:g} CPU-s: "
            f"{'met' if service_cpu <= CPU_PER_SESSION_TARGET_S else 'missed'}",
        ]
    )
    per_steady = steady.service_cpu_per_session()
    if per_steady is not None:
        rows.append(
            [
                "CPU per session, steady state",
                f"{per_steady:.2f} CPU-s",
                f"{steady.sessions} sessions began from {STEADY_AFTER_S:.0f} s into the "
                f"arrivals to their end ({steady.seconds:.0f} s): the processes started once "
                f"for the residents a run builds up are behind it; the pool in it: "
                + ", ".join(f"{key} {n}" for key, n in steady.pool_change.items()),
                f"≤ {STEADY_CPU_PER_SESSION_TARGET_S:g} CPU-s: "
                f"{met(per_steady <= STEADY_CPU_PER_SESSION_TARGET_S)}",
            ]
        )
    return rows, notes, cpu


def met(ok: bool) -> str:
    return "met" if ok else "missed"


def report_rows(
    sessions: Sessions, before: dict, after: dict, processes: int, took: float, args
) -> tuple[list, list]:
    rows = session_rows(sessions, took, args) + wake_rows(sessions, before, after, processes)
    return rows, end_notes(sessions, after)


def session_rows(sessions: Sessions, took: float, args) -> list[list]:
    """The calls' latency and errors, sessions completed, refusals, unanswered, first calls."""
    p99 = percentile(sessions.latencies, 99)
    refused_p99 = percentile(sessions.refusals, 99) if sessions.refusals else 0.0
    return [
        [
            f"{sessions.started} sessions of {args.calls} calls over {args.workspaces} workspaces",
            f"p50 {p50(sessions.latencies):.1f} ms, p99 {p99:.0f} ms (calls answered)",
            f"{len(sessions.latencies)} calls in {took:.0f} s, errors {len(sessions.errors)}",
            f"p99 ≤ {P99_TARGET_MS:.0f} ms, 0 errors: "
            f"{met(p99 <= P99_TARGET_MS and not sessions.errors)}",
        ],
        [
            "sessions completed",
            f"{sessions.completed} ({sessions.completed / took:.2f}/s)",
            f"{sessions.turned_away} turned away (still refused after {OVERLOAD_RESENDS} resends)",
            "",
        ],
        [
            "refusals (503 overloaded + Retry-After)",
            f"{len(sessions.refusals)}",
            f"answered p50 {p50(sessions.refusals) if sessions.refusals else 0:.1f} ms, "
            f"p99 {refused_p99:.0f} ms",
            f"p99 ≤ {REFUSAL_P99_TARGET_MS:.0f} ms: {met(refused_p99 <= REFUSAL_P99_TARGET_MS)}",
        ],
        [
            f"calls with no answer within {UNANSWERED_MS / 1e3:g} s",
            f"{sessions.slow}",
            "answered or refused, any status",
            f"0: {met(not sessions.slow)}",
        ],
        [
            "a session's first call",
            f"p50 {p50(sessions.first_calls):.1f} ms, "
            f"p99 {percentile(sessions.first_calls, 99):.0f} ms",
            "a wake unless still resident",
            "",
        ],
    ]


def wake_rows(sessions: Sessions, before: dict, after: dict, processes: int) -> list[list]:
    """How the run's wakes were bound, per session, and the workspace processes left."""
    lru = after["hibernations"].get("lru", 0) - before["hibernations"].get("lru", 0)
    recycled, spare, new = (
        after["wakes"][kind] - before["wakes"][kind] for kind in ("recycled", "spare", "new")
    )
    wakes = recycled + spare + new
    share = (recycled + spare) / wakes if wakes else 1.0
    pool = after["spares"]
    tracked = tracked_processes(after)
    return [
        [
            "wakes bound to a running process",
            f"{recycled + spare}/{wakes} ({share:.0%})",
            f"{recycled} recycled, {spare} pre-started; {new} waited for a new process; pool at "
            f"the end: size {pool['size']}, ready {pool['ready']}, peak "
            f"{pool['peakWakesPerMinute']} wakes/min",
            f"≥ {SPARE_SHARE_TARGET:.0%}: {met(share >= SPARE_SHARE_TARGET)}",
        ],
        [
            "wakes per session",
            f"{wakes / max(1, sessions.started):.2f}",
            f"{lru} hibernated to make room under the cap; more than one wake a session is a "
            "workspace evicted mid-session",
            "",
        ],
        [
            "workspace actor processes at the end",
            f"{processes} alive",
            f"the directory accounts for {tracked} (resident, spares ready or starting, "
            f"activations); {max(0, processes - tracked)} more are nobody's",
            f"none unaccounted: {met(processes <= tracked)}",
        ],
    ]


def end_notes(sessions: Sessions, after: dict) -> list[str]:
    admission = after.get("wakeAdmission", {})
    return [
        f"resident at the end {after['resident']} (cap {after['maxResident']}); idle "
        f"workspaces hibernate after {after['idleS']:g} s (less near the cap); wakes "
        f"refused by the directory: {admission.get('refused', 0)} behind others, "
        f"{admission.get('refusedForRoom', 0)} for want of room, "
        f"{admission.get('refusedForStarts', 0)} behind process starts; processes ended after "
        f"hibernating: {after.get('processesEnded', {})}",
        *(f"error: {error}" for error in sessions.errors[:5]),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspaces", type=int, default=WORKSPACES)
    parser.add_argument(
        "--arrivals-s", type=float, default=300.0, help="how long sessions keep arriving, seconds"
    )
    parser.add_argument("--rate", type=float, default=SESSIONS_PER_S, help="sessions per second")
    parser.add_argument("--calls", type=int, default=CALLS_PER_SESSION, help="calls per session")
    args = parser.parse_args(argv)
    settings, url, admin = start_local_service("bench-sessions", ADMIN_TOKEN)
    from actors.directory.actor import get_directory

    try:
        rows, notes, cpu = run(url, admin, get_directory(settings), args)
    finally:
        stop_local_service(settings)
        shutil.rmtree(Path(settings.data_dir), ignore_errors=True)
    body = "\n\n".join(
        [
            table(["measure", "figure", "detail", "target"], rows),
            "Where the CPU went while sessions arrived and ran (every process on the machine, "
            "sampled each second):",
            table(["processes", "CPU", "per session", "share"], cpu),
        ]
    )
    # another arrival rate is another workload: its report is kept beside the default one
    name = "sessions" if args.rate == SESSIONS_PER_S else f"sessions-at-{args.rate:g}-per-s"
    return publish_report(name, body, [*notes, machine_note("; settings at their defaults")])


if __name__ == "__main__":
    raise SystemExit(main())
