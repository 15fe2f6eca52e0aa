"""Bad credentials sent all at once to two ingress replicas, in process and without Ray: each
replica is the real `actors/ingress/gateway.Gateway` behind the real app, both in front of one
directory whose token answers come from a real control plane (each answer takes a moment, so
every request is in flight before the first one is answered). For every credential case, 200
requests at once from one address: every answer is a structured 401/403/429, no request gets
past authentication (the directory is never asked to wake or call a workspace, the control
plane is unchanged), and the directory is asked no more often than the two replicas' budgets
allow."""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter

import httpx
import pytest

from actors.ingress.gateway import Gateway
from minisphere.control.blueprints import Blueprint
from minisphere.control.plane import ControlPlane
from minisphere.control.token_cache import (
    ADMIN_GUESS_BURST,
    ADMIN_GUESSES_PER_S,
    FAILED_AUTH_BURST,
    FAILED_AUTH_PER_S,
)
from minisphere.http.app import build_api
from minisphere.settings import Settings

ADMIN = "msa_admin-token-of-the-concurrency-tests-0123456789"
REPLICAS = 2
AT_ONCE = 200
DIRECTORY_ANSWER_S = 0.005
TOKEN_QUESTIONS = ("authenticate", "whoami")
ANSWERED = (*TOKEN_QUESTIONS, "list")  # and the admin's own listing of workspaces


class Remote:
    def __init__(self, answer):
        self.remote = answer


class InProcessDirectory:
    """The directory's token answers (`authenticate`, `whoami`) and the workspace listing from
    a real control plane, each after a short wait; it counts every method asked. Anything
    else (a wake, a call) no test here should reach: it is counted and fails."""

    def __init__(self, plane: ControlPlane):
        self.plane = plane
        self.asked: Counter = Counter()

    def __getattr__(self, method: str) -> Remote:
        if method == "start":  # the replica warms the spare pool: not awaited
            return Remote(lambda: None)

        async def answer(*args):
            self.asked[method] += 1
            await asyncio.sleep(DIRECTORY_ANSWER_S)
            if method in ANSWERED:
                owner = self.plane.tokens if method in TOKEN_QUESTIONS else self.plane
                return getattr(owner, method)(*args)
            raise RuntimeError(f"a test request reached the directory's {method}")

        return Remote(answer)


@pytest.fixture
def service(tmp_path):
    plane = ControlPlane(tmp_path / "control.db", synchronous="NORMAL")
    plane.create(Blueprint(), [], "ws-a")
    _, other = plane.create(Blueprint(), [], "ws-b")
    revoked = plane.tokens.issue("ws-a", "write")
    plane.tokens.revoke("ws-a", revoked["tokenId"])
    credentials = {
        "other": other,
        "revoked": revoked["token"],
        "expired": plane.tokens.issue("ws-a", "write", expires_at=1)["token"],
        "read": plane.tokens.issue("ws-a", "read")["token"],
    }
    yield plane, credentials, tmp_path
    plane.close()


def replicas(plane, folder):
    directory = InProcessDirectory(plane)
    settings = Settings(data_dir=str(folder), admin_token=ADMIN)
    apps = [build_api(Gateway(settings, directory=directory), []) for _ in range(REPLICAS)]
    return apps, directory


def flood(apps, requests):
    """Send (method, path, authorization) requests all at once from 127.0.0.1, spread over the
    replicas in turn."""

    async def go():
        clients = [
            httpx.AsyncClient(
                base_url="http://minisphere.test",
                transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 40000)),
            )
            for app in apps
        ]
        try:
            return await asyncio.gather(
                *(
                    clients[i % len(clients)].request(
                        method, path, json=body, headers={"Authorization": authorization}
                    )
                    for i, (method, path, body, authorization) in enumerate(requests)
                )
            )
        finally:
            for client in clients:
                await client.aclose()

    return asyncio.run(go())


