"""What Serve's HTTP front costs per call: its Python proxy (the default) against its HAProxy
ingress (`RAY_SERVE_ENABLE_HA_PROXY=1`), the same service and workspace otherwise.

    python -m bench.bench_http_front

Each front runs in a process of its own (the variable must be set before Ray starts), one after
the other: one workspace, getCount over HTTP, sequential and from 16 clients at once. Reported:
requests per second, latency, and the machine's CPU per call (every process, from /proc/stat,
so run it on a quiet machine), each as a ratio to the Python proxy of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .closed_loop import post, session
from .common import machine_note, p50, percentile, publish_report, table
from .local_service import start_local_service, stop_local_service

ADMIN_TOKEN = "bench-http-front-admin-0123456789abcdef"
FRONTS = {"Python proxy (default)": "0", "HAProxy ingress": "1"}
WARM_UP_CALLS = 300
SEQUENTIAL_CALLS = 400
CONCURRENT_CALLS = 2000
CLIENTS = 16
SETTLE_S = 3.0


def machine_cpu_s() -> float:
    """CPU seconds every process on the machine has spent (all but idle and iowait)."""
    with Path("/proc/stat").open() as stat:
        ticks = [int(value) for value in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


async def drive(
    url: str, path: str, headers: dict, calls: int, clients: int, body=None
) -> list[float]:
    """Latencies (ms) of `calls` POSTs from `clients` at once; `body()` makes each call's JSON
    (default: an empty object)."""
    latencies: list[float] = []
    async with session(url, clients) as http:  # aiohttp's: bench/closed_loop.py says why
        gate = asyncio.Semaphore(clients)

        async def one() -> None:
            async with gate:
                began = time.perf_counter()
                status, _ = await post(http, path, body() if body else {}, headers)
                assert status == 200, status
                latencies.append((time.perf_counter() - began) * 1e3)

        await asyncio.gather(*(one() for _ in range(calls)))
    return latencies


def measure(url: str, path: str, headers: dict, calls: int, clients: int) -> dict:
    cpu, began = machine_cpu_s(), time.perf_counter()
    latencies = asyncio.run(drive(url, path, headers, calls, clients))
    took, spent = time.perf_counter() - began, machine_cpu_s() - cpu
    return {
        "rps": calls / took,
        "p50": p50(latencies),
        "p99": percentile(latencies, 99),
        "cpuMs": spent / calls * 1e3,
    }


def one_front() -> dict:
    """Run in the child: start the service, measure, stop; the figures as a dict."""
    settings, url, admin = start_local_service("http-front", ADMIN_TOKEN)
    try:
        with httpx.Client(base_url=url, timeout=120) as http:
            made = http.post("/v1/workspaces", headers=admin, json={"id": "front-1"})
            assert made.status_code == 201, made.text
        path = "/v1/w/front-1/getCount"
        headers = {"Authorization": f"Bearer {made.json()['token']}"}
        asyncio.run(drive(url, path, headers, WARM_UP_CALLS, CLIENTS))
        time.sleep(SETTLE_S)
        return {
            "sequential": measure(url, path, headers, SEQUENTIAL_CALLS, 1),
            "concurrent": measure(url, path, headers, CONCURRENT_CALLS, CLIENTS),
        }
    finally:
        stop_local_service(settings)
        shutil.rmtree(settings.data_dir, ignore_errors=True)


def run_front(flag: str) -> dict:
    env = {**os.environ, "RAY_SERVE_ENABLE_HA_PROXY": flag}
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_http_front", "--one"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    if parser.parse_args(argv).one:
        print(json.dumps(one_front()))
        return 0
    figures = {name: run_front(flag) for name, flag in FRONTS.items()}
    base = figures["Python proxy (default)"]
    rows = []
    for name, got in figures.items():
        seq, conc = got["sequential"], got["concurrent"]
        rows.append(
            [
                name,
                f"p50 {seq['p50']:.1f} ms ({seq['p50'] / base['sequential']['p50']:.2f}×)",
                f"{conc['rps']:.0f} req/s ({conc['rps'] / base['concurrent']['rps']:.2f}×), "
                f"p50 {conc['p50']:.1f} ms, p99 {conc['p99']:.0f} ms",
                f"{conc['cpuMs']:.1f} ms ({conc['cpuMs'] / base['concurrent']['cpuMs']:.2f}×)",
            ]
        )
    body = table(
        [
            "HTTP front",
            "getCount, one client",
            f"getCount, {CLIENTS} clients",
            "machine CPU per call",
        ],
        rows,
    )
    return publish_report(
        "http-front",
        body,
        [
            machine_note(
                "; one workspace, settings at their defaults, each front in a fresh local Ray"
            )
        ],
    )


if __name__ == "__main__":
    raise SystemExit(main())
