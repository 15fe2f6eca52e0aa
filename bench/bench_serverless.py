"""Serverless benchmark: wakes, bursts of wakes, many workspaces under a Zipf load, and the
in-cluster client — every figure beside a baseline measured in the same run.

    python -m bench.bench_serverless                      # the full run (2,000 workspaces)
    python -m bench.bench_serverless --workspaces 300 --zipf-s 20     # a quicker look

One local Ray + Serve on this machine, settings at their defaults (synchronous=FULL, local
snapshot store, the derived resident cap and spare pool) except the data folder and port.

1. one workspace, warm: closed-loop throughput of 32 clients (70% getCount / 30% capture) —
   the baseline of the Zipf run — and sequential capture p50 over HTTP and in-cluster;
2. sequential wakes, one per second: hibernate (admin route), wait for a ready spare, time the
   next call; a warm call to the same workspace right after is the baseline;
3. a burst of 100 wakes of distinct hibernated workspaces from 32 clients (refusals resent after
   their Retry-After, as the clients do), then 20 of them hibernated and woken back to back;
4. the Zipf run: N workspaces, Zipf(s = 1.1) over them, 70/30, 32 clients, for a fixed time:
   throughput as a ratio of (1) and of its bound (the directory's measured bind rate divided by
   the share of requests that woke a workspace), p50/p99, resident count sampled every second,
   peak PSS and RSS of all Ray processes;
5. the idle cost of a resident workspace actor (CPU share and PSS), which the derived
   resident cap uses.
The report ends with the latest saved runs of the benchmarks that answer the same questions
(a spare's start beside a bare actor, the pool under bursts and trickles, agents' sessions),
quoted as they stand in bench/results with their own commands and dates.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import threading
import time
from pathlib import Path

import httpx

from minisphere.client.exchange import OVERLOAD_RETRY_JITTER

from .closed_loop import closed_loop, post, refused_for, session
from .common import p50, percentile, publish_report, quoted_reports, table
from .local_service import start_local_service, stop_local_service

CLIENTS = 32
ZIPF_S = 1.1
BURST_WAKES = 100
ZIPF_BOUND_TARGET = 0.8
ZIPF_SHARE_TARGET = 0.25  # of one workspace's throughput in the same run
WAKE_PACE_S = 1.0  # sequential wakes come one per second
WAKE_RATIO_TARGET = 2.0  # a wake's p50 against a warm call's at the same pace
BURST_P99_TARGET_MS = 3000.0
BACK_TO_BACK = 20  # wakes sent one after another right after the burst
ADMIN_TOKEN = "bench-serverless-admin-0123456789"
# Benchmarks of the same questions (a spare's start beside a bare actor, the pool under bursts
# and trickles, agents' sessions), quoted at the end of this report as last saved
RELATED_REPORTS = ["spare-start", "spare-demand", "sessions", "sessions-at-0.5-per-s"]


# ---- memory and CPU of the Ray processes -----------------------------------------------------------
def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def ray_processes() -> list[int]:
    """Every process of this machine's Ray session: daemons, workers, actors."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            cmd = _read(entry / "cmdline").replace("\0", " ")
            if "ray" in cmd and (
                "ray::" in cmd or "/ray/" in cmd or "raylet" in cmd or "gcs_server" in cmd
            ):
                pids.append(int(entry.name))
    return pids


def actor_processes(class_name: str) -> list[int]:
    return [
        pid
        for pid in ray_processes()
        if _read(f"/proc/{pid}/cmdline").startswith(f"ray::{class_name}")
    ]


def pss_rss(pids: list[int]) -> tuple[int, int]:
    """(PSS, RSS) in bytes summed over the processes (PSS counts shared pages once)."""
    pss = rss = 0
    for pid in pids:
        for line in _read(f"/proc/{pid}/smaps_rollup").splitlines():
            if line.startswith("Pss:"):
                pss += int(line.split()[1]) * 1024
            elif line.startswith("Rss:"):
                rss += int(line.split()[1]) * 1024
    return pss, rss


