"""Where the machine's CPU goes per call: the service's warm calls against the least a call
through Serve can cost, behind each of Serve's two HTTP fronts.

    python -m bench.bench_call_cost                          # both fronts (~4 minutes)
    python -m bench.bench_call_cost --front haproxy --profile

Each front runs in a fresh process with its own local Ray (the front is chosen by
RAY_SERVE_ENABLE_HA_PROXY, which must be set before Ray starts): Serve's Python proxy (0) and its
HAProxy ingress (1). In the same cluster and behind the same front runs the FLOOR, a second
Serve application (bench/bare_pair.py): an ingress deployed like the service's whose route reads
the JSON body and awaits one call of an async actor answering a constant.

Measured per front, in windows that start only once no process on the machine has started or
ended for QUIET_WINDOW_S (a window a process started or ended in is measured again):
  warm calls    getCount, recall (over SEED_ENTRIES short entries) and capture, from one client
                and from CLIENTS_MANY at once, in rounds alternating with the floor's
                (service, floor, service, ...), so both see the same machine; the machine's CPU
                per call (/proc/stat: all but idle and iowait), the wall p50, and the CPU by
                kind of process (bench/cpu_ledger.py). getCount is judged against the floor,
                recall and capture against the floor plus the engine's own CPU for that call
  engine        the same calls on a workspace file opened in this process, CPU per call from
                time.process_time (the engine floor; measured once, before the fronts)
  wake cycle    an admin hibernate, then one getCount (a wake), until the spare pool has
                settled again: the CPU per cycle by kind, against a warm getCount
  session       a fresh workspace woken, SESSION_CALLS calls (capture, recall, getCount in
                turn), hibernated: the CPU per session by kind
  closed loop   CLOSED_LOOP_CLIENTS clients on the one workspace, each sending its next request
                as the last answers (70% getCount, 30% capture): req/s and CPU per request,
                the Python proxy's the baseline of the other front's
  threads       the CPU of each thread of the workspace actor and the ingress replica during the
                warm windows (Ray's native threads, which py-spy does not see)
  --profile     py-spy on the workspace actor and the replica under a getCount load, then a
                recall load: the top leaf functions and the innermost frames of our own code
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from .bench_engine import make_items
from .bench_http_front import drive, machine_cpu_s
from .bench_serverless import actor_processes
from .call_cost_probes import (
    PidWatch,
    process_name,
    profile_counts,
    python_threads,
    start_profile,
    thread_cpu,
    thread_spent,
)
from .call_cost_report import CLIENT_COUNTS, METHODS, render
from .closed_loop import closed_loop
from .common import p50, percentile, publish_report
from .cpu_ledger import OTHER, CpuLedger
from .local_service import start_local_service, stop_local_service

ADMIN_TOKEN = "bench-call-cost-admin-0123456789abcdef"
FRONTS = {"python": "0", "haproxy": "1"}  # RAY_SERVE_ENABLE_HA_PROXY
WORKSPACE = "cost-1"
SEED_ENTRIES = 200
CAPTURE_POOL = 400  # texts captures cycle through, each made new by a counter
QUERIES = 100
CLIENTS_MANY = CLIENT_COUNTS[-1]
CALLS_PER_ROUND = {1: 150, CLIENTS_MANY: 240}  # per round and side
ROUNDS = 6  # per side; the sides take turns
WARM_UP_CALLS = 100
QUIET_WINDOW_S = 5.0
QUIET_TIMEOUT_S = 15.0  # then measured anyway, and counted as not quiet
WINDOW_TRIES = 3
WARM_LEDGER_PERIOD_S = 3600.0  # quiet windows: read at their start and end only
CHURN_LEDGER_PERIOD_S = 0.5  # wakes and sessions: processes may start and end inside
IDLE_WINDOW_S = 3.0
WAKE_CYCLES = 10  # /proc/stat counts in 10 ms ticks: ten cycles read to 1 ms a cycle
CLOSED_LOOP_CLIENTS = 32
CLOSED_LOOP_S = 15.0
SESSIONS = 6
SESSION_CALLS = 30
SETTLE_TIMEOUT_S = 30.0
POOL_POLL_S = 0.1
KEEP_WARM_IDLE_S = 3600.0  # the measured workspace must not hibernate while the floor runs
PROFILE_S = 6
PROFILE_BATCH_CALLS = 100
ENGINE_CALLS = {"getCount": 20000, "recall": 1500, "capture": 1000}
ENGINE_WARM_UP_CALLS = 50
CHILD_TIMEOUT_S = 900
TOP_OTHERS = 5  # the busiest other processes named in the report


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Workload:
    """The calls' bodies, the same for the service and the engine: bench_engine's short
    synthetic notes, queries of three words of one of them, captures never seen before."""

    def __init__(self, seed: int = 7):
        self.items = make_items(SEED_ENTRIES + CAPTURE_POOL, seed)
        rng = random.Random(seed)
        queries = []
        for text, _ in rng.sample(self.items[:SEED_ENTRIES], QUERIES):
            said = text.rsplit(" (note", 1)[0].lower()  # not the counter that keeps texts apart
            words = [w for w in re.findall(r"[a-z]+", said) if len(w) > 3]
            queries.append(" ".join(rng.sample(words, min(3, len(words)))))
        self._queries = itertools.cycle(queries)
        self._captures = itertools.count()

    def seed_bodies(self) -> list[dict]:
        return [{"content": text, "tags": tags} for text, tags in self.items[:SEED_ENTRIES]]

    def body(self, method: str) -> dict:
        if method == "recall":
            return {"query": next(self._queries)}
        if method == "capture":
            n = next(self._captures)
            text, tags = self.items[SEED_ENTRIES + n % CAPTURE_POOL]
            return {"content": f"{text} (call {n})", "tags": tags}
        return {}


# ---- the engine floor, in this process ---------------------------------------------------------


def engine_floor() -> dict:
    """CPU ms per call of the engine alone: {method: {clients: ms}}. Many clients differ for
    capture only: the actor commits concurrent writes together, here a run_batch of as many."""
    from minisphere.engine.workspace import Workspace

    folder = Path(tempfile.mkdtemp(prefix="call-cost-engine-"))
    work = Workload()
    try:
        with Workspace(folder / "engine.db") as ws:
            ws.run_batch([("capture", body) for body in work.seed_bodies()])
            spent = {}
            for method in METHODS:
                for _ in range(ENGINE_WARM_UP_CALLS):
                    ws.call(method, work.body(method))
                began = time.process_time()
                for _ in range(ENGINE_CALLS[method]):
                    ws.call(method, work.body(method))
                one = (time.process_time() - began) / ENGINE_CALLS[method] * 1e3
                spent[method] = {1: one, CLIENTS_MANY: one}
            batches = ENGINE_CALLS["capture"] // CLIENTS_MANY
            began = time.process_time()
            for _ in range(batches):
                ws.run_batch([("capture", work.body("capture")) for _ in range(CLIENTS_MANY)])
            took = time.process_time() - began
            spent["capture"][CLIENTS_MANY] = took / (batches * CLIENTS_MANY) * 1e3
        return spent
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---- windows ------------------------------------------------------------------------------------


class Meter:
    """Windows measured alike: each starts once no process has started or ended for
    QUIET_WINDOW_S, and is measured again (up to WINDOW_TRIES) if one did inside it (a spare
    Ray worker starting inside a window once tripled a figure)."""

    def __init__(self, watch: PidWatch):
        self.watch = watch
        self.counts = Counter()
        self.others: Counter[str] = Counter()  # `anything else`, CPU-s over every window
        self.wall_s = 0.0

    def measure(self, run, period_s=WARM_LEDGER_PERIOD_S, threads=None, retry=True) -> dict:
        tries = WINDOW_TRIES if retry else 1
        for attempt in range(tries):
            quiet = self.watch.wait_quiet(QUIET_WINDOW_S, QUIET_TIMEOUT_S)
            changes, started, ended = self.watch.changes, self.watch.started, self.watch.ended
            before = {label: thread_cpu(pid) for label, pid in (threads or {}).items()}
            ledger = CpuLedger(period_s)
            ledger.start()
            cpu, began = machine_cpu_s(), time.perf_counter()
            result = run()
            wall, spent = time.perf_counter() - began, machine_cpu_s() - cpu
            ledger.stop()
            others = Counter()  # what `anything else` was: the shared machine's other work
            for pid, (kind, cpu) in ledger.by_pid().items():
                if kind == OTHER and cpu > 0:
                    others[process_name(pid)] += cpu
            spent_threads = {
                label: thread_spent(before[label], thread_cpu(pid))
                for label, pid in (threads or {}).items()
            }
            if self.watch.changes == changes or attempt == tries - 1:
                break
            self.counts["measured again"] += 1
        self.counts["windows"] += 1
        self.others.update(others)
        self.wall_s += wall
        self.counts["not quiet before"] += not quiet
        self.counts["a process started or ended inside"] += self.watch.changes != changes
        return {
            "cpuS": spent,
            "wallS": wall,
            "kinds": ledger.by_kind(),
            "threads": spent_threads,
            "others": others,
            "started": self.watch.started - started,
            "ended": self.watch.ended - ended,
            "result": result,
        }


def add_window(tally: dict, window: dict) -> None:
    for key in ("cpuS", "wallS", "started", "ended"):
        tally[key] = tally.get(key, 0) + window[key]
    tally.setdefault("kinds", Counter()).update(window["kinds"])
    tally.setdefault("others", Counter()).update(window["others"])
    for label, spent in window["threads"].items():
        tally.setdefault("threads", {}).setdefault(label, Counter()).update(spent)


def per_unit(tally: dict, units: int) -> dict:
    """A tally as milliseconds per call (or per cycle, per session)."""
    return {
        "cpuMs": tally["cpuS"] / units * 1e3,
        "kinds": {kind: s / units * 1e3 for kind, s in tally["kinds"].items()},
        "others": {name: s / units * 1e3 for name, s in tally["others"].most_common(TOP_OTHERS)},
        "threads": {
            label: {name: s / units * 1e3 for name, s in spent.most_common()}
            for label, spent in tally.get("threads", {}).items()
        },
        "started": tally["started"],
        "ended": tally["ended"],
    }


# ---- the service's side and the floor's, in the child ----------------------------------------


def load(url: str, side: tuple, work: Workload, method: str, calls: int, clients: int) -> list:
    """Latencies (ms) of `calls` calls of `method` to one side, from `clients` at once."""
    path, headers = side
    body = lambda: work.body(method)
    return asyncio.run(drive(url, path(method), headers, calls, clients, body=body))


def warm_rounds(
    meter: Meter, url: str, sides: dict, work: Workload, method: str, clients: int, threads: dict
) -> dict:
    """ROUNDS windows per side, the sides taking turns: {side: figures per call}."""
    calls = CALLS_PER_ROUND[clients]
    tallies: dict[str, dict] = {side: {} for side in sides}
    latencies: dict[str, list[float]] = {side: [] for side in sides}
    for side in sides.values():  # warm-up, not measured
        load(url, side, work, method, WARM_UP_CALLS, CLIENTS_MANY)
    for _ in range(ROUNDS):
        for side in sides:

            def run(side=side):
                return load(url, sides[side], work, method, calls, clients)

            window = meter.measure(run, threads=threads if side == "service" else None)
            add_window(tallies[side], window)
            latencies[side] += window["result"]
    return {
        side: {**per_unit(tallies[side], calls * ROUNDS), "p50": p50(latencies[side])}
        for side in sides
    }


def one_workspace_loaded(meter: Meter, url: str, headers: dict) -> dict:
    """CLOSED_LOOP_CLIENTS clients in a closed loop on the one workspace (70% getCount, 30%
    capture) for CLOSED_LOOP_S: what it serves, and the machine's CPU per request."""
    side = (WORKSPACE, headers)

    def run():
        return asyncio.run(
            closed_loop(url, lambda rng: side, CLOSED_LOOP_S, CLOSED_LOOP_CLIENTS, seed=1)
        )

    window = meter.measure(run)
    rate, latencies, errors, refusals = window["result"]
    tally: dict = {}
    add_window(tally, window)
    return {
        **per_unit(tally, max(1, len(latencies))),
        "reqPerS": rate,
        "p50": p50(latencies),
        "p99": percentile(latencies, 99),
        "errors": errors,
        "refusals": refusals,
    }


