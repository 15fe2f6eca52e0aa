"""The sync and async clients send a call refused with 503 and Retry-After again, a bounded
number of times, with jitter: against a real HTTP server on 127.0.0.1 (`http.server` on a
thread) that refuses a given number of requests and then answers 200. No Ray, no engine; none
of conftest's fixtures is used (none is autouse). The waits are recorded instead of slept
(`OverloadRetry.sleep` / `async_sleep`), except in the one test that sleeps for real under a
small longest wait."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minisphere.client import AsyncClient, Client, ServiceError
from minisphere.client.exchange import (
    OVERLOAD_RETRIES,
    OVERLOAD_RETRY_JITTER,
    OVERLOAD_RETRY_MAX_WAIT_S,
    READ_METHODS,
    OverloadRetry,
    jittered_wait_s,
)
from minisphere.client.workspace import IDEMPOTENCY_HEADER
from minisphere.engine.methods import METHODS
from tests.client.helpers import got

TOKEN = "msw_a-workspace-token"
ANSWER = {"count": 7, "status": "ok"}


class Refusing(ThreadingHTTPServer):
    """Refuses the first `refusals` requests with `status`, the error `code` and (unless None)
    `Retry-After: retry_after`; answers ANSWER after that. `requests`: (method, path, headers,
    body) of every request it saw."""

    daemon_threads = True

    def __init__(
        self, refusals: int, code: str, status: int, retry_after: str | None, plain: bool = False
    ):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.refusals, self.code, self.status, self.retry_after = (
            refusals,
            code,
            status,
            retry_after,
        )
        self.plain = plain  # refuse as a front end would: text, not the service's error
        self.requests: list[tuple[str, str, dict, bytes]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Refusing

    def do_GET(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.requests.append((self.command, self.path, dict(self.headers), body))
            refused = len(self.server.requests) <= self.server.refusals
        if refused:
            status, answer = (
                self.server.status,
                {"error": {"code": self.server.code, "message": "refused by the test server"}},
            )
        else:
            status, answer = 200, ANSWER
        data = json.dumps(answer).encode()
        if refused and self.server.plain:
            data = b"Internal Server Error"
        self.send_response(status)
        if refused and self.server.retry_after is not None:
            self.send_header("Retry-After", self.server.retry_after)
        self.send_header(
            "Content-Type", "text/plain" if refused and self.server.plain else "application/json"
        )
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_DELETE = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def refusing():
    """`refusing(refusals, code="overloaded", status=503, retry_after="1")`: a started server."""
    with contextlib.ExitStack() as servers:

        def start(
            refusals: int,
            code: str = "overloaded",
            status: int = 503,
            retry_after: str | None = "1",
            plain: bool = False,
        ) -> Refusing:
            server = Refusing(refusals, code, status, retry_after, plain)
            thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
            thread.start()
            servers.callback(thread.join)
            servers.callback(server.server_close)
            servers.callback(server.shutdown)
            return server

        yield start


@pytest.fixture(params=["sync", "async"])
def door(request) -> str:
    return request.param


def ask(door: str, url: str, call, *, record: bool = True, **options):
    """`call(client)` through the sync or the async client made with `options`: (its answer,
    or the ServiceError it raised; the waits it chose, recorded instead of slept)."""
    waits: list[float] = []

    async def scenario(client):
        if record:

            async def async_sleep(seconds):
                waits.append(seconds)

            client.overload_retry.sleep, client.overload_retry.async_sleep = (
                waits.append,
                async_sleep,
            )
        try:
            return await got(call(client))
        except ServiceError as error:
            return error

    async def with_sync():
        with Client(url, admin_token="msa_admin-token-for-tests", **options) as client:
            return await scenario(client)

    async def with_async():
        async with AsyncClient(url, admin_token="msa_admin-token-for-tests", **options) as client:
            return await scenario(client)

    return asyncio.run(with_sync() if door == "sync" else with_async()), waits


def notes(client):
    return client.workspace("notes", TOKEN)


READ = lambda c: notes(c).get_count()
KEYLESS_WRITE = lambda c: notes(c).call("capture", content="Postgres is the system of record")
KEYED_WRITE = lambda c: notes(c).call(
    "capture", content="Postgres is the system of record", idempotency_key="capture-1"
)
ADMIN_READ = lambda c: c.health()
ADMIN_WRITE = lambda c: c.hibernate_workspace("notes")


def jitter_bounds(retry_after_s: float) -> tuple[float, float]:
    low, high = OVERLOAD_RETRY_JITTER
    return low * retry_after_s, high * retry_after_s


def test_the_defaults():
    assert (OVERLOAD_RETRIES, OVERLOAD_RETRY_MAX_WAIT_S, OVERLOAD_RETRY_JITTER) == (
        3,
        30.0,
        (0.5, 1.5),
    )
    assert Client("http://127.0.0.1:1").overload_retry == OverloadRetry(3, 30.0)


@pytest.mark.parametrize("refusals", [1, 3])
def test_a_call_refused_as_overloaded_succeeds_after_k_refusals(refusing, door, refusals):
    server = refusing(refusals)
    answer, waits = ask(door, server.url, READ, overload_retries=3)
    assert answer == ANSWER["count"]
    assert len(server.requests) == refusals + 1
    low, high = jitter_bounds(1.0)
    assert len(waits) == refusals and all(low <= wait <= high for wait in waits), waits


def test_it_gives_up_after_the_bound_with_the_refusal_and_its_retry_after(refusing, door):
    server = refusing(refusals=10)
    error, waits = ask(door, server.url, READ, overload_retries=2)
    assert isinstance(error, ServiceError)
    assert (error.status, error.code, error.retry_after_s) == (503, "overloaded", 1.0)
    assert len(server.requests) == 3 and len(waits) == 2


def test_zero_retries_turns_it_off(refusing, door):
    server = refusing(refusals=1)
    error, waits = ask(door, server.url, KEYLESS_WRITE, overload_retries=0)
    assert (error.status, error.code, error.retry_after_s) == (503, "overloaded", 1.0)
    assert len(server.requests) == 1 and waits == []


# (case, refusal code, call, sent again?)
CASES = [
    ("overloaded-keyless-write", "overloaded", KEYLESS_WRITE, True),
    ("no-slots-keyless-write", "no_workspace_slots", KEYLESS_WRITE, True),
    ("overloaded-admin-write", "overloaded", ADMIN_WRITE, True),
    ("unavailable-read", "unavailable", READ, True),
    ("unavailable-keyed-write", "unavailable", KEYED_WRITE, True),
    ("unavailable-admin-get", "unavailable", ADMIN_READ, True),
    ("unavailable-keyless-write", "unavailable", KEYLESS_WRITE, False),
    ("unavailable-admin-write", "unavailable", ADMIN_WRITE, False),
]


@pytest.mark.parametrize("code, call, resent", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_only_a_call_that_was_not_run_or_is_safe_to_repeat_is_sent_again(
    refusing, door, code, call, resent
):
    server = refusing(refusals=1, code=code)
    answer, _ = ask(door, server.url, call)
    if resent:
        assert not isinstance(answer, ServiceError) and len(server.requests) == 2
        first, again = server.requests
        assert first == again  # the same call: method, path, headers and body
    else:
        assert (answer.status, answer.code, answer.retry_after_s) == (503, code, 1.0)
        assert len(server.requests) == 1


def test_a_resent_keyed_write_carries_its_idempotency_key(refusing, door):
    server = refusing(refusals=2, code="unavailable")
    ask(door, server.url, KEYED_WRITE)
    assert [headers[IDEMPOTENCY_HEADER] for _, _, headers, _ in server.requests] == [
        "capture-1"
    ] * 3


@pytest.mark.parametrize(
    "status, retry_after",
    [(503, None), (503, "Wed, 21 Oct 2026 07:28:00 GMT"), (429, "1"), (500, "1")],
    ids=["503-without-retry-after", "503-with-a-date", "429", "500"],
)
def test_without_a_503_and_seconds_of_retry_after_nothing_is_sent_again(
    refusing, door, status, retry_after
):
    server = refusing(refusals=1, status=status, retry_after=retry_after)
    error, waits = ask(door, server.url, READ)
    assert (error.status, error.code) == (status, "overloaded")
    assert error.retry_after_s == (1.0 if retry_after == "1" else None)
    assert len(server.requests) == 1 and waits == []


def test_the_longest_wait_caps_real_sleeps(refusing, door):
    """Sleeps for real (time.sleep / asyncio.sleep): Retry-After 1 s three times, capped at
    0.05 s a wait, takes well under the 1.5 s three uncapped waits would take at the least."""
    server = refusing(refusals=3)
    began = time.monotonic()
    answer, _ = ask(door, server.url, READ, record=False, overload_retry_max_wait_s=0.05)
    assert answer == ANSWER["count"] and len(server.requests) == 4
    assert time.monotonic() - began < 1.4


@given(retry_after_s=st.floats(0, 3600), max_wait_s=st.floats(0, 3600), seed=st.integers())
def test_the_jittered_wait_stays_within_its_bounds(retry_after_s, max_wait_s, seed):
    wait = jittered_wait_s(retry_after_s, max_wait_s, random.Random(seed).uniform)
    low, high = jitter_bounds(retry_after_s)
    assert min(low, max_wait_s) <= wait <= min(high, max_wait_s)


def test_the_jitter_spreads_the_waits():
    draws = random.Random(7)
    waits = [jittered_wait_s(2.0, 30.0, draws.uniform) for _ in range(200)]
    assert min(waits) < 1.25 and max(waits) > 2.75 and len(set(waits)) == 200


@given(
    resent=st.integers(0, 5),
    retries=st.integers(0, 5),
    code=st.sampled_from(["overloaded", "no_workspace_slots", "unavailable"]),
    safe=st.booleans(),
)
def test_the_policy_sends_again_only_within_the_bound_and_when_not_run_or_safe(
    resent, retries, code, safe
):
    error = ServiceError(503, code, "refused", retry_after_s=4.0)
    policy = OverloadRetry(retries, max_wait_s=5.0)
    if resent < retries and (safe or code != "unavailable"):
        assert 2.0 <= policy.wait_s(error, resent, safe) <= 5.0
    else:
        with pytest.raises(ServiceError) as raised:
            policy.wait_s(error, resent, safe)
        assert raised.value is error


def test_negative_retries_are_refused():
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:1", overload_retries=-1)


def test_the_read_methods_are_the_engines():
    assert {name for name, m in METHODS.items() if m.access == "read"} == READ_METHODS


@pytest.mark.parametrize(
    "call, resent",
    [(READ, True), (KEYED_WRITE, True), (KEYLESS_WRITE, False)],
    ids=["read", "keyed-write", "keyless-write"],
)
def test_a_500_the_service_did_not_write_is_sent_again_only_when_harmless(
    refusing, door, call, resent
):
    """Serve's proxy answers a bare 500 when the ingress replica dies with its node mid-call:
    the call may have run, so only a read or a keyed write goes again."""
    server = refusing(refusals=1, status=500, retry_after=None, plain=True)
    answer, waits = ask(door, server.url, call)
    if resent:
        assert not isinstance(answer, ServiceError) and len(server.requests) == 2
        assert len(waits) == 1 and 0 < waits[0] <= 1.5
    else:
        assert (answer.status, answer.code) == (500, "front_end_error")
        assert len(server.requests) == 1 and waits == []