def process_cpu_s(pid: int | str) -> float | None:
    """User + system CPU seconds of one process so far; None once it is gone."""
    fields = _read(f"/proc/{pid}/stat").rsplit(")", 1)[-1].split()
    if len(fields) <= 13:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu for cpu in map(process_cpu_s, pids) if cpu is not None)


class Sampler(threading.Thread):
    """Samples the directory's residency and the Ray processes' memory while a run goes on."""

    def __init__(self, directory, period_s: float = 1.0):
        super().__init__(daemon=True)
        self.directory, self.period_s = directory, period_s
        self.resident: list[int] = []
        self.peak_pss = self.peak_rss = 0
        self._halt = threading.Event()

    def run(self):
        import ray

        while not self._halt.is_set():
            status = ray.get(self.directory.residency_status.remote(), timeout=60)
            self.resident.append(status["resident"] + status["hibernating"])
            pss, rss = pss_rss(ray_processes())
            self.peak_pss, self.peak_rss = max(self.peak_pss, pss), max(self.peak_rss, rss)
            self._halt.wait(self.period_s)

    def stop(self):
        self._halt.set()
        self.join(60)


# ---- load ------------------------------------------------------------------------------------------
def zipf_picker(spaces: list[tuple[str, dict]], s: float):
    weights = [1 / (rank + 1) ** s for rank in range(len(spaces))]
    cumulative, total = [], 0.0
    for w in weights:
        total += w
        cumulative.append(total)

    def pick(rng: random.Random):
        import bisect

        return spaces[min(len(spaces) - 1, bisect.bisect(cumulative, rng.random() * total))]

    return pick


async def burst(url: str, spaces: list[tuple[str, dict]], clients: int) -> tuple[list[float], int]:
    """Wake every workspace once from `clients` clients: (latencies ms, refusals). A refused
    wake is sent again after the pause it asks for, as the clients do; its latency runs from
    the first attempt to the answer."""
    sem = asyncio.Semaphore(clients)
    latencies: list[float] = []
    refusals = [0]
    rng = random.Random(3)

    async def wake(http, ws, headers):
        async with sem:
            started = time.perf_counter()
            while True:
                status, answer_headers = await post(http, f"/v1/w/{ws}/getCount", {}, headers)
                pause_s = refused_for(status, answer_headers)
                if pause_s is None:
                    break
                refusals[0] += 1
                await asyncio.sleep(pause_s * rng.uniform(*OVERLOAD_RETRY_JITTER))
            assert status == 200, status
            latencies.append((time.perf_counter() - started) * 1e3)

    async with session(url, clients) as http:
        await asyncio.gather(*(wake(http, ws, h) for ws, h in spaces))
    return latencies, refusals[0]


def zipf_bound(
    one_rate: float, bind_rate: float, wakes_before: dict, wakes_after: dict, requests: int
) -> dict:
    """What the run can reach at most: every miss (a request to a workspace not resident)
    waits for a bind, so the throughput is at most the rate the node binds workspaces (measured
    in the run itself by the directory, from the wakes it served) divided by the share of
    requests that miss; and never more than one resident workspace serves."""
    wakes = sum(wakes_after.values()) - sum(wakes_before.values())
    miss_rate = wakes / requests if requests else 0.0
    by_binds = bind_rate / miss_rate if miss_rate else float("inf")
    return {
        "B": min(one_rate, by_binds),
        "bindRate": bind_rate,
        "missRate": miss_rate,
        "wakes": wakes,
    }


def met(ok: bool) -> str:
    return "met" if ok else "missed"