def settle_pool(directory) -> bool:
    """Until the spare pool has no process starting or coming back and is full (True), or
    SETTLE_TIMEOUT_S passed (False)."""
    import ray

    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        pool = ray.get(directory.spares.remote(), timeout=SETTLE_TIMEOUT_S)
        if not pool["starting"] and not pool.get("returning") and pool["ready"] >= pool["size"]:
            return True
        time.sleep(POOL_POLL_S)
    return False


def hibernate(http: httpx.Client, admin: dict, workspace: str) -> None:
    answer = http.post(f"/v1/workspaces/{workspace}/hibernate", headers=admin)
    assert answer.status_code == 200 and answer.json()["hibernated"], answer.text


def wake_cycles(meter: Meter, http: httpx.Client, admin: dict, headers: dict, directory) -> dict:
    """WAKE_CYCLES windows: hibernate, one getCount (the wake), the pool settled again. One
    cycle first, not measured: its hibernation snapshots what the warm windows wrote."""

    def cycle() -> float:
        hibernate(http, admin, WORKSPACE)
        began = time.perf_counter()
        answer = http.post(f"/v1/w/{WORKSPACE}/getCount", headers=headers, json={})
        assert answer.status_code == 200, answer.text
        woke_ms = (time.perf_counter() - began) * 1e3
        settle_pool(directory)
        return woke_ms

    tally: dict = {}
    wakes = []
    cycle()
    for _ in range(WAKE_CYCLES):
        window = meter.measure(cycle, CHURN_LEDGER_PERIOD_S, retry=False)
        add_window(tally, window)
        wakes.append(window["result"])
    return {
        **per_unit(tally, WAKE_CYCLES),
        "wakeP50": p50(wakes),
        "wallS": tally["wallS"],
        "cycles": WAKE_CYCLES,
    }


