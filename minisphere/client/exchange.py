"""One HTTP exchange with the service: its checked answer, or a `ServiceError`; and the one
policy for sending a refused call again (`OverloadRetry`), shared by the sync and async
clients and the in-cluster client (`actors/in_cluster.py`).

Every write takes `idempotency_key=`: sent as the `Idempotency-Key` header, it makes the write
safe to send again after a timeout or a 503 -- a repeat with the same key is answered what the
first answered and writes nothing (the service keeps keys at least 24 hours).

A refusal with 503 and a `Retry-After` header is sent again a bounded number of times: when
its code says the call was not run (`overloaded`: the service is at capacity;
`no_workspace_slots`: no room to open the workspace), whatever the method; for another such 503
only when a resend is harmless (a read, or a write with an idempotency key). A harmless call
answered a 5xx that the service did not write (code `front_end_error`: Serve's proxy when the
ingress replica died mid-call, or a load balancer) is sent again too, after about a second.
Each wait is Retry-After seconds times a random factor in `OVERLOAD_RETRY_JITTER` (0.5 to 1.5,
so callers refused together do not all come back at once), at most `overload_retry_max_wait_s=`
(`OVERLOAD_RETRY_MAX_WAIT_S`, 30 s); at most `overload_retries=` resends (`OVERLOAD_RETRIES`, 3;
0 turns it off). The last refusal raises `ServiceError` with the header's seconds in
`retry_after_s` (None when the answer had none).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

# The workspace methods that only read: sending one again is harmless (tests/client keeps this
# set equal to the engine's read methods).
READ_METHODS = frozenset(
    {
        "recall",
        "listRecent",
        "getEntry",
        "connections",
        "graphView",
        "getTags",
        "getCount",
        "getStats",
        "getBrief",
    }
)

OVERLOAD_RETRIES = 3  # resends at most of a call refused with 503 + Retry-After
OVERLOAD_RETRY_MAX_WAIT_S = 30.0  # the longest single wait before such a resend
OVERLOAD_RETRY_JITTER = (0.5, 1.5)  # the wait is Retry-After times a factor uniform in this
UNAVAILABLE_STATUS = 503
# the 503 codes that say the call was not run, so any method may be sent again
NOT_RUN_CODES = frozenset({"overloaded", "no_workspace_slots"})
# A 5xx whose body is not the service's error: written by the HTTP front (Serve's proxy, whose
# ingress replica died mid-call with its node; a load balancer). The call may have run: only a
# safe one is sent again, after about this long.
FRONT_END_ERROR = "front_end_error"
FRONT_END_RETRY_S = 1.0

T = TypeVar("T")


class ServiceError(Exception):
    """A refusal: HTTP `status`, the service's `code` and `message`, and `retry_after_s`, the
    seconds its Retry-After header asked to wait before asking again (None: no header)."""

    def __init__(self, status: int, code: str, message: str, retry_after_s: float | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.retry_after_s = retry_after_s


def retry_after_s(response: httpx.Response) -> float | None:
    """Retry-After in seconds; None when absent or not a number of seconds (the HTTP-date form,
    which the service never sends)."""
    try:
        seconds = float(response.headers["Retry-After"])
    except (KeyError, ValueError):
        return None
    return seconds if 0 <= seconds < math.inf else None


def check_answer(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            code = FRONT_END_ERROR if response.status_code >= 500 else "http_error"
            error = {"code": code, "message": response.text[:200]}
        raise ServiceError(
            response.status_code,
            error.get("code", "http_error"),
            error.get("message", response.text[:200]),
            retry_after_s(response),
        )
    return body


def jittered_wait_s(
    retry_after_s: float,
    max_wait_s: float,
    uniform: Callable[[float, float], float] = random.uniform,
) -> float:
    """Retry-After times a factor drawn uniformly from OVERLOAD_RETRY_JITTER, at most
    `max_wait_s`: callers refused at the same moment come back spread out."""
    return min(retry_after_s * uniform(*OVERLOAD_RETRY_JITTER), max_wait_s)


def resend_is_safe(method: str, key: str | None) -> bool:
    """Sending the workspace call again cannot write twice: a read, or a keyed write."""
    return method in READ_METHODS or key is not None


@dataclass
class OverloadRetry:
    """When a refused call is sent again, and after how long: the one policy of the sync and
    async HTTP clients and of the in-cluster client. `retries`: resends at most (0: none);
    `max_wait_s`: the longest single wait; `sleep` / `async_sleep`: how `run` / `arun` wait."""

    retries: int = OVERLOAD_RETRIES
    max_wait_s: float = OVERLOAD_RETRY_MAX_WAIT_S
    sleep: Callable[[float], Any] = time.sleep
    async_sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

    def __post_init__(self) -> None:
        if self.retries < 0 or not 0 <= self.max_wait_s < math.inf:
            raise ValueError("overload retries and their longest wait are finite and not negative")

    @staticmethod
    def resendable(error: ServiceError, safe: bool) -> bool:
        """A 503 with Retry-After whose code says the call was not run, or any such 503 when
        `safe` (a resend cannot write twice); or, when `safe`, a 5xx of the HTTP front."""
        if error.code == FRONT_END_ERROR:
            return safe
        if error.status != UNAVAILABLE_STATUS or error.retry_after_s is None:
            return False
        return safe or error.code in NOT_RUN_CODES

    def wait_s(self, error: ServiceError, resent: int, safe: bool) -> float:
        """Seconds to wait before sending again a call refused with `error` after `resent`
        resends; raises `error` when it is not to be sent again."""
        if resent >= self.retries or not self.resendable(error, safe):
            raise error
        waited = error.retry_after_s if error.retry_after_s is not None else FRONT_END_RETRY_S
        return jittered_wait_s(waited, self.max_wait_s)

    def run(self, send: Callable[[], T], safe: bool) -> T:
        """`send()`, which raises ServiceError when refused, sent again as `wait_s` says."""
        resent = 0
        while True:
            try:
                return send()
            except ServiceError as error:
                self.sleep(self.wait_s(error, resent, safe))
            resent += 1

    async def arun(self, send: Callable[[], Awaitable[T]], safe: bool) -> T:
        """`run` for a coroutine function."""
        resent = 0
        while True:
            try:
                return await send()
            except ServiceError as error:
                await self.async_sleep(self.wait_s(error, resent, safe))
            resent += 1


def exchange(
    http: httpx.Client, retry: OverloadRetry, safe: bool, verb: str, url: str, **request: Any
) -> Any:
    """One HTTP call's checked answer, the call sent again as `retry` says."""
    return retry.run(lambda: check_answer(http.request(verb, url, **request)), safe)


async def aexchange(
    http: httpx.AsyncClient, retry: OverloadRetry, safe: bool, verb: str, url: str, **request: Any
) -> Any:
    async def send() -> Any:
        return check_answer(await http.request(verb, url, **request))

    return await retry.arun(send, safe)
