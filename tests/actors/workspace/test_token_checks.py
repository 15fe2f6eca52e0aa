"""A workspace actor's token checks: the record of token use reaches the directory after the
call, never inside it (in plain asyncio: the report is the callable the actor hands in)."""

from __future__ import annotations

import asyncio
import time

import pytest

from actors.workspace import token_checks
from actors.workspace.token_checks import TokenChecks
from minisphere.control.auth import TokenGrant, token_hash
from minisphere.engine.methods import find_method
from minisphere.errors import Unauthenticated


def _checks(reports: list) -> tuple[TokenChecks, str]:
    candidate = token_hash("a-workspace-token")
    checks = TokenChecks("", reports.append)
    checks.set_grants([TokenGrant(candidate, "token-1", "read")])
    return checks, candidate


async def _until(condition, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        await asyncio.sleep(0.01)


def test_a_calls_token_use_is_reported_after_the_call_not_inside_it(monkeypatch):
    # the report was a woken actor's first message to the directory, 4.6 ms inside its
    # first call
    monkeypatch.setattr(token_checks, "TOKEN_USE_REPORT_DELAY_S", 0.05)
    reports: list = []
    checks, candidate = _checks(reports)

    async def scenario():
        checks.authorize(find_method("getCount"), candidate)
        sent_inside = list(reports)
        await _until(lambda: reports)
        return sent_inside

    assert asyncio.run(scenario()) == []
    assert list(reports[0]) == ["token-1"]


def test_uses_within_a_report_interval_go_out_in_one_report(monkeypatch):
    monkeypatch.setattr(token_checks, "TOKEN_USE_REPORT_DELAY_S", 0.05)
    reports: list = []
    checks, candidate = _checks(reports)

    async def scenario():
        for _ in range(5):
            checks.authorize(find_method("getCount"), candidate)
        await _until(lambda: reports)
        checks.authorize(find_method("getCount"), candidate)  # the next interval's
        await asyncio.sleep(0.2)

    asyncio.run(scenario())
    assert len(reports) == 1


def test_a_refused_token_records_no_use():
    reports: list = []
    checks, _ = _checks(reports)

    async def scenario():
        with pytest.raises(Unauthenticated):
            checks.authorize(find_method("getCount"), token_hash("not-a-token"))

    asyncio.run(scenario())
    assert reports == [] and not checks._report_pending