def sessions(meter: Meter, http: httpx.Client, admin: dict, work: Workload, directory) -> dict:
    """SESSIONS windows: a fresh workspace woken by its first call, SESSION_CALLS calls,
    hibernated, the pool settled again."""
    tally: dict = {}
    for n in range(SESSIONS):
        made = http.post("/v1/workspaces", headers=admin, json={"id": f"session-{n}"})
        assert made.status_code == 201, made.text
        headers = {"Authorization": f"Bearer {made.json()['token']}"}

        def session(n=n, headers=headers) -> None:
            for i in range(SESSION_CALLS):
                method = ("capture", "recall", "getCount")[i % 3]
                answer = http.post(
                    f"/v1/w/session-{n}/{method}", headers=headers, json=work.body(method)
                )
                assert answer.status_code == 200, answer.text
            hibernate(http, admin, f"session-{n}")
            settle_pool(directory)

        add_window(tally, meter.measure(session, CHURN_LEDGER_PERIOD_S, retry=False))
    return {**per_unit(tally, SESSIONS), "wallS": tally["wallS"] / SESSIONS}


def set_up(url: str, http: httpx.Client, admin: dict, work: Workload, settings):
    """The floor deployed, idle hibernation pushed out of the run, the measured workspace made
    and filled: (directory, the workspace's headers)."""
    import ray

    from actors.directory.actor import get_directory

    from .bare_pair import deploy_bare

    deploy_bare()
    directory = get_directory(settings)
    ray.get(directory.set_residency.remote(idle_s=KEEP_WARM_IDLE_S), timeout=60)
    made = http.post("/v1/workspaces", headers=admin, json={"id": WORKSPACE})
    assert made.status_code == 201, made.text
    headers = {"Authorization": f"Bearer {made.json()['token']}"}
    seed = iter(work.seed_bodies())
    path = f"/v1/w/{WORKSPACE}/capture"
    asyncio.run(drive(url, path, headers, SEED_ENTRIES, CLIENTS_MANY, body=lambda: next(seed)))
    return directory, headers