def back_to_back(http: httpx.Client, admin: dict, spaces: list) -> list:
    """Hibernate `spaces`, then wake them one after another, each followed by a warm call:
    the row comparing the two."""
    for ws, _ in spaces:
        http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin)
    wakes, warm = [], []
    for ws, headers in spaces:
        for samples in (wakes, warm):
            started = time.perf_counter()
            response = http.post(f"/v1/w/{ws}/getCount", json={}, headers=headers)
            assert response.status_code == 200, response.text
            samples.append((time.perf_counter() - started) * 1e3)
    return [
        f"{len(spaces)} wakes back to back, right after the burst",
        f"p50 {p50(wakes):.1f} ms, p99 {percentile(wakes, 99):.0f} ms",
        f"warm call right after each: p50 {p50(warm):.1f} ms "
        f"({p50(wakes) / max(p50(warm), 1e-9):.1f}×)",
        f"p50 ≤ {WAKE_RATIO_TARGET:g}× warm: " + met(p50(wakes) <= WAKE_RATIO_TARGET * p50(warm)),
    ]


def timed(fn, n: int) -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - started) * 1e3)
    return out


def create_workspaces(http: httpx.Client, admin: dict, n: int, prefix: str) -> list:
    spaces = []
    for i in range(n):
        made = http.post("/v1/workspaces", headers=admin, json={"id": f"{prefix}-{i:05d}"})
        assert made.status_code == 201, made.text
        spaces.append(
            (made.json()["workspace"]["id"], {"Authorization": f"Bearer {made.json()['token']}"})
        )
        if (i + 1) % 500 == 0:
            print(f"  {i + 1}/{n} created", flush=True)
    return spaces


def settle(http: httpx.Client, admin: dict, directory) -> None:
    """Hibernate every resident workspace and wait for a full pool: each step starts from the
    same state."""
    import ray

    for ws in ray.get(directory.resident.remote(), timeout=60):
        http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin)
    size = ray.get(directory.spares.remote(), timeout=60)["size"]
    wait_ready(directory, size)
    time.sleep(2)


def wait_ready(directory, ready: int, timeout_s: float = 120.0) -> dict:
    import ray

    deadline = time.monotonic() + timeout_s
    while True:
        status = ray.get(directory.spares.remote(), timeout=60)
        if status["ready"] >= ready or time.monotonic() > deadline:
            return status
        time.sleep(0.1)


