"""Admission of calls into a workspace actor (asyncio, one event loop): `Admission`.

- open: calls run (counted as in flight);
- exclusive (a restore): new calls wait at the gate until it reopens, the restore waits for
  the calls in flight to finish;
- hibernating: new and waiting calls are refused with `WorkspaceHibernating` before they touch
  anything, so the ingress may safely send them again (to the re-activated workspace).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from minisphere.errors import WorkspaceHibernating


class Admission:
    def __init__(self, workspace_id: str):
        self.workspace_id = workspace_id
        self.inflight = 0
        self.hibernating = False
        self._open = asyncio.Event()
        self._open.set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._exclusive = asyncio.Lock()

    def _refuse(self) -> WorkspaceHibernating:
        return WorkspaceHibernating(
            f"workspace {self.workspace_id} is hibernating; the call was not run"
        )

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        while not self._open.is_set():
            await self._open.wait()
        if self.hibernating:
            raise self._refuse()
        self.inflight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self.inflight -= 1
            if self.inflight == 0:
                self._idle.set()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """No call runs inside; calls arriving meanwhile wait (or are refused if hibernating)."""
        async with self._exclusive:
            if self.hibernating:
                raise self._refuse()
            self._open.clear()
            try:
                await self._idle.wait()
                yield
            finally:
                self._open.set()

    async def close_for_hibernation(self) -> None:
        """Refuse every call from now on; return once the calls in flight have finished."""
        async with self._exclusive:
            self.hibernating = True
            await self._idle.wait()