def processes(settings, directory) -> dict[str, int]:
    """The pids of the measured workspace's actor and of the service's ingress replica."""
    import ray

    name = ray.get(directory.actor_name_of.remote(WORKSPACE), timeout=60)
    actor = ray.get_actor(name, namespace=settings.namespace)
    replicas = actor_processes("ServeReplica:minisphere:")
    return {
        "workspace actor": ray.get(actor.ping.remote(), timeout=60)["pid"],
        "ingress replica": replicas[0],
    }


def profile(url: str, sides: dict, work: Workload, pids: dict[str, int]) -> dict:
    """py-spy on each process for PROFILE_S under a load of CLIENTS_MANY clients, getCount then
    recall: {"<process>, <method>": counts}."""
    found: dict = {"python threads": {label: python_threads(pid) for label, pid in pids.items()}}
    with tempfile.TemporaryDirectory(prefix="call-cost-profile-") as folder:
        for method in ("getCount", "recall"):
            spies = {
                label: start_profile(pid, PROFILE_S, Path(folder) / f"{pid}-{method}.txt")
                for label, pid in pids.items()
            }
            try:
                while any(spy.poll() is None for spy in spies.values()):
                    load(url, sides["service"], work, method, PROFILE_BATCH_CALLS, CLIENTS_MANY)
            finally:
                for spy in spies.values():
                    if spy.poll() is None:
                        spy.kill()
                    spy.wait()
            for label, pid in pids.items():
                counts = profile_counts(Path(folder) / f"{pid}-{method}.txt")
                counts["error"] = (spies[label].stderr.read() or "").strip()[-300:]
                found[f"{label}, {method}"] = counts
    return found


