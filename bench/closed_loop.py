"""The closed-loop load the serverless benchmarks share: clients that each send their next
request as soon as the last one answered, 70% getCount and 30% capture, pausing as a refusal
asks (503 with Retry-After), as the clients do."""

from __future__ import annotations

import asyncio
import random
import time

import httpx

READ_SHARE = 0.7


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

    async def loop(http: httpx.AsyncClient):
        nonlocal errors, refusals
        while time.perf_counter() < stop_at:
            ws, headers = pick(rng)
            counter[0] += 1
            if rng.random() < READ_SHARE:
                method, body = "getCount", {}
            else:
                method, body = "capture", {"content": f"note {counter[0]} {rng.random()}"}
            started = time.perf_counter()
            response = await http.post(f"/v1/w/{ws}/{method}", json=body, headers=headers)
            if refused_for(response) is not None:
                refusals += 1
                await asyncio.sleep(refused_for(response) * rng.uniform(0.5, 1.5))
                continue
            latencies.append((time.perf_counter() - started) * 1e3)
            if response.status_code != 200:
                errors += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(loop(http) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return len(latencies) / elapsed, latencies, errors, refusals


def refused_for(response: httpx.Response) -> float | None:
    """The pause a 503 refusal asks for (Retry-After, seconds); None for any other answer."""
    if response.status_code == 503 and "retry-after" in response.headers:
        return float(response.headers["retry-after"])
    return None
