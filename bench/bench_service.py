"""Service benchmark: HTTP latency through Ray Serve vs the engine in-process vs a minimal
FastAPI/uvicorn round trip, throughput across many workspaces, resident actors and memory.

    python -m bench.bench_service [--entries 10000] [--samples 300] [--workspaces 100]

Everything runs in one go on this machine: a fresh local Ray with Serve on a free loopback
port, a uvicorn subprocess for the baseline, data in a temporary folder, SQLite FULL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.closed_loop import refused_for
from bench.common import p50, percentile, save_report, table
from bench.local_service import free_port
from minisphere.client.exchange import OVERLOAD_RETRY_JITTER

INGRESS_TARGET = 1.3  # HTTP getCount p50 / /healthz p50 through the same app
REFUSALS_PER_CALL_MAX = 20  # a call refused more often than this fails the run
WORDS = [
    f"{a}{b}"
    for a in ("kar", "lum", "sev", "tor", "mip", "dax", "quo", "fen", "zul", "bri")
    for b in ("ana", "eto", "iro", "ush", "ela", "opa", "ynn", "arc", "ide", "umo")
]


def sentence(rng: random.Random, i: int) -> str:
    return f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(12))


def timed(fn, n: int) -> list[float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - started) * 1e3)
    return samples


def row(name: str, samples: list[float], baseline: float | None = None) -> list:
    ratio = f"{p50(samples) / baseline:.1f}x" if baseline else ""
    return [name, p50(samples), percentile(samples, 99), len(samples), ratio]


# ---- baseline: minimal FastAPI over uvicorn --------------------------------------------------
def minimal_round_trip(samples: int) -> list[float]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "bench.minimal_app:app",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=Path(__file__).parent.parent,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(100):
                try:
                    client.post("/echo", json={})
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            timed(lambda i: client.post("/echo", json={"content": "x"}), 50)
            return timed(lambda i: client.post("/echo", json={"content": f"x{i}"}), samples)
    finally:
        proc.terminate()
        proc.wait()


# ---- engine in-process -----------------------------------------------------------------------
def engine_numbers(folder: Path, entries: int, samples: int, rng) -> dict[str, list[float]]:
    from minisphere.engine.workspace import Workspace

    ws = Workspace(folder / "engine.db", synchronous="FULL")
    for start in range(0, entries, 500):
        ws.run_batch(
            [
                ("capture", {"content": sentence(rng, i)})
                for i in range(start, min(entries, start + 500))
            ]
        )
    ids = [e["id"] for e in ws.list_recent(n=200)["items"]]
    out = {
        "capture": timed(lambda i: ws.capture(sentence(rng, 10**7 + i)), samples),
        "getEntry": timed(lambda i: ws.get_entry(ids[i % len(ids)]), samples),
    }
    try:
        out["recall"] = timed(
            lambda i: ws.recall(" ".join(rng.sample(WORDS, 2)), top_k=10), samples
        )
    except Exception as exc:  # noqa: BLE001 - retrieval may be absent or mid-change
        print(f"recall unavailable in-process: {exc!r}", flush=True)
    ws.close()
    return out


# ---- service -----------------------------------------------------------------------------------
async def seed(url, ws, headers, entries, rng, concurrency=64) -> float:
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def one(i):
            async with sem:
                r = await client.post(
                    f"/v1/w/{ws}/capture", headers=headers, json={"content": sentence(rng, i)}
                )
                r.raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(entries)))
        return entries / (time.perf_counter() - started)


def server_timing(response) -> dict[str, float]:
    parts = {}
    for item in response.headers.get("server-timing", "").split(","):
        name, _, dur = item.strip().partition(";dur=")
        if dur:
            parts[name] = float(dur)
    return parts


def service_latency(client, ws, headers, samples, rng, recall_ok) -> tuple[dict, dict]:
    ids = [
        e["id"]
        for e in client.post(f"/v1/w/{ws}/listRecent", headers=headers, json={"n": 200}).json()[
            "items"
        ]
    ]
    breakdown: dict[str, dict[str, list[float]]] = {}

    def call(method, body):
        response = client.post(f"/v1/w/{ws}/{method}", headers=headers, json=body)
        response.raise_for_status()
        for name, value in server_timing(response).items():
            breakdown.setdefault(method, {}).setdefault(name, []).append(value)

    calls = {
        "capture": lambda i: call("capture", {"content": sentence(rng, 10**7 + i)}),
        "getEntry": lambda i: call("getEntry", {"id": ids[i % len(ids)]}),
        "getCount": lambda i: call("getCount", {}),
    }
    if recall_ok:
        calls["recall"] = lambda i: call(
            "recall", {"query": " ".join(rng.sample(WORDS, 2)), "topK": 10}
        )
    out = {}
    for method, fn in calls.items():
        timed(fn, 30)
        breakdown.pop(method, None)
        out[method] = timed(fn, samples)
    return out, breakdown


def ingress_cost(client, ws, headers, samples) -> tuple[list[float], list[float]]:
    """getCount and /healthz through the same app, interleaved call by call so both see the
    same machine: (getCount ms, /healthz ms). /healthz runs no actor and no authentication,
    so the difference is what the ingress adds to a call besides Serve's own request path."""
    count, health = [], []
    for _ in range(samples):
        started = time.perf_counter()
        client.post(f"/v1/w/{ws}/getCount", headers=headers, json={}).raise_for_status()
        count.append((time.perf_counter() - started) * 1e3)
        started = time.perf_counter()
        client.get("/healthz").raise_for_status()
        health.append((time.perf_counter() - started) * 1e3)
    return count, health


