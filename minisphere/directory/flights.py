"""Single flight: while work for a key is running, callers for the same key wait for that work
and share its outcome instead of starting it again (two activations of one workspace must
bind one actor, two hibernations must snapshot once). A key is held only while its work runs,
so the table is bounded by the work in flight."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

Outcome = TypeVar("Outcome")


class SingleFlight(Generic[Outcome]):
    def __init__(self) -> None:
        self._running: dict[str, asyncio.Future[Outcome]] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._running

    def __len__(self) -> int:
        return len(self._running)

    async def joined(self, key: str) -> Outcome:
        """The outcome of the work running for `key` (which must be running)."""
        return await asyncio.shield(self._running[key])

    async def run(self, key: str, work: Callable[[], Awaitable[Outcome]]) -> Outcome:
        """The outcome of `work()`, or of the one already running for `key`. The work runs as
        a task of its own: a caller that goes away (Ray cancels the directory's task when the
        request waiting for it is cancelled, as when an HTTP client times out) leaves it
        running, so the process it started is bound and the caller's retry finds the
        workspace resident. Cancelling the work with its first caller would throw that start
        away, and under load every retry would start another, until nothing binds."""
        if key in self._running:
            return await self.joined(key)
        task = asyncio.ensure_future(work())
        self._running[key] = task

        def ended(done: asyncio.Future[Outcome]) -> None:
            if self._running.get(key) is done:
                del self._running[key]
            if not done.cancelled():
                done.exception()  # retrieved: no "never retrieved" warning

        task.add_done_callback(ended)
        return await asyncio.shield(task)

    async def settled(self, key: str) -> None:
        """Wait until the work running for `key` (if any) has ended, however it ended."""
        running = self._running.get(key)
        if running is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(running)

    async def any_settled(self) -> None:
        """Wait until one of the running works has ended (returns at once when none runs)."""
        if self._running:
            await asyncio.wait(
                [asyncio.shield(f) for f in self._running.values()],
                return_when=asyncio.FIRST_COMPLETED,
            )
