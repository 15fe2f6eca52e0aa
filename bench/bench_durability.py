"""Durability benchmark: group commit vs one FULL commit per write, cold activation, memory
per resident workspace actor, and many workspaces under a resident cap.

    python -m bench.bench_durability                       # everything (starts a local Ray)
    python -m bench.bench_durability --skip-ray            # the engine part only

1. Capture throughput at 1/8/32/128 concurrent writers (threads, closed loop: each writer waits
   for its acknowledgement before the next write), synchronous=FULL, same run, same disk:
   `naive` = each write its own BEGIN IMMEDIATE..COMMIT (one fsync each, serialized);
   `group` = the service's GroupCommitWriter (one writer thread commits whatever is queued in
   one transaction, acknowledging after the commit).
2. Cold activation (real Ray, directory + workspace actors, no HTTP): first call to a
   hibernated workspace whose file is local, and whose file is missing (restored from the
   local snapshot store first). p50/p99 over --cold samples.
3. Memory: RSS of each resident workspace actor (from /proc inside the actor).
4. Many workspaces touched once each (create + capture) with the resident cap at --cap; peak
   RSS of the whole Ray cluster (every process of this Ray session, sampled every 0.5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from minisphere.client.exchange import OVERLOAD_RETRY_JITTER
from minisphere.engine.workspace import Workspace
from minisphere.hosting.group_commit import GroupCommitWriter

from .common import p50, percentile, save_report, table

WRITER_COUNTS = (1, 8, 32, 128)
WAKE_REFUSALS_MAX = 20  # a wake refused more often than this fails the run
REPO = Path(__file__).resolve().parent.parent


# ---- 1. group commit vs naive ----------------------------------------------------------------
def _closed_loop(writers: int, seconds: float, one_write) -> tuple[int, float, list[float]]:
    stop_at = time.perf_counter() + seconds
    counts, latencies, lock = [0] * writers, [], threading.Lock()

    def run(k: int):
        i, mine = 0, []
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            one_write(f"writer {k} fact {i} about durable group commits")
            mine.append((time.perf_counter() - started) * 1e3)
            i += 1
        counts[k] = i
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(writers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts), time.perf_counter() - started, latencies


def naive_rate(folder: Path, writers: int, seconds: float):
    ws = Workspace(folder / f"naive-{writers}.db", synchronous="FULL")
    try:
        return _closed_loop(writers, seconds, lambda text: ws.call("capture", {"content": text}))
    finally:
        ws.close()


def group_rate(folder: Path, writers: int, seconds: float):
    ws = Workspace(folder / f"group-{writers}.db", synchronous="FULL")
    writer = GroupCommitWriter(ws, max_batch=256, name="bench")

    def one(text: str):
        done = threading.Event()
        box = []
        writer.submit(
            "capture", {"content": text}, lambda reply: (box.append(reply.ok), done.set())
        )
        done.wait()
        assert box[0], "write failed"

    try:
        out = _closed_loop(writers, seconds, one)
        return (*out, writer.batches)
    finally:
        writer.close()
        ws.close()


async def _async_rate(ws_path: Path, writers: int, seconds: float, max_batch: int):
    """Actor-like: writers are asyncio tasks on one event loop, the writer is one thread."""
    ws = Workspace(ws_path, synchronous="FULL")
    writer = GroupCommitWriter(ws, max_batch=max_batch, name="bench")
    loop = asyncio.get_running_loop()
    stop_at = time.perf_counter() + seconds
    counts = [0] * writers

    async def run(k: int):
        i = 0
        while time.perf_counter() < stop_at:
            future = loop.create_future()
            writer.submit(
                "capture",
                {"content": f"writer {k} fact {i} about group commits"},
                lambda reply, f=future: loop.call_soon_threadsafe(f.set_result, reply.ok),
            )
            assert await future, "write failed"
            i += 1
        counts[k] = i

    started = time.perf_counter()
    try:
        await asyncio.gather(*(run(k) for k in range(writers)))
        return sum(counts) / (time.perf_counter() - started)
    finally:
        writer.close()
        ws.close()


def bench_group_commit(seconds: float) -> tuple[str, str, list[dict]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-durability-", dir=REPO))
    rows, rows_async, data = [], [], []
    try:
        for writers in WRITER_COUNTS:
            n_naive, t_naive, lat_naive = naive_rate(folder, writers, seconds)
            n_group, t_group, lat_group, batches = group_rate(folder, writers, seconds)
            naive, group = n_naive / t_naive, n_group / t_group
            rows.append(
                [
                    writers,
                    round(naive),
                    round(group),
                    f"{group / naive:.1f}x",
                    round(n_group / max(1, batches), 1),
                    p50(lat_naive),
                    percentile(lat_naive, 99),
                    p50(lat_group),
                    percentile(lat_group, 99),
                ]
            )
            one = asyncio.run(_async_rate(folder / f"a1-{writers}.db", writers, seconds, 1))
            many = asyncio.run(_async_rate(folder / f"an-{writers}.db", writers, seconds, 256))
            rows_async.append([writers, round(one), round(many), f"{many / one:.1f}x"])
            data.append(
                {
                    "writers": writers,
                    "naive": naive,
                    "group": group,
                    "async_one": one,
                    "async_group": many,
                }
            )
            print(
                f"  {writers:>3} writers: threads naive {naive:7.0f}/s group {group:7.0f}/s | "
                f"asyncio 1/txn {one:7.0f}/s group {many:7.0f}/s",
                flush=True,
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    threads = table(
        [
            "writers",
            "naive FULL writes/s",
            "group-commit writes/s",
            "speed-up",
            "mean batch",
            "naive p50 ms",
            "naive p99 ms",
            "group p50 ms",
            "group p99 ms",
        ],
        rows,
    )
    actor_like = table(
        ["writers", "1 write per txn, writes/s", "group commit, writes/s", "speed-up"], rows_async
    )
    return threads, actor_like, data


# ---- Ray parts ---------------------------------------------------------------------------------
def _proc_rss(pid: int) -> int:
    from actors.workspace.process_memory import rss_bytes

    return rss_bytes(pid)


def _children(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children")
            kids = [int(x) for x in children.read_text(encoding="ascii").split()]
        except OSError:
            kids = []
        found += kids
        todo += kids
    return found


def cluster_rss() -> int:
    """RSS of every process of this Ray session (its daemons and their workers) + the driver."""
    import ray

    node = ray._private.worker._global_node  # the session we started
    roots = {os.getpid()}
    for infos in node.all_processes.values():
        for info in infos:
            roots.add(info.process.pid)
    pids = set(roots)
    for pid in list(roots):
        if pid != os.getpid():
            pids.update(_children(pid))
    return sum(_proc_rss(pid) for pid in pids)


class PeakSampler(threading.Thread):
    def __init__(self, period_s: float = 0.5):
        super().__init__(daemon=True)
        self.period_s, self.peak, self._halt = period_s, 0, threading.Event()

    def run(self):
        while not self._halt.is_set():
            self.peak = max(self.peak, cluster_rss())
            self._halt.wait(self.period_s)

    def stop(self) -> int:
        self._halt.set()
        self.join()
        self.peak = max(self.peak, cluster_rss())
        return self.peak


def bench_ray(args) -> str:
    import ray

    from actors.directory.actor import get_directory

    config, data_dir = start_ray(args)
    out = []
    try:
        directory = get_directory(config)
        ray.get(directory.list.remote(1))
        sampler = PeakSampler()
        sampler.start()
        call = admin_caller(directory, config)
        out += cold_activation_section(directory, call, args)
        out += many_workspaces_section(directory, call, args, sampler)
    finally:
        ray.shutdown()
        shutil.rmtree(data_dir, ignore_errors=True)
    return "\n".join(out)


def start_ray(args) -> tuple:
    """A local Ray for the directory and its workspace actors (no Serve): (settings, data dir)."""
    import ray

    from minisphere.settings import load_settings

    data_dir = Path(tempfile.mkdtemp(prefix="bench-durability-ray-", dir=REPO))
    env = {
        "MINISPHERE_DATA_DIR": str(data_dir),
        "MINISPHERE_ADMIN_TOKEN": "bench-admin-" + "x" * 16,
        "MINISPHERE_RAY_NAMESPACE": "minisphere-bench-durability",
        "MINISPHERE_SYNCHRONOUS": "FULL",
        "MINISPHERE_MAX_RESIDENT": str(args.cap),
        "MINISPHERE_HIBERNATE_IDLE_S": "0",
    }
    config = load_settings(env)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        namespace=config.namespace,
        logging_level="WARNING",
        log_to_driver=False,
    )
    return config, data_dir


def woken(directory, ws: str):
    """The workspace's actor handle. A wake refused `overloaded` (a burst past the spares
    ready) is asked again after its Retry-After, as the clients do."""
    import ray

    from minisphere.errors import Overloaded

    for _ in range(WAKE_REFUSALS_MAX):
        try:
            return ray.get(directory.activate.remote(ws))
        except Overloaded as refused:
            time.sleep(refused.retry_after_s * random.uniform(*OVERLOAD_RETRY_JITTER))
    return ray.get(directory.activate.remote(ws))


def admin_caller(directory, config):
    """call(workspace, method, body): activate through the directory, call as the admin."""
    import ray

    from actors.workspace_call import WorkspaceCall
    from minisphere.control.auth import token_hash

    caller = token_hash(config.admin_token)

    def call(ws, method, body):
        handle = woken(directory, ws)
        return ray.get(handle.call.remote(WorkspaceCall(method, body, caller))).unwrap()

    return call


def cold_activation_section(directory, call, args) -> list[str]:
    """Cold activation: from the local file, then from the snapshot (file removed)."""
    import ray

    cold_local, cold_snapshot = [], []
    for i in range(args.cold):
        ws = f"cold-{i:04d}"
        ray.get(directory.create.remote(ws))
        call(ws, "capture", {"content": f"cold fact {i}"})
        ray.get(directory.hibernate.remote(ws))
        started = time.perf_counter()
        call(ws, "getCount", {})
        cold_local.append((time.perf_counter() - started) * 1e3)
        ray.get(directory.hibernate.remote(ws))
        path = Path(ray.get(directory.workspace_path.remote(ws)))
        path.unlink()
        started = time.perf_counter()
        assert call(ws, "getCount", {})["count"] == 1
        cold_snapshot.append((time.perf_counter() - started) * 1e3)
        ray.get(directory.hibernate.remote(ws))
    return [
        "## Cold activation (first call to a hibernated workspace)\n",
        table(
            ["file", "p50 ms", "p99 ms", "n"],
            [
                ["local file", p50(cold_local), percentile(cold_local, 99), len(cold_local)],
                [
                    "restored from snapshot (local store)",
                    p50(cold_snapshot),
                    percentile(cold_snapshot, 99),
                    len(cold_snapshot),
                ],
            ],
        ),
    ]


def many_workspaces_section(directory, call, args, sampler: PeakSampler) -> list[str]:
    """Memory per resident actor, and many workspaces touched under the resident cap."""
    import ray

    started = time.perf_counter()
    max_resident, touch_ms = touch_workspaces(directory, call, args)
    elapsed = time.perf_counter() - started
    residents = ray.get(directory.resident.remote())
    max_resident = max(max_resident, len(residents))
    rss = []
    for ws in residents:
        handle = woken(directory, ws)
        rss.append(ray.get(handle.stats.remote())["rssBytes"] / 2**20)
    peak = sampler.stop()
    return [
        "\n## Memory and many workspaces\n",
        table(
            ["measure", "value"],
            [
                ["workspaces touched (create + 1 capture each)", args.workspaces],
                ["resident cap", args.cap],
                ["concurrent clients", args.concurrency],
                [
                    "create + first capture, ms p50 / p99 (includes hibernating an LRU victim)",
                    f"{p50(touch_ms):.0f} / {percentile(touch_ms, 99):.0f}",
                ],
                ["most resident actors seen", max_resident],
                [
                    "wall time for all, s (workspaces per s)",
                    f"{elapsed:.1f} ({args.workspaces / elapsed:.1f}/s)",
                ],
                [
                    "RSS per resident workspace actor, MiB (median / max)",
                    f"{statistics.median(rss):.0f} / {max(rss):.0f}" if rss else "n/a",
                ],
                [
                    "peak RSS of the whole Ray cluster (this session + driver), MiB",
                    f"{peak / 2**20:.0f}",
                ],
            ],
        ),
    ]


def touch_workspaces(directory, call, args) -> tuple[int, list[float]]:
    """Create and capture once into each of --workspaces from --concurrency clients: (the most
    resident actors seen, each touch's ms)."""
    import ray

    max_resident, touch_ms = 0, []

    def touch(i: int) -> None:
        nonlocal max_resident
        ws = f"many-{i:05d}"
        t0 = time.perf_counter()
        ray.get(directory.create.remote(ws))
        call(ws, "capture", {"content": f"workspace {i} remembers one thing"})
        touch_ms.append((time.perf_counter() - t0) * 1e3)
        if i % 50 == 0:
            resident = len(ray.get(directory.resident.remote()))
            max_resident = max(max_resident, resident)
            print(
                f"  {i}/{args.workspaces} touched, {resident} resident, cluster RSS "
                f"{cluster_rss() / 2**20:.0f} MiB",
                flush=True,
            )

    with ThreadPoolExecutor(args.concurrency) as pool:
        list(pool.map(touch, range(args.workspaces)))
    return max_resident, touch_ms


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per throughput cell")
    parser.add_argument("--cold", type=int, default=20, help="cold activation samples")
    parser.add_argument("--workspaces", type=int, default=2000)
    parser.add_argument("--cap", type=int, default=32)
    parser.add_argument(
        "--concurrency", type=int, default=4, help="clients touching workspaces at once"
    )
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    print("group commit vs one FULL commit per write ...", flush=True)
    load_before = os.getloadavg()[0]
    threads, actor_like, data = bench_group_commit(args.seconds)
    at32 = next(d for d in data if d["writers"] == 32)
    report = [
        "## Capture throughput, synchronous=FULL, closed loop, same run\n",
        "Threads: `naive` = each writer thread calls `Workspace.capture` (its own BEGIN "
        "IMMEDIATE..COMMIT, one fsync); `group` = each writer thread submits to the "
        "GroupCommitWriter and waits for its acknowledgement.\n",
        threads,
        f"\nAt 32 writers: group commit = {at32['group'] / at32['naive']:.1f}x the naive rate "
        "(target >= 10x).\n",
        "Actor-like: writers are asyncio tasks on one event loop (as inside the workspace "
        "actor); the same GroupCommitWriter with max_batch=1 (one commit per write) vs 256.\n",
        actor_like,
        f"\nAt 32 writers (actor-like): {at32['async_group'] / at32['async_one']:.1f}x.\n",
        f"1-minute load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after "
        f"(2 CPUs, shared machine; fsync-bound rates move with other disk work).\n",
    ]
    if not args.skip_ray:
        print("Ray: cold activation, memory, many workspaces ...", flush=True)
        report.append(bench_ray(args))
    text = "\n".join(report)
    print(text)
    if not args.no_save:
        print("saved", save_report("durability", text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