async def many_workspaces(url, spaces, requests_per_space, concurrency, rng, method) -> tuple:
    """Calls spread over the workspaces: (calls/s, latencies ms, refusals). A call refused with
    503 + Retry-After (a wake burst past the spares) is sent again after the pause, as the
    client does; its latency runs from the first send to the answer."""
    limits = httpx.Limits(max_connections=concurrency)
    sem = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    refusals = 0
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def one(ws, headers, i):
            nonlocal refusals
            body = {"content": sentence(rng, i)} if method == "capture" else {}
            async with sem:
                started = time.perf_counter()
                for _ in range(REFUSALS_PER_CALL_MAX):
                    r = await client.post(f"/v1/w/{ws}/{method}", headers=headers, json=body)
                    pause_s = refused_for(r.status_code, r.headers)
                    if pause_s is None:
                        break
                    refusals += 1
                    await asyncio.sleep(pause_s * random.uniform(*OVERLOAD_RETRY_JITTER))
                latencies.append((time.perf_counter() - started) * 1e3)
                r.raise_for_status()

        jobs = [
            one(ws, h, n * 1000 + k)
            for k in range(requests_per_space)
            for n, (ws, h) in enumerate(spaces)
        ]
        random.Random(7).shuffle(jobs)
        started = time.perf_counter()
        await asyncio.gather(*jobs)
        return len(jobs) / (time.perf_counter() - started), latencies, refusals


def resident_actors(namespace: str) -> tuple[int, list[int]]:
    import ray

    from minisphere.directory.launch import ACTOR_NAME_PREFIX

    alive = [n for n in ray.util.list_named_actors() if n.startswith(ACTOR_NAME_PREFIX)]
    stats = ray.get([ray.get_actor(n, namespace=namespace).stats.remote() for n in alive])
    return len(alive), [s["rssBytes"] for s in stats]