def measure_front(url, http, admin, meter, settings, want_profile) -> dict:
    work = Workload()
    directory, headers = set_up(url, http, admin, work, settings)
    from .bare_pair import BARE_PREFIX

    sides = {
        "service": (lambda method: f"/v1/w/{WORKSPACE}/{method}", headers),
        "floor": (lambda method: f"{BARE_PREFIX}/{method}", headers),
    }
    pids = processes(settings, directory)
    phases = {"set up": time.monotonic()}  # each phase's end, made durations below
    idle: dict = {}
    add_window(idle, meter.measure(lambda: time.sleep(IDLE_WINDOW_S)))  # the span measured
    warm = {}
    for method in METHODS:
        for clients in (1, CLIENTS_MANY):
            say(f"  warm {method}, {clients} client(s)")
            warm[f"{method}/{clients}"] = warm_rounds(
                meter, url, sides, work, method, clients, pids
            )
    phases["idle and warm windows"] = time.monotonic()
    say(f"  one workspace, {CLOSED_LOOP_CLIENTS} clients in a closed loop")
    loaded = one_workspace_loaded(meter, url, headers)
    phases["closed loop"] = time.monotonic()
    profiled = profile(url, sides, work, pids) if want_profile else {}
    phases["profile"] = time.monotonic()
    say("  wake cycles, sessions")
    wake = wake_cycles(meter, http, admin, headers, directory)
    phases["wake cycles"] = time.monotonic()
    session = sessions(meter, http, admin, work, directory)
    phases["sessions"] = time.monotonic()
    ends = list(phases.values())
    took = {name: end - start for name, start, end in zip(list(phases)[1:], ends, ends[1:])}
    return {
        "idle": per_unit(idle, idle["wallS"]),  # ms of CPU per second
        "warm": warm,
        "loaded": loaded,
        "wake": wake,
        "session": session,
        "profile": profiled,
        "pids": pids,
        "phasesS": took,
    }


def one_front(want_profile: bool) -> dict:
    """Run in the child: start the service and the floor, measure, stop; the figures."""
    watch = PidWatch()
    watch.start()
    settings, url, admin = start_local_service("call-cost", ADMIN_TOKEN)
    try:
        meter = Meter(watch)
        with httpx.Client(base_url=url, timeout=120) as http:
            got = measure_front(url, http, admin, meter, settings, want_profile)
        others = {n: s / meter.wall_s * 1e3 for n, s in meter.others.most_common(TOP_OTHERS)}
        return {**got, "windows": dict(meter.counts), "othersMsPerS": others}
    finally:
        watch.stop()
        stop_local_service(settings)
        shutil.rmtree(settings.data_dir, ignore_errors=True)


def run_front(front: str, want_profile: bool) -> dict:
    env = {**os.environ, "RAY_SERVE_ENABLE_HA_PROXY": FRONTS[front]}
    command = [sys.executable, "-m", "bench.bench_call_cost", "--one"]
    done = subprocess.run(
        command + (["--profile"] if want_profile else []),
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
        timeout=CHILD_TIMEOUT_S,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--front", choices=["python", "haproxy", "both"], default="both")
    parser.add_argument("--profile", action="store_true", help="py-spy the actor and replica")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_front(args.profile)))
        return 0
    began = time.monotonic()
    say("engine floor, in process")
    engine = engine_floor()
    fronts = {}
    for front in FRONTS if args.front == "both" else [args.front]:
        say(f"front {front}")
        started = time.monotonic()
        fronts[front] = {**run_front(front, args.profile), "tookS": time.monotonic() - started}
    body, notes, appendix = render(engine, fronts, time.monotonic() - began)
    return publish_report("call-cost", body, notes, appendix)


if __name__ == "__main__":
    raise SystemExit(main())