# ---- the run -------------------------------------------------------------------------------------
def parse_cli(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspaces", type=int, default=2000, help="Zipf run population")
    parser.add_argument("--zipf-s", type=float, default=60.0, help="Zipf run duration, seconds")
    parser.add_argument("--warm-s", type=float, default=20.0, help="one-workspace run, seconds")
    parser.add_argument("--wakes", type=int, default=40, help="sequential wakes timed")
    parser.add_argument("--samples", type=int, default=200, help="sequential captures timed")
    parser.add_argument("--idle-actors", type=int, default=20)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_cli(argv)

    import ray

    settings, url, admin = start_local_service("bench-serverless", ADMIN_TOKEN)
    tmp = Path(settings.data_dir)
    from actors.directory.actor import get_directory

    directory = get_directory(settings)
    rows, notes = [], []
    try:
        with httpx.Client(base_url=url, timeout=300) as http:
            residency = ray.get(directory.residency_status.remote(), timeout=60)
            print(
                f"resident cap {residency['maxResident']}, spare pool "
                f"{residency['spares']['size']}",
                flush=True,
            )
            one_rate, warm = one_workspace_rows(http, url, admin, settings, args)
            rows += warm
            rows += sequential_wake_rows(http, admin, directory, args)
            rows += burst_rows(http, url, admin, directory, residency)
            zipf, population, create_note = zipf_rows(http, url, admin, directory, args, one_rate)
            rows += zipf
            notes.append(create_note)
            rows.append(idle_cost_row(http, directory, population, args))
    finally:
        stop_local_service(settings)
        shutil.rmtree(tmp, ignore_errors=True)
    body = table(["measure", "figure", "detail / baseline in the same run", "target"], rows)
    notes.append(settings_note())
    # the figures this benchmark answers for together with its siblings, each its own run
    related = "\n\n## The other wake benchmarks' latest runs, quoted\n\n" + quoted_reports(
        RELATED_REPORTS
    )
    return publish_report("serverless", body, notes, appendix=related)


def one_workspace_rows(http: httpx.Client, url: str, admin: dict, settings, args):
    """1. one warm workspace: (its closed-loop rate, the rows of it and of sequential calls)."""
    from actors.in_cluster import connect_in_cluster

    (one,) = create_workspaces(http, admin, 1, "warm")
    http.post(f"/v1/w/{one[0]}/getCount", json={}, headers=one[1])
    print("one workspace, closed loop ...", flush=True)
    one_rate, one_lat, one_err, _ = asyncio.run(
        closed_loop(url, lambda rng: one, args.warm_s, CLIENTS, 1)
    )
    seq = timed(
        lambda i: http.post(
            f"/v1/w/{one[0]}/capture",
            headers=one[1],
            json={"content": f"sequential note {i}"},
        ),
        args.samples,
    )
    in_cluster = connect_in_cluster(
        one[0], one[1]["Authorization"][7:], namespace=settings.namespace
    )
    in_cluster.get_count()
    seq_ic = timed(lambda i: in_cluster.capture(f"in-cluster note {i}"), args.samples)
    read_ic = timed(lambda i: in_cluster.get_count(), args.samples)
    read_http = timed(
        lambda i: http.post(f"/v1/w/{one[0]}/getCount", json={}, headers=one[1]),
        args.samples,
    )
    in_cluster.close()
    return one_rate, [
        [
            "1 workspace, 32 clients, 70/30: req/s",
            f"{one_rate:,.0f}",
            f"p50 {p50(one_lat):.1f} ms, p99 {percentile(one_lat, 99):.1f} ms, errors {one_err}",
            "≥ 150 req/s",
        ],
        [
            "capture p50 over HTTP (sequential)",
            f"{p50(seq):.2f} ms",
            f"p99 {percentile(seq, 99):.1f} ms",
            "≤ 8 ms",
        ],
        [
            "capture p50 in-cluster client (sequential)",
            f"{p50(seq_ic):.2f} ms",
            f"{p50(seq_ic) / p50(seq):.2f}× HTTP",
            "≤ 4 ms",
        ],
        [
            "getCount p50: in-cluster / HTTP",
            f"{p50(read_ic):.2f} / {p50(read_http):.2f} ms",
            f"{p50(read_ic) / p50(read_http):.2f}×",
            "",
        ],
    ]


def sequential_wake_rows(http: httpx.Client, admin: dict, directory, args) -> list:
    """2. sequential wakes, one per WAKE_PACE_S, each beside a warm call right after it."""
    print("sequential wakes ...", flush=True)
    (sleeper,) = create_workspaces(http, admin, 1, "sleeper")
    http.post(f"/v1/w/{sleeper[0]}/capture", json={"content": "wake me"}, headers=sleeper[1])
    wakes, warm, binds, directory_ms, sources = [], [], [], [], []
    for _ in range(args.wakes):
        wake_ms, warm_ms, wake = paced_wake(http, admin, directory, sleeper)
        wakes.append(wake_ms)
        warm.append(warm_ms)
        sources.append(wake["actor"])
        binds.append(wake["bindMs"])
        directory_ms.append(wake["wakeMs"])
    return [
        [
            "sequential wake (hibernated → answered), HTTP getCount",
            f"p50 {p50(wakes):.1f} ms, p99 {percentile(wakes, 99):.1f} ms",
            f"warm call p50 {p50(warm):.1f} ms ({p50(wakes) / p50(warm):.1f}×); "
            f"{sources.count('recycled')} recycled, {sources.count('spare')} "
            f"pre-started, {sources.count('new')} new; in the directory p50 "
            f"{p50(directory_ms):.1f} ms, of it binding {p50(binds):.1f} ms",
            f"one per {WAKE_PACE_S:g} s; p50 ≤ {WAKE_RATIO_TARGET:g}× warm: "
            + met(p50(wakes) <= WAKE_RATIO_TARGET * p50(warm)),
        ]
    ]


def paced_wake(http: httpx.Client, admin: dict, directory, sleeper) -> tuple[float, float, dict]:
    """Hibernate, wait for a spare and the pace, wake: (wake ms, warm call ms, the wake's
    record as the admin route tells it)."""
    paced = time.perf_counter()
    assert http.post(f"/v1/workspaces/{sleeper[0]}/hibernate", headers=admin).status_code == 200
    wait_ready(directory, 1)
    time.sleep(max(0.0, WAKE_PACE_S - (time.perf_counter() - paced)))
    started = time.perf_counter()
    assert http.post(f"/v1/w/{sleeper[0]}/getCount", json={}, headers=sleeper[1]).status_code == 200
    wake_ms = (time.perf_counter() - started) * 1e3
    started = time.perf_counter()
    http.post(f"/v1/w/{sleeper[0]}/getCount", json={}, headers=sleeper[1])
    warm_ms = (time.perf_counter() - started) * 1e3
    record = http.get(f"/v1/workspaces/{sleeper[0]}", headers=admin).json()
    return wake_ms, warm_ms, record["durability"]["wake"]


def burst_rows(http: httpx.Client, url: str, admin: dict, directory, residency: dict) -> list:
    """3. a burst of wakes of distinct workspaces, then some of them back to back."""
    import ray

    print(f"burst of {BURST_WAKES} wakes ...", flush=True)
    sleepers = create_workspaces(http, admin, BURST_WAKES, "burst")
    settle(http, admin, directory)
    pool_before = wait_ready(directory, residency["spares"]["size"])
    wakes_at_burst = ray.get(directory.residency_status.remote(), timeout=60)["wakes"]
    started = time.perf_counter()
    burst_lat, burst_refused = asyncio.run(burst(url, sleepers, CLIENTS))
    burst_s = time.perf_counter() - started
    pool_after = ray.get(directory.residency_status.remote(), timeout=60)
    burst_wakes = {
        kind: pool_after["wakes"][kind] - wakes_at_burst[kind] for kind in wakes_at_burst
    }
    return [
        [
            f"burst: {BURST_WAKES} wakes from {CLIENTS} clients",
            f"p50 {p50(burst_lat):.0f} ms, p99 {percentile(burst_lat, 99):.0f} ms",
            f"{burst_refused} refusals resent after their Retry-After; bound to "
            f"{burst_wakes['recycled']} recycled, {burst_wakes['spare']} pre-started "
            f"(the pool had {pool_before['ready']}) and {burst_wakes['new']} new "
            f"processes in {burst_s:.1f} s; spare start p50 "
            f"{pool_after['spares']['startSecondsP50'] or 0:.2f} s",
            f"p99 ≤ {BURST_P99_TARGET_MS / 1e3:g} s: "
            + met(percentile(burst_lat, 99) <= BURST_P99_TARGET_MS),
        ],
        back_to_back(http, admin, sleepers[:BACK_TO_BACK]),
    ]


def zipf_rows(http: httpx.Client, url: str, admin: dict, directory, args, one_rate: float):
    """4. the Zipf run, from a settled start (nothing resident, the pool full): (its rows, its
    population, the note on how long creating it took)."""
    import ray

    settle(http, admin, directory)
    print(f"creating {args.workspaces} workspaces ...", flush=True)
    started = time.perf_counter()
    population = create_workspaces(http, admin, args.workspaces, "zipf")
    create_s = time.perf_counter() - started
    cap = ray.get(directory.residency_status.remote(), timeout=60)["maxResident"]
    print(f"Zipf run for {args.zipf_s:.0f} s ...", flush=True)
    sampler = Sampler(directory)
    wakes_before = ray.get(directory.residency_status.remote(), timeout=60)["wakes"]
    sampler.start()
    zipf_rate, zipf_lat, zipf_err, zipf_refused = asyncio.run(
        closed_loop(url, zipf_picker(population, ZIPF_S), args.zipf_s, CLIENTS, 2)
    )
    sampler.stop()
    pool_end = ray.get(directory.spares.remote(), timeout=60)
    after_zipf = ray.get(directory.residency_status.remote(), timeout=60)
    wakes_after = after_zipf["wakes"]
    bound = zipf_bound(
        one_rate,
        after_zipf["wakeAdmission"]["throughputPerS"],
        wakes_before,
        wakes_after,
        len(zipf_lat),
    )
    rows = [
        [
            f"Zipf(s={ZIPF_S}) over {args.workspaces} workspaces, 32 clients, 70/30",
            f"{zipf_rate:,.0f} req/s ({zipf_rate / one_rate:.0%} of 1 workspace)",
            f"p50 {p50(zipf_lat):.0f} ms, p99 {percentile(zipf_lat, 99):.0f} ms, "
            f"errors {zipf_err}, refusals {zipf_refused}; spares handed out "
            f"{pool_end['handedOut']} ({pool_end['recycled']} given back)",
            f"≥ {ZIPF_SHARE_TARGET:.0%}: " + met(zipf_rate >= ZIPF_SHARE_TARGET * one_rate),
        ],
        zipf_bound_row(zipf_rate, bound, len(zipf_lat)),
        *zipf_sampled_rows(sampler, cap),
    ]
    note = (
        f"creating {args.workspaces} workspaces took {create_s:.0f} s "
        f"({args.workspaces / create_s:.0f}/s)."
    )
    return rows, population, note


def zipf_bound_row(zipf_rate: float, bound: dict, requests: int) -> list:
    return [
        "the Zipf run against its bound B = min(1 workspace, bind rate ÷ miss rate)",
        f"{zipf_rate / max(bound['B'], 1e-9):.0%} of B = {bound['B']:,.1f} req/s",
        f"bind rate {bound['bindRate']:.2f}/s (the directory's, measured over "
        f"the run's wakes); miss rate "
        f"{bound['missRate']:.1%} ({bound['wakes']} wakes in {requests} "
        f"requests at the cap)",
        "≥ 80% of B: " + ("met" if zipf_rate >= ZIPF_BOUND_TARGET * bound["B"] else "missed"),
    ]


def zipf_sampled_rows(sampler: Sampler, cap: int) -> list:
    return [
        [
            "resident during the Zipf run (sampled 1/s)",
            f"max {max(sampler.resident, default=0)}, median "
            f"{statistics.median(sampler.resident) if sampler.resident else 0:.0f}",
            f"cap {cap}",
            "never above the cap",
        ],
        [
            "peak memory of all Ray processes during the Zipf run",
            f"PSS {sampler.peak_pss / 2**30:.2f} GiB",
            f"RSS {sampler.peak_rss / 2**30:.2f} GiB",
            "PSS ≤ 6 GiB",
        ],
    ]


def idle_cost_row(http: httpx.Client, directory, population: list, args) -> list:
    """5. the CPU share and memory of resident workspace actors left idle for 20 s."""
    import ray

    print("idle cost of resident actors ...", flush=True)
    ray.get(directory.set_residency.remote(idle_s=0), timeout=60)
    idle = population[: args.idle_actors]
    for ws, headers in idle:
        http.post(f"/v1/w/{ws}/getCount", json={}, headers=headers)
    time.sleep(5)
    pids = actor_processes("WorkspaceActor")
    cpu_before, wall_before = cpu_seconds(pids), time.monotonic()
    time.sleep(20)
    cpu_share = (cpu_seconds(pids) - cpu_before) / (time.monotonic() - wall_before)
    pss, rss = pss_rss(pids)
    return [
        f"idle workspace actor ({len(pids)} resident, 20 s)",
        f"{cpu_share / max(1, len(pids)) * 100:.2f}% of a core each",
        f"PSS {pss / max(1, len(pids)) / 2**20:.0f} MiB, RSS "
        f"{rss / max(1, len(pids)) / 2**20:.0f} MiB each",
        "",
    ]


def settings_note() -> str:
    from actors import ray_env

    return (
        f"{os.cpu_count()} CPUs; load average at the end {os.getloadavg()[0]:.2f}; "
        "settings at their defaults (synchronous=FULL, local snapshot store, derived "
        "resident cap and spare pool), Serve with "
        + ", ".join(f"{k}={v}" for k, v in ray_env.SERVE_PERFORMANCE_ENV.items())
        + "."
    )


if __name__ == "__main__":
    raise SystemExit(main())
