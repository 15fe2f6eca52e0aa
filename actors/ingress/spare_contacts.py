"""An ingress replica's advance contact with the warm spares, so that a wake's call does not
also pay for the replica's first message to a new process.

The first message one process sends to an actor is slow (Ray looks the actor up and connects
to it); sent through another handle of the same actor later, a call costs what a warm call
does. A woken workspace's actor is a spare the replica has never talked to, so without this
every wake would pay that first contact inside its call. So each replica asks the directory
every SPARE_CONTACT_EVERY_S which spares are ready and pings each new one once, holding its
handle while it waits in the pool. The pool hands out its oldest spare first, so the spare a
wake gets has normally been ready, and contacted, for longer than that interval.

Costs: one small directory call per replica per interval, and one ping per spare per replica.
A failure only leaves wakes paying the first contact themselves.
"""

from __future__ import annotations

import asyncio
import logging

from actors.handles import Handle

log = logging.getLogger("minisphere.spare_contacts")
SPARE_CONTACT_EVERY_S = 2.0


class SpareContacts:
    def __init__(self, directory: Handle, every_s: float = SPARE_CONTACT_EVERY_S):
        self.directory = directory
        self.every_s = every_s
        self.contacted: dict[str, Handle] = {}  # ready spare's actor name -> its handle
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Keep contacting new spares from now on (cheap to call again; needs a running loop)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._contact_forever())

    async def _contact_forever(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception as exc:  # noqa: BLE001 - wakes then pay the first contact
                log.debug("could not learn the ready spares: %r", exc)
            await asyncio.sleep(self.every_s)

    async def refresh(self) -> int:
        """Ask which spares are ready, ping the new ones and let go of the rest; returns how
        many were pinged."""
        handles: tuple[list[str], dict[str, Handle]] = await self.directory.spare_handles.remote(
            list(self.contacted)
        )
        ready, new = handles
        for handle in new.values():
            handle.ping.remote()  # the first message; its answer is not needed
        kept = {name: self.contacted[name] for name in ready if name in self.contacted}
        self.contacted = {**kept, **new}
        return len(new)