def state(plane) -> tuple:
    workspaces = plane.list(100, "")
    return (
        tuple(w["id"] for w in workspaces),
        tuple(
            tuple(sorted(t["tokenId"] for t in plane.tokens.list_for(w["id"]))) for w in workspaces
        ),
    )


CAPTURE = ("POST", "/v1/w/ws-a/capture", {"content": "an intruder's text"})
ADMIN_ROUTE = ("GET", "/v1/workspaces", None)
WHOAMI = ("GET", "/v1/whoami", None)
# name: (route, authorization of request i, directory asks each replica may make, and how many
# more per second the flood lasts: a budget refills while a busy machine works through it).
# Distinct guesses are held to the budget; copies of one token share one question per replica.
CASES = {
    "unknown tokens, each new": (
        CAPTURE,
        lambda c, i: f"Bearer msw_guess-{i}",
        (FAILED_AUTH_BURST, FAILED_AUTH_PER_S),
    ),
    "admin guesses": (
        ADMIN_ROUTE,
        lambda c, i: f"Bearer msa_guess-{i}",
        (ADMIN_GUESS_BURST, ADMIN_GUESSES_PER_S),
    ),
    "whoami guesses": (
        WHOAMI,
        lambda c, i: f"Bearer msw_guess-{i}",
        (FAILED_AUTH_BURST, FAILED_AUTH_PER_S),
    ),
    "one unknown token": (CAPTURE, lambda c, i: "Bearer msw_guess", 1),
    "another workspace's token": (CAPTURE, lambda c, i: f"Bearer {c['other']}", 1),
    "a revoked token": (CAPTURE, lambda c, i: f"Bearer {c['revoked']}", 1),
    "an expired token": (CAPTURE, lambda c, i: f"Bearer {c['expired']}", 1),
    "a read token writing": (CAPTURE, lambda c, i: f"Bearer {c['read']}", 1),
    "a workspace token at an admin route": (ADMIN_ROUTE, lambda c, i: f"Bearer {c['read']}", 1),
    "one admin guess": (ADMIN_ROUTE, lambda c, i: "Bearer msa_guess", 1),
    "malformed headers": (CAPTURE, lambda c, i: f"Token msw_guess-{i}", 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_credentials_sent_at_once_to_two_replicas_get_nothing_past_the_budget(service, case):
    plane, credentials, folder = service
    (method, path, body), authorization, budget = CASES[case]
    burst, refill_per_s = budget if isinstance(budget, tuple) else (budget, 0.0)
    apps, directory = replicas(plane, folder)
    before = state(plane)
    started = time.monotonic()
    answers = flood(
        apps, [(method, path, body, authorization(credentials, i)) for i in range(AT_ONCE)]
    )
    asks_per_replica = burst + math.ceil(refill_per_s * (time.monotonic() - started))
    statuses = Counter(a.status_code for a in answers)
    assert set(statuses) <= {401, 403, 429}, statuses
    assert all(set(a.json()["error"]) == {"code", "message"} for a in answers)
    assert set(directory.asked) <= set(TOKEN_QUESTIONS), directory.asked  # nothing woken
    assert sum(directory.asked.values()) <= REPLICAS * asks_per_replica, directory.asked
    assert state(plane) == before
    if burst > 1:  # the budget, not luck, is what held the rest back
        assert statuses[429] >= AT_ONCE - REPLICAS * asks_per_replica, statuses
    else:  # one token's copies: one answer, never a 429
        assert statuses[429] == 0, statuses


def test_the_admin_token_is_answered_by_both_replicas_while_guesses_flood_them(service):
    plane, _, folder = service
    apps, _directory = replicas(plane, folder)
    guesses = [("GET", "/v1/workspaces", None, f"Bearer msa_guess-{i}") for i in range(AT_ONCE)]
    admin = [("GET", "/v1/workspaces", None, f"Bearer {ADMIN}")] * (REPLICAS * 4)
    answers = flood(apps, guesses + admin)
    assert [a.status_code for a in answers[AT_ONCE:]] == [200] * len(admin)
