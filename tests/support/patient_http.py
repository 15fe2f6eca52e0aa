"""HTTP transports that send a request again after each `503 overloaded` refusal, pausing as
its Retry-After asks, as the service's own clients do: such a call was not run. Tests that use
them check what a call does once admitted (test_overload.py checks the refusals themselves)."""

from __future__ import annotations

import asyncio
import time

import httpx

# how long a call keeps honouring `503 overloaded` + Retry-After before the refusal is its
# answer: on a busy shared machine a wake may be refused for a while
OVERLOAD_PATIENCE_S = 120.0
OVERLOADED = b'"overloaded"'


def may_be_refused(response: httpx.Response, give_up_at: float) -> bool:
    """A 503 with Retry-After while there is patience left: a refusal if its body says
    `overloaded` (read only then, so other answers keep their streams)."""
    return (
        response.status_code == 503
        and "retry-after" in response.headers
        and time.monotonic() < give_up_at
    )


class PatientTransport(httpx.HTTPTransport):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        give_up_at = time.monotonic() + OVERLOAD_PATIENCE_S
        while True:
            response = super().handle_request(request)
            if not may_be_refused(response, give_up_at) or OVERLOADED not in response.read():
                return response
            response.close()
            time.sleep(float(response.headers["retry-after"]))


class PatientAsyncTransport(httpx.AsyncHTTPTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        give_up_at = time.monotonic() + OVERLOAD_PATIENCE_S
        while True:
            response = await super().handle_async_request(request)
            if not may_be_refused(response, give_up_at) or OVERLOADED not in await response.aread():
                return response
            await response.aclose()
            await asyncio.sleep(float(response.headers["retry-after"]))
