"""An ingress replica's advance contact with the warm spares (plain asyncio: the directory and
the spares are stand-ins whose methods' `.remote()` behave as Ray's do for these calls)."""

from __future__ import annotations

import asyncio

from actors.ingress.spare_contacts import SpareContacts


class Spare:
    def __init__(self):
        self.pings = 0
        spare = self

        class Ping:
            @staticmethod
            def remote():
                spare.pings += 1

        self.ping = Ping


class Directory:
    """`spare_handles` as the directory answers it, over a pool the test changes."""

    def __init__(self, pool: dict):
        self.pool = pool
        directory = self

        class SpareHandles:
            @staticmethod
            async def remote(known):
                return list(directory.pool), {
                    n: h for n, h in directory.pool.items() if n not in set(known)
                }

        self.spare_handles = SpareHandles


def test_each_spare_is_pinged_once_and_let_go_once_handed_out():
    # a woken workspace's call paid the replica's first message to the spare's process
    a, b, c = Spare(), Spare(), Spare()
    directory = Directory({"a": a, "b": b})
    contacts = SpareContacts(directory)

    async def scenario():
        first = await contacts.refresh()
        again = await contacts.refresh()  # nothing new: nobody pinged twice
        directory.pool = {"b": b, "c": c}  # a handed out, c started
        later = await contacts.refresh()
        return first, again, later

    assert asyncio.run(scenario()) == (2, 0, 1)
    assert (a.pings, b.pings, c.pings) == (1, 1, 1)
    assert set(contacts.contacted) == {"b", "c"}


def test_a_directory_that_cannot_answer_leaves_the_contacts_running(monkeypatch):
    class Failing:
        class spare_handles:  # as Ray's attribute
            calls = 0

            @staticmethod
            async def remote(known):
                Failing.spare_handles.calls += 1
                raise RuntimeError("directory restarting")

    contacts = SpareContacts(Failing(), every_s=0.01)

    async def scenario():
        contacts.start()
        for _ in range(500):
            if Failing.spare_handles.calls >= 3:
                break
            await asyncio.sleep(0.01)
        alive = not contacts._task.done()
        contacts._task.cancel()
        return alive

    assert asyncio.run(scenario()) and Failing.spare_handles.calls >= 3
