"""Recycling and admission in the directory's own parts (in process, real workspace files):
a hibernated workspace's process goes back to the pool and serves the next wake; it is
retired past its bind bound; a pool full of fresh spares keeps the recycled one; a wake that
would evict a workspace in session is refused with `overloaded`, and so is one queued past
the wake deadline."""

from __future__ import annotations

import asyncio
import threading

import pytest

from minisphere.directory import spares
from minisphere.errors import Overloaded
from tests.directory.test_directory_state import created, directory_parts


async def ready_spares(parts, count: int) -> None:
    parts.pool.refill()
    for _ in range(500):
        if parts.pool.status()["ready"] >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the pool never had {count} spares: {parts.pool.status()}")


@pytest.fixture(autouse=True)
def quick_refill(monkeypatch):
    monkeypatch.setattr(spares, "REFILL_DELAY_S", 0.0)


def test_a_hibernated_workspace_process_serves_the_next_wake(tmp_path):
    parts, _, _runtime = directory_parts(tmp_path, MINISPHERE_SPARE_ACTORS="1")

    async def drive():
        await ready_spares(parts, 1)
        first, second = created(parts, "first", "second")
        actor = await parts.activator.activate(first)
        await ready_spares(parts, 1)  # refilled: the pool is full
        answer = await parts.hibernation.hibernate(first)
        woken = await parts.activator.activate(second)
        return actor, answer, woken, parts.residents.get(second).wake["actor"]

    actor, answer, woken, source = asyncio.run(drive())
    assert answer["recycled"] is True and woken is actor and source == "recycled"
    assert answer["threadsLeft"] is False
    assert not actor.killed and actor.host.workspace_id.endswith("second")
    assert parts.pool.status()["recycled"] == 1 and parts.pool.status()["notKept"] == 1


def woken_and_hibernated(tmp_path, max_binds: str):
    """One workspace woken and hibernated under a recycling bound: (parts, actor, answer)."""
    parts, _, _ = directory_parts(
        tmp_path, MINISPHERE_SPARE_ACTORS="2", MINISPHERE_RECYCLE_MAX_BINDS=max_binds
    )

    async def drive():
        (first,) = created(parts, "first")
        actor = await parts.activator.activate(first)
        return actor, await parts.hibernation.hibernate(first)

    return (parts, *asyncio.run(drive()))


def test_a_process_is_retired_once_it_has_served_its_bound_of_workspaces(tmp_path):
    parts, actor, answer = woken_and_hibernated(tmp_path, "1")
    assert answer["recycled"] is False and actor.killed
    assert parts.hibernation.retired == {"served 1 workspaces": 1}


def test_recycling_off_ends_every_hibernated_process(tmp_path):
    parts, actor, answer = woken_and_hibernated(tmp_path, "0")
    assert answer["recycled"] is False and actor.killed
    assert parts.hibernation.retired == {"recycling is off": 1}


def test_a_wake_that_would_evict_a_workspace_in_session_is_refused_not_queued(
    tmp_path, monkeypatch
):
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.residents.REFRESH_INTERVAL_S", 0.0)
    parts, _, _runtime = directory_parts(tmp_path, MINISPHERE_MAX_RESIDENT="2")

    async def drive():
        busy_a, busy_b, late = created(parts, "busy-a", "busy-b", "late")
        for ws in (busy_a, busy_b):
            actor = await parts.activator.activate(ws)
            actor.last_call_at = __import__("time").time()  # called just now: in session
        with pytest.raises(Overloaded) as refused:
            await parts.activator.activate(late)
        return refused.value, sorted(parts.residents.ids()), (busy_a, busy_b)

    refusal, resident, busy = asyncio.run(drive())
    assert resident == sorted(busy)  # nobody in session was evicted
    assert refusal.code == "overloaded" and 0 < refusal.retry_after_s <= 5
    assert parts.hibernation.refused_for_room == 1


def test_a_wake_queued_behind_too_many_others_is_refused_at_once(tmp_path):
    parts, _, runtime = directory_parts(tmp_path, MINISPHERE_WAKE_DEADLINE_S="1")
    runtime.bind_gate = asyncio.Event()  # binds wait: wakes pile up

    async def drive():
        spaces = created(parts, *(f"ws-{n}" for n in range(12)))
        wakes = [asyncio.ensure_future(parts.activator.activate(ws)) for ws in spaces]
        await asyncio.sleep(0.05)
        refused = [w for w in wakes if w.done() and isinstance(w.exception(), Overloaded)]
        runtime.bind_gate.set()
        await asyncio.gather(*wakes, return_exceptions=True)
        return len(refused), parts.activator.wake_admission.status()

    refused, status = asyncio.run(drive())
    # the first guess of a wake's length (0.5 s) admits two within one second of deadline; an
    # admitted one that finds no spare while the other starts a process is refused too
    starts_refused = parts.activator.refused_for_starts
    assert status["refused"] == 10 and status["inFlight"] == 0
    assert refused == 10 + starts_refused and starts_refused <= 1


@pytest.mark.parametrize("deadline_s", ["2", "0"])
def test_a_wake_that_would_start_a_second_process_at_once_is_refused_not_queued(
    tmp_path, deadline_s
):
    """With no spare ready, one wake starts a process; another arriving meanwhile would only
    slow that start down on two CPUs: it is refused with Retry-After, unless wakes are never
    refused (deadline 0)."""
    parts, _, runtime = directory_parts(tmp_path, MINISPHERE_WAKE_DEADLINE_S=deadline_s)
    runtime.bind_gate = asyncio.Event()  # the first start is still binding

    async def drive():
        first, second = created(parts, "ws-first", "ws-second")
        starting = asyncio.ensure_future(parts.activator.activate(first))
        await asyncio.sleep(0.05)
        try:
            await asyncio.wait_for(parts.activator.activate(second), 0.5)
            outcome = None
        except Overloaded as refused:
            outcome = refused
        except TimeoutError:  # queued behind the start, as before the bound
            outcome = "waited"
        runtime.bind_gate.set()
        await starting
        return outcome

    outcome = asyncio.run(drive())
    if deadline_s == "0":
        assert outcome == "waited"
    else:
        assert isinstance(outcome, Overloaded) and outcome.retry_after_s >= 1
        assert parts.activator.refused_for_starts == 1 and parts.activator.starting == 0


def test_a_process_whose_workspace_threads_outlive_the_close_is_ended_not_recycled(
    tmp_path, monkeypatch
):
    """A writer still busy when the hibernation gave up waiting for it (a long import chunk,
    a sync that hangs) would go on running in the process beside the next tenant's workspace:
    that process is ended, never handed back to the pool."""
    monkeypatch.setattr("minisphere.hosting.group_commit.WRITER_CLOSE_TIMEOUT_S", 0.2)
    parts, _, _ = directory_parts(tmp_path, MINISPHERE_SPARE_ACTORS="2")
    release = threading.Event()

    async def drive():
        await ready_spares(parts, 2)
        (first,) = created(parts, "busy")
        actor = await parts.activator.activate(first)
        host = actor.host
        # a write that holds the writer thread until the test lets it go
        busy = threading.Thread(target=host.calls.write_own, args=(release.wait,), daemon=True)
        busy.start()
        answer = await parts.hibernation.hibernate(first)
        return actor, answer, busy

    try:
        actor, answer, busy = asyncio.run(drive())
        assert answer["threadsLeft"] is True
        assert answer["recycled"] is False and actor.killed
        assert parts.hibernation.retired == {"its workspace's threads still ran": 1}
    finally:
        release.set()
    busy.join(10)