def parse_cli(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--workspaces", type=int, default=100)
    ap.add_argument("--per-workspace", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument(
        "--ray-niceness",
        default="0",
        help="RAY_worker_niceness for this run (Ray's default is 15; 0 puts Ray's "
        "processes on par with the uvicorn baseline on a busy machine)",
    )
    return ap.parse_args(argv)


@dataclass
class OneWorkspace:
    """The figures of the seeded workspace: seeding rate, sequential latency and its parts,
    getCount beside /healthz."""

    seed_rate: float
    service: dict[str, list[float]]
    breakdown: dict[str, dict[str, list[float]]]
    count_lat: list[float]
    serve_floor: list[float]


@dataclass
class AcrossWorkspaces:
    """The figures of the many-workspace phase, and the workspace actors left resident."""

    cold: list[float]
    cap_rate: float
    cap_lat: list[float]
    read_rate: float
    read_lat: list[float]
    resident: int
    rss: list[int]
    cold_refusals: int  # first calls refused (503 + Retry-After) and sent again
    refusals: int  # the same, over the whole phase


def main(argv=None) -> int:
    args = parse_cli(argv)
    rng = random.Random(42)
    tmp = Path(tempfile.mkdtemp(prefix="bench-service-"))
    print(f"data in {tmp}", flush=True)

    print("baseline: minimal FastAPI/uvicorn round trip ...", flush=True)
    minimal = minimal_round_trip(args.samples)
    base = p50(minimal)
    print(f"engine in-process at {args.entries} entries ...", flush=True)
    engine = engine_numbers(tmp, args.entries, args.samples, rng)
    recall_ok = "recall" in engine

    import ray

    config, url, admin = start_service(tmp, args)
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            one = one_workspace(client, url, admin, args, rng, recall_ok)
            print(f"creating {args.workspaces} workspaces ...", flush=True)
            spaces = []
            for _ in range(args.workspaces):
                made = client.post("/v1/workspaces", headers=admin, json={}).json()
                spaces.append(
                    (made["workspace"]["id"], {"Authorization": f"Bearer {made['token']}"})
                )
        many = across_workspaces(url, spaces, args, rng, config.namespace)
    finally:
        ray.shutdown()  # with every process of the service (Serve's shutdown waits out 30 s)

    lat = latency_table(args, minimal, engine, one, many.cold)
    parts = table(
        ["method", "ingress p50", "rpc p50", "actor p50", "queue p50", "engine p50"],
        [
            [m, *(p50(b.get(k, [])) for k in ("ingress", "rpc", "actor", "queue", "engine"))]
            for m, b in one.breakdown.items()
        ],
    )
    thr = throughput_table(args, one.seed_rate, len(spaces), many)
    notes = service_notes(one.service, base, recall_ok)
    body = "\n\n".join(
        [
            "## Latency",
            lat,
            "## Where the time goes (Server-Timing, ms)",
            parts,
            "## Throughput and memory",
            thr,
            "## Notes",
            "\n".join(f"- {n}" for n in notes),
        ]
    )
    print("\n" + body)
    print(f"\nsaved to {save_report('service', body)}")
    return 0


def start_service(tmp: Path, args) -> tuple:
    """A fresh local Ray with the service on a free port: (its settings, url, admin headers)."""
    import ray

    import serve_app
    from minisphere.settings import load_settings

    port = free_port()
    config = load_settings(
        {
            "MINISPHERE_DATA_DIR": str(tmp / "service"),
            "MINISPHERE_PORT": str(port),
            "MINISPHERE_RAY_NAMESPACE": "minisphere-bench",
            "MINISPHERE_ADMIN_TOKEN": "bench-admin-token-0123456789",
        }
    )
    print("starting Ray + Serve ...", flush=True)
    os.environ.setdefault("RAY_worker_niceness", args.ray_niceness)
    ray.init(
        num_cpus=os.cpu_count(),
        include_dashboard=False,
        namespace=config.namespace,
        logging_level="WARNING",
        log_to_driver=False,
    )
    serve_app.start(config)
    url, admin = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {config.admin_token}"}
    return config, url, admin


def one_workspace(client, url: str, admin: dict, args, rng, recall_ok: bool) -> OneWorkspace:
    """Seed one workspace over HTTP, then time its calls one at a time."""
    created = client.post("/v1/workspaces", headers=admin, json={"id": "bench-main"}).json()
    headers = {"Authorization": f"Bearer {created['token']}"}
    print(f"seeding {args.entries} entries over HTTP ...", flush=True)
    seed_rate = asyncio.run(seed(url, "bench-main", headers, args.entries, rng))
    print("sequential latency ...", flush=True)
    service, breakdown = service_latency(
        client, "bench-main", headers, args.samples, rng, recall_ok
    )
    ingress_cost(client, "bench-main", headers, 30)
    count_lat, serve_floor = ingress_cost(client, "bench-main", headers, args.samples)
    return OneWorkspace(seed_rate, service, breakdown, count_lat, serve_floor)


def across_workspaces(url: str, spaces: list, args, rng, namespace: str) -> AcrossWorkspaces:
    """Every workspace's first call (its activation), then capture and getCount spread over
    them all; then the workspace actors resident and their memory."""
    print("first call per workspace (cold activation) ...", flush=True)
    _, cold, cold_refusals = asyncio.run(many_workspaces(url, spaces, 1, 16, rng, "getCount"))
    print("throughput across workspaces ...", flush=True)
    cap_rate, cap_lat, cap_refusals = asyncio.run(
        many_workspaces(url, spaces, args.per_workspace, args.concurrency, rng, "capture")
    )
    read_rate, read_lat, read_refusals = asyncio.run(
        many_workspaces(url, spaces, args.per_workspace, args.concurrency, rng, "getCount")
    )
    resident, rss = resident_actors(namespace)
    refusals = cold_refusals + cap_refusals + read_refusals
    return AcrossWorkspaces(
        cold, cap_rate, cap_lat, read_rate, read_lat, resident, rss, cold_refusals, refusals
    )


def latency_table(args, minimal: list[float], engine: dict, one: OneWorkspace, cold) -> str:
    base = p50(minimal)
    service, count_lat, serve_floor = one.service, one.count_lat, one.serve_floor
    rows = [
        row("minimal FastAPI/uvicorn POST (baseline)", minimal),
        row("Serve trivial route GET /healthz (no actor)", serve_floor, base),
    ]
    for method in ("capture", "getEntry", "getCount", "recall"):
        if method in service:
            rows.append(row(f"service HTTP {method} @ {args.entries}", service[method], base))
            if method in engine:
                rows.append(
                    row(f"engine in-process {method} @ {args.entries}", engine[method], base)
                )
    rows.append(row(f"cold activation (first call) x{len(cold)}", cold, base))
    ingress_ratio = p50(count_lat) / p50(serve_floor)
    rows.append(
        [
            f"HTTP getCount, interleaved with /healthz: {ingress_ratio:.2f}x its p50 "
            f"(target <= {INGRESS_TARGET:g}x: "
            f"{'met' if ingress_ratio <= INGRESS_TARGET else 'missed'})",
            p50(count_lat),
            percentile(count_lat, 99),
            len(count_lat),
            f"{p50(count_lat) / base:.1f}x",
        ]
    )
    return table(["path", "p50 ms", "p99 ms", "n", "p50 / baseline"], rows)


def throughput_table(args, seed_rate: float, spaces: int, many: AcrossWorkspaces) -> str:
    cap_rate, cap_lat, read_rate, read_lat = (
        many.cap_rate,
        many.cap_lat,
        many.read_rate,
        many.read_lat,
    )
    mib = [r / 2**20 for r in many.rss]
    return table(
        ["measure", "value"],
        [
            [f"capture req/s, 1 workspace, {64} concurrent (seeding)", f"{seed_rate:,.0f}"],
            [
                f"capture req/s across {spaces} workspaces, {args.concurrency} concurrent",
                f"{cap_rate:,.0f} (p50 {p50(cap_lat):.1f} ms, p99 {percentile(cap_lat, 99):.1f} ms)",
            ],
            [
                f"getCount req/s across {spaces} workspaces, {args.concurrency} concurrent",
                f"{read_rate:,.0f} (p50 {p50(read_lat):.1f} ms, p99 {percentile(read_lat, 99):.1f} ms)",
            ],
            [
                "calls refused (503 + Retry-After) and sent again, first calls / all",
                f"{many.cold_refusals} / {many.refusals}",
            ],
            ["resident workspace actors", str(many.resident)],
            [
                "RSS per workspace actor (median / max)",
                f"{p50(mib):.0f} MiB / {max(mib, default=0):.0f} MiB",
            ],
            ["RSS of all workspace actors", f"{sum(mib):,.0f} MiB"],
        ],
    )


def service_notes(service: dict, base: float, recall_ok: bool) -> list[str]:
    verdict = (
        ("met" if p50(service["capture"]) <= 3 * base else "NOT met")
        + f" for capture ({p50(service['capture']) / base:.1f}x); getEntry "
        f"{p50(service['getEntry']) / base:.1f}x"
    )
    notes = [
        f"Target service p50 <= 3x minimal round trip: {verdict}.",
        "SQLite synchronous=FULL (durable on acknowledge) in both engine and service; "
        "a capture pays one fsync per group commit.",
        f"{os.cpu_count()} cores shared with other work (load average "
        f"{os.getloadavg()[0]:.1f} at the end); one sequential client for latency; "
        f"RAY_worker_niceness={os.environ.get('RAY_worker_niceness')}.",  # noqa: SIM112 - Ray's own spelling
        "Server-Timing columns: ingress = inside the FastAPI handler of the Serve replica; "
        "rpc = the Ray call to the workspace actor; actor = inside the actor; queue = "
        "waiting for the writer/reader thread; engine = the SQLite transaction.",
    ]
    if not recall_ok:
        notes.append("recall did not run in this build (absent or failing): capture/getEntry only.")
    return notes


if __name__ == "__main__":
    sys.exit(main())
