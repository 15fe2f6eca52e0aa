"""The spare pool's refilling, in plain asyncio (the Ray part, starting an actor, is the
`start_spare` callable the directory hands it; here it is a coroutine that reports no room)."""
from __future__ import annotations

import asyncio

from actors.directory import spares
from actors.directory.spares import NoRoomForSpare, Spare, SparePool


def test_no_room_for_a_spare_is_waited_out_not_counted_as_a_failed_start(monkeypatch):
    monkeypatch.setattr(spares, "REFILL_DELAY_S", 0.0)
    monkeypatch.setattr(spares, "NO_ROOM_RETRY_S", 0.01)
    answers = iter(["no room", "no room", "ready"])
    killed = []

    async def start_spare():
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
