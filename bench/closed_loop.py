"""The load the serverless benchmarks send: clients that each send their next request as soon
as the last one answered (70% getCount, 30% capture), pausing as a refusal asks (503 with
Retry-After), as the clients do.

The clients are aiohttp's: with 32 connections at once httpx's async client spent 2.2 ms of CPU
a request here against aiohttp's 0.1, so the benchmark's own clients took more of the 2-core
machine than the service's replica did, and a throughput figure measured mostly them.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping

import aiohttp

from minisphere.client.exchange import OVERLOAD_RETRY_JITTER

READ_SHARE = 0.7
REQUEST_TIMEOUT_S = 300


def session(url: str, clients: int, timeout_s: float = REQUEST_TIMEOUT_S) -> aiohttp.ClientSession:
    """A client session of `clients` connections to the service at `url`."""
    return aiohttp.ClientSession(
        url,
        connector=aiohttp.TCPConnector(limit=clients),
        timeout=aiohttp.ClientTimeout(total=timeout_s),
    )


async def post(
    http: aiohttp.ClientSession, path: str, body, headers: dict
) -> tuple[int, Mapping[str, str]]:
    """(status, headers: looked up by any case) of one POST, its body read."""
    async with http.post(path, json=body, headers=headers) as response:
        await response.read()
        return response.status, response.headers.copy()


async def closed_loop(
    url: str, pick, seconds: float, clients: int, seed: int
) -> tuple[float, list[float], int, int]:
    """`clients` loops sending requests for `seconds`: (answered req/s, latencies ms, errors,
    refusals). A refusal (503 with Retry-After) is not served: its client pauses as asked
    (jittered), as the clients do, and goes on."""
    rng = random.Random(seed)
    latencies: list[float] = []
    errors = refusals = 0
    stop_at = time.perf_counter() + seconds
    counter = [0]

    async def loop(http: aiohttp.ClientSession):
        nonlocal errors, refusals
        while time.perf_counter() < stop_at:
            ws, headers = pick(rng)
            counter[0] += 1
            if rng.random() < READ_SHARE:
                method, body = "getCount", {}
            else:
                method, body = "capture", {"content": f"note {counter[0]} {rng.random()}"}
            started = time.perf_counter()
            status, answer_headers = await post(http, f"/v1/w/{ws}/{method}", body, headers)
            pause_s = refused_for(status, answer_headers)
            if pause_s is not None:
                refusals += 1
                await asyncio.sleep(pause_s * rng.uniform(*OVERLOAD_RETRY_JITTER))
                continue
            latencies.append((time.perf_counter() - started) * 1e3)
            if status != 200:
                errors += 1

    async with session(url, clients) as http:
        started = time.perf_counter()
        await asyncio.gather(*(loop(http) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return len(latencies) / elapsed, latencies, errors, refusals


def refused_for(status: int, headers) -> float | None:
    """The pause a 503 refusal asks for (Retry-After, seconds); None for any other answer."""
    retry_after = headers.get("retry-after")
    if status == 503 and retry_after is not None:
        return float(retry_after)
    return None
