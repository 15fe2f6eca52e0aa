"""The spare pool's refilling, in plain asyncio (the Ray part, starting an actor, is the
`start_spare` callable the directory hands it; here it is a coroutine that reports no room)."""

from __future__ import annotations

import asyncio

from minisphere.directory import spares
from minisphere.directory.spares import NoRoomForSpare, Spare, SparePool


def test_no_room_for_a_spare_is_waited_out_not_counted_as_a_failed_start(monkeypatch):
    monkeypatch.setattr(spares, "REFILL_DELAY_S", 0.0)
    monkeypatch.setattr(spares, "NO_ROOM_RETRY_S", 0.01)
    answers = iter(["no room", "no room", "ready"])
    killed = []

    async def start_spare(_spares_on):
        if next(answers) == "no room":
            raise NoRoomForSpare("every node is full")
        return Spare(handle="actor-1", name="workspace-actor:1", node_id="node-a")

    async def scenario():
        pool = SparePool(1, start_spare, killed.append)
        pool.refill()
        for _ in range(200):
            if pool.status()["ready"]:
                break
            await asyncio.sleep(0.01)
        return pool.status(), pool.take("node-a")

    status, taken = asyncio.run(scenario())
    assert status["ready"] == 1 and status["failed"] == 0 and status["noRoom"] == 2
    assert taken is not None and taken.name == "workspace-actor:1" and not killed


def test_a_pool_following_demand_meets_a_repeated_burst_from_spares_then_shrinks(
    tmp_path, monkeypatch
):
    # the directory's own parts over real workspace files, the pool wired as the directory
    # wires it when MINISPHERE_SPARE_ACTORS is unset; the pool's clock is the test's
    from minisphere.control.residency_policy import SPARE_DEMAND_WINDOW_S, spare_budget
    from minisphere.directory.spares import Demand
    from tests.directory.test_directory_state import directory_parts

    monkeypatch.setattr(spares, "REFILL_DELAY_S", 0.0)
    monkeypatch.setattr(spares, "DEMAND_REVIEW_S", 0.02)
    parts, _, runtime = directory_parts(
        tmp_path, MINISPHERE_SPARE_ACTORS="", MINISPHERE_MAX_RESIDENT="100"
    )
    pool, now = parts.pool, [1_000.0]
    pool.clock = lambda: now[0]
    assert pool.demand == Demand(floor=4, ceiling=spare_budget(2**34, 2))
    burst = 12

    async def until(condition) -> None:
        for _ in range(500):
            if condition():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"never: {pool.status()}")

    async def scenario():
        ids = [
            parts.workspaces.create(f"ws-{i}", None, None)["workspace"]["id"] for i in range(burst)
        ]
        pool.refill()
        await until(lambda: pool.status()["ready"] == 4)
        await asyncio.gather(*(parts.activator.activate(ws) for ws in ids))  # the first burst
        await until(lambda: pool.status()["ready"] == burst)
        grown = pool.status()
        for ws in ids:
            await parts.hibernation.hibernate(ws)
        handed_out = pool.handed_out
        for ws in ids:  # the same burst again, back to back
            await parts.activator.activate(ws)
        from_spares = pool.handed_out - handed_out
        now[0] += SPARE_DEMAND_WINDOW_S  # both bursts leave the window
        await until(lambda: pool.status()["size"] == 4 and pool.status()["ready"] == 4)
        return grown, from_spares, pool.status()

    grown, from_spares, shrunk = asyncio.run(scenario())
    assert grown["size"] == burst and grown["peakWakesPerMinute"] == burst
    assert from_spares == burst  # every wake of the second burst
    assert shrunk["shrunk"] >= burst - 4 and shrunk["peakWakesPerMinute"] == 0
    assert len([a for a in runtime.live.values() if a.host is None]) == 4  # no spare left over


def test_a_demand_following_pool_never_starts_more_spares_at_once_than_it_may(monkeypatch):
    # a grown pool that started every replacement at once took the cores from the very wakes
    # it serves; it starts `starts_at_once` at a time however many are missing
    from minisphere.directory.spares import Demand

    monkeypatch.setattr(spares, "REFILL_DELAY_S", 0.0)
    running, most, names = [0], [0], iter(range(1_000))

    async def start_spare(_spares_on):
        running[0] += 1
        most[0] = max(most[0], running[0])
        await asyncio.sleep(0.01)
        running[0] -= 1
        return Spare(handle=None, name=f"workspace-actor:{next(names)}", node_id="node-a")

    async def scenario():
        pool = SparePool(
            6, start_spare, lambda handle: None, demand=Demand(floor=6, ceiling=6, starts_at_once=2)
        )
        pool.refill()
        for _ in range(300):
            if pool.status()["ready"] == 6:
                break
            await asyncio.sleep(0.01)
        return pool.status()

    status = asyncio.run(scenario())
    assert status["ready"] == 6 and most[0] == 2


def test_a_demand_following_pool_keeps_a_returned_process_so_its_next_wake_starts_none(
    monkeypatch,
):
    # one workspace woken and hibernated in turn: each wake takes the process its hibernation
    # gave back; a pool that killed it (or a fresh spare for it) at the return would start a
    # process for every wake, and kill one at every hibernation
    from minisphere.directory.spares import Demand

    monkeypatch.setattr(spares, "REFILL_DELAY_S", 0.0)
    names, killed = iter(range(1_000)), []

    async def start_spare(_spares_on):
        return Spare(handle=f"h{next(names)}", name="workspace-actor:x", node_id="node-a")

    async def scenario():
        now = [0.0]
        pool = SparePool(
            2, start_spare, killed.append, demand=Demand(floor=2, ceiling=4), clock=lambda: now[0]
        )
        pool.refill()
        for _ in range(200):
            if pool.status()["ready"] == 2:
                break
            await asyncio.sleep(0.01)
        bound = pool.take()  # the first wake: a fresh spare, replaced
        for _ in range(5):
            await asyncio.sleep(0.02)
            pool.expect_return()
            assert pool.give_back(Spare(bound.handle, bound.name, "node-a", recycled=True))
            bound = pool.take()
            assert bound.recycled
        await asyncio.sleep(0.05)
        started_then = pool.started
        pool.expect_return()
        pool.give_back(Spare(bound.handle, bound.name, "node-a", recycled=True))
        now[0] += spares.RETURNED_KEPT_S  # nobody came for it: it goes at the next review
        pool.follow_demand()
        return started_then, pool.status()

    started, status = asyncio.run(scenario())
    assert started == 3 and status["ready"] == 2 and status["shrunk"] == 1
    assert len(killed) == 1
