"""A tool call over MCP against the same call over the RPC route: `recall` and `capture` on
one workspace of one local service, in one run.

    python -m bench.bench_mcp                 # 300 calls per method and path
    python -m bench.bench_mcp --calls 100     # a quicker look

One local Ray + Serve (settings at their defaults but the data folder and port); the workspace
is seeded with SEED_ENTRIES entries first. Each path sends its calls one at a time, in rounds
that alternate between the paths (so a drift of the shared machine falls on all of them):
- rpc: `POST /v1/w/{workspace}/{method}` with httpx;
- mcp (sdk): the protocol's own client (`ClientSession` over Streamable HTTP, initialized once),
  `call_tool`, which also validates each answer against the tool's output schema;
- mcp (raw): the same `tools/call` JSON-RPC request posted with httpx, without the SDK client:
  what the endpoint itself costs.
The figure is each path's p50 and p99 and its ratio to the RPC route's. The target: recall and
capture over MCP (the SDK client) at most 1.3x the RPC route.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time

import httpx
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from .common import machine_note, p50, percentile, publish_report, table
from .local_service import start_local_service, stop_local_service

ADMIN_TOKEN = "bench-mcp-admin-0123456789abcdef"
SEED_ENTRIES = 200
ROUNDS = 5
TARGET_RATIO = 1.3
WORDS = [
    "postgres",
    "sqlite",
    "replica",
    "snapshot",
    "token",
    "recall",
    "capture",
    "graph",
    "edge",
    "entry",
    "workspace",
    "actor",
    "ingress",
    "budget",
    "schema",
    "tool",
    "answer",
    "revision",
    "staleness",
    "decision",
]
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def sentence(i: int) -> str:
    picked = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(6)]
    return f"Note {i}: " + " ".join(picked)


def arguments(method: str, counter) -> dict:
    if method == "recall":
        return {"query": sentence(next(counter) % SEED_ENTRIES)[8:], "topK": 5}
    return {"content": f"benchmark capture {next(counter)} " + sentence(next(counter))}


async def measure(url: str, workspace: str, token: str, calls: int) -> dict:
    samples: dict[tuple[str, str], list[float]] = {}
    counter = itertools.count()
    endpoint = f"{url}/v1/w/{workspace}/mcp"
    headers = {"Authorization": f"Bearer {token}"}
    per_round = max(1, calls // ROUNDS)
    async with (
        httpx.AsyncClient(base_url=url, timeout=60) as http,
        create_mcp_http_client(headers=headers) as mcp_http,
        streamable_http_client(endpoint, http_client=mcp_http, terminate_on_close=False) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()

        async def rpc(method):
            answer = await http.post(
                f"/v1/w/{workspace}/{method}", headers=headers, json=arguments(method, counter)
            )
            assert answer.status_code == 200, answer.text

        async def sdk(method):
            result = await session.call_tool(method, arguments(method, counter))
            assert not result.is_error, result.content

        async def raw(method):
            body = {
                "jsonrpc": "2.0",
                "id": next(counter),
                "method": "tools/call",
                "params": {"name": method, "arguments": arguments(method, counter)},
            }
            answer = await http.post(endpoint, json=body, headers={**headers, **MCP_HEADERS})
            assert answer.status_code == 200, answer.text
            assert not answer.json()["result"].get("isError"), answer.text

        paths = {"rpc": rpc, "mcp (sdk)": sdk, "mcp (raw)": raw}
        for method in ("recall", "capture"):
            for send in paths.values():  # warm: the actor, the caches, the pools
                for _ in range(10):
                    await send(method)
            for _ in range(ROUNDS):
                for path, send in paths.items():
                    kept = samples.setdefault((method, path), [])
                    for _ in range(per_round):
                        started = time.perf_counter()
                        await send(method)
                        kept.append((time.perf_counter() - started) * 1e3)
    return samples


def seed(url: str, workspace: str, token: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        for i in range(SEED_ENTRIES):
            answer = http.post(
                f"/v1/w/{workspace}/capture",
                json={"content": sentence(i)},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert answer.status_code == 200, answer.text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per method and path")
    args = parser.parse_args(argv)
    settings, url, admin = start_local_service("bench-mcp", ADMIN_TOKEN)
    try:
        created = httpx.post(
            f"{url}/v1/workspaces", json={"id": "bench-mcp"}, headers=admin, timeout=120
        ).json()
        token = created["token"]
        seed(url, "bench-mcp", token)
        samples = asyncio.run(measure(url, "bench-mcp", token, args.calls))
    finally:
        stop_local_service(settings)
    rows, verdicts = [], []
    for method in ("recall", "capture"):
        base_p50 = p50(samples[(method, "rpc")])
        base_p99 = percentile(samples[(method, "rpc")], 99)
        for path in ("rpc", "mcp (sdk)", "mcp (raw)"):
            kept = samples[(method, path)]
            ratio50, ratio99 = p50(kept) / base_p50, percentile(kept, 99) / base_p99
            rows.append(
                [method, path, len(kept), p50(kept), percentile(kept, 99), ratio50, ratio99]
            )
            if path == "mcp (sdk)":
                met = "met" if ratio50 <= TARGET_RATIO else "not met"
                verdicts.append(
                    f"{method} over MCP (SDK client): p50 {ratio50:.2f}x, p99 "
                    f"{ratio99:.2f}x the RPC route: target {TARGET_RATIO}x {met}"
                )
    body = table(["method", "path", "calls", "p50 ms", "p99 ms", "p50 / rpc", "p99 / rpc"], rows)
    notes = [
        *verdicts,
        f"{SEED_ENTRIES} entries seeded; calls one at a time, in {ROUNDS} rounds "
        "alternating between the paths, after 10 warm-up calls each.",
        "mcp (sdk) includes the SDK client's own work: building the request, parsing the "
        "result and validating the structured content against the tool's output schema "
        "(jsonschema, on the client; a recall answer is the largest). mcp (raw) is what "
        "the endpoint itself adds to the RPC route.",
        machine_note(),
    ]
    return publish_report("mcp", body, notes)


if __name__ == "__main__":
    raise SystemExit(main())
