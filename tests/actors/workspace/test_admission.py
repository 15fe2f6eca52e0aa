"""The workspace actor's call gate: restores hold calls, hibernation refuses them unrun."""

import asyncio

import pytest

from actors.workspace.admission import Admission
from minisphere.errors import WorkspaceHibernating


def test_exclusive_waits_for_calls_in_flight_and_holds_new_ones():
    async def scenario():
        gate, order = Admission("ws-gate"), []

        async def call(name, hold):
            async with gate.admit():
                order.append(f"{name} start")
                await asyncio.sleep(hold)
                order.append(f"{name} end")

        async def restore():
            async with gate.exclusive():
                order.append("restore")
                await asyncio.sleep(0.02)

        first = asyncio.create_task(call("a", 0.05))
        await asyncio.sleep(0.01)
        swap = asyncio.create_task(restore())
        await asyncio.sleep(0.01)
        late = asyncio.create_task(call("b", 0))
        await asyncio.gather(first, swap, late)
        return order

    assert asyncio.run(scenario()) == ["a start", "a end", "restore", "b start", "b end"]


def test_hibernation_refuses_new_calls_after_draining():
    async def scenario():
        gate, done = Admission("ws-gate"), []

        async def call():
            async with gate.admit():
                await asyncio.sleep(0.03)
                done.append("ran")

        running = asyncio.create_task(call())
        await asyncio.sleep(0.01)
        await gate.close_for_hibernation()
        assert done == ["ran"] and gate.inflight == 0
        with pytest.raises(WorkspaceHibernating):
            async with gate.admit():
                pass
        with pytest.raises(WorkspaceHibernating):
            async with gate.exclusive():
                pass
        await running

    asyncio.run(scenario())
