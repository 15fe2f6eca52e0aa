"""One workspace process recycled through a thousand workspaces: its memory, what a wake and a
hibernation cost it, beside a fresh spare and a warm call in the same run.

    python -m bench.bench_recycling                    # 1,000 bind/hibernate cycles
    python -m bench.bench_recycling --cycles 200       # a quicker look

One local Ray + Serve, settings at their defaults, the spare pool fixed at one spare so every
wake binds the process the previous hibernation gave back (checked by its pid). Each cycle: a
workspace not woken before gets a capture and a recall over HTTP (its wake), then is hibernated
through the directory. Reported: the process's PSS after the cycles as a ratio of a fresh
spare's, the wake's latency beside a warm call's, and a hibernation's wall time and CPU (the
process's own, read from /proc) with the replica holding the last write.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import httpx

from .bench_serverless import create_workspaces, process_cpu_s, pss_rss, wait_ready
from .common import machine_note, p50, percentile, publish_report, table
from .local_service import start_local_service, stop_local_service

ADMIN_TOKEN = "bench-recycling-admin-0123456789abcdef"
CYCLES = 1000
PSS_RATIO_TARGET = 1.2
MIB = 2**20


def spare_pid(ray, directory) -> int:
    (handle,) = ray.get(directory.spare_handles.remote([]), timeout=60)[1].values()
    return ray.get(handle.ready.remote(), timeout=60)["pid"]


def cycle(http, ray, directory, ws: str, headers: dict, n: int) -> dict:
    began = time.perf_counter()
    assert (
        http.post(
            f"/v1/w/{ws}/capture",
            headers=headers,
            json={"content": f"cycle {n}: a note with some words in it"},
        ).status_code
        == 200
    )
    wake_ms = (time.perf_counter() - began) * 1e3
    began = time.perf_counter()
    assert http.post(f"/v1/w/{ws}/getCount", headers=headers, json={}).status_code == 200
    warm_ms = (time.perf_counter() - began) * 1e3
    recall = http.post(f"/v1/w/{ws}/recall", headers=headers, json={"query": "note words"})
    assert recall.status_code == 200 and recall.json()["items"]
    began = time.perf_counter()
    answer = ray.get(directory.hibernate.remote(ws, "bench"), timeout=60)
    hibernate_ms = (time.perf_counter() - began) * 1e3
    return {
        "wake": wake_ms,
        "warm": warm_ms,
        "hibernate": hibernate_ms,
        "recycled": answer.get("recycled"),
        "pid": (answer.get("process") or {}).get("pid"),
        "snapshot": answer.get("snapshot") is not None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=CYCLES)
    args = parser.parse_args(argv)
    import ray

    settings, url, admin = start_local_service("bench-recycling", ADMIN_TOKEN)
    from actors.directory.actor import get_directory

    directory = get_directory(settings)
    try:
        ray.get(directory.set_spares.remote(1), timeout=60)
        wait_ready(directory, 1)
        with httpx.Client(base_url=url, timeout=120) as http:
            spaces = create_workspaces(http, admin, args.cycles, "cycle")
            pid = spare_pid(ray, directory)
            fresh = pss_rss([pid])
            print(f"{args.cycles} cycles through process {pid} ...", flush=True)
            results, cpu = run_cycles(http, ray, directory, spaces, pid, args.cycles)
            after = pss_rss([pid])
    finally:
        stop_local_service(settings)
        shutil.rmtree(Path(settings.data_dir), ignore_errors=True)
    body = table(
        ["measure", "figure", "detail / baseline in the same run", "target"],
        result_rows(results, cpu, pid, fresh, after),
    )
    return publish_report(
        "recycling", body, [machine_note("; settings at their defaults, the spare pool fixed at 1")]
    )


def run_cycles(http, ray, directory, spaces: list, pid: int, cycles: int) -> tuple[list, list]:
    """Every workspace woken and hibernated in turn: (each cycle's figures, the process's CPU
    seconds in each)."""
    results, cpu = [], []
    for n, (ws, headers) in enumerate(spaces):
        cpu_before = process_cpu_s(pid)
        results.append(cycle(http, ray, directory, ws, headers, n))
        cpu.append(process_cpu_s(pid) - cpu_before)
        if (n + 1) % 100 == 0:
            print(f"  {n + 1}/{cycles}", flush=True)
    return results, cpu


def result_rows(results: list, cpu: list, pid: int, fresh: tuple, after: tuple) -> list[list]:
    """fresh, after: the process's (PSS, RSS) as a spare and after the cycles."""
    (fresh_pss, fresh_rss), (after_pss, after_rss) = fresh, after
    same = sum(1 for r in results if r["recycled"] and r["pid"] == pid)
    ratio = after_pss / max(1, fresh_pss)
    wakes, warm = [r["wake"] for r in results], [r["warm"] for r in results]
    hibernations = [r["hibernate"] for r in results]
    return [
        [
            "cycles served by the one process",
            f"{same}/{len(results)}",
            "hibernated, given back to the pool, bound by the next wake",
            "",
        ],
        [
            f"PSS after {len(results)} cycles / a fresh spare's",
            f"{ratio:.2f}× ({after_pss / MIB:.0f} / {fresh_pss / MIB:.0f} MiB)",
            f"RSS {after_rss / MIB:.0f} / {fresh_rss / MIB:.0f} MiB",
            f"≤ {PSS_RATIO_TARGET}×: {'met' if ratio <= PSS_RATIO_TARGET else 'missed'}",
        ],
        [
            "a wake from the recycled process (capture over HTTP)",
            f"p50 {p50(wakes):.1f} ms, p99 {percentile(wakes, 99):.0f} ms",
            f"warm getCount right after: p50 {p50(warm):.1f} ms "
            f"({p50(wakes) / max(p50(warm), 1e-9):.1f}×)",
            "",
        ],
        [
            "a hibernation (the directory's call, wall)",
            f"p50 {p50(hibernations):.1f} ms, p99 {percentile(hibernations, 99):.0f} ms",
            f"{sum(r['snapshot'] for r in results)} of {len(results)} wrote a snapshot",
            "",
        ],
        [
            "the process's CPU per cycle (wake, 3 calls, hibernation)",
            f"p50 {p50(cpu) * 1e3:.0f} ms, mean {sum(cpu) / max(1, len(cpu)) * 1e3:.0f} ms",
            "",
            "",
        ],
    ]


if __name__ == "__main__":
    raise SystemExit(main())
