"""A bound workspace actor's write path: the hooks' prepare step on a read-pool thread (a
capture's embedding), the due note the scheduler's skip rule needs, the write queued on the
group-commit writer, and the caller answered from the writer's thread once its batch
committed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from actors.workspace.directory_news import DirectoryNews
from actors.workspace.due_notes import DueNotes
from actors.workspace.position_reports import PositionReports
from minisphere.engine.hooks import NOT_PREPARED
from minisphere.engine.methods import Method
from minisphere.errors import (
    IdempotencyKeyReused,
    InvalidArgument,
    NotFound,
    WorkspaceClosed,
    WorkspaceFenced,
)
from minisphere.hosting.host import WorkspaceHost
from minisphere.reply import Reply
from minisphere.wire.actor_methods import DirectoryMethod
from minisphere.wire.timings import CallTimings

# A forget refused before its transaction (bad input, no such entry, a key reused with another
# body, a closed file, an owner fenced out) forgot nothing: the admin's exports stay and no node
# is swept for it. Any other failure may come after the commit (a replica that did not confirm).
FORGET_REFUSED = (InvalidArgument, NotFound, IdempotencyKeyReused, WorkspaceClosed, WorkspaceFenced)


def _settle(future: asyncio.Future[tuple[Any, CallTimings]], reply: Reply[Any]) -> None:
    if future.cancelled():
        return
    if reply.error is None:
        future.set_result((reply.value, reply.timings.copy()))
    else:
        future.set_exception(reply.error)


class WritePath:
    def __init__(
        self,
        host: WorkspaceHost,
        due: DueNotes,
        news: DirectoryNews,
        positions: PositionReports,
        after_forget: Callable[[], None],
    ):
        self.host, self.due, self.news, self.positions = host, due, news, positions
        self.after_forget = after_forget  # the admin's exports may hold the text
        # where the writer thread's news goes (the actor's loop, known from its first write)
        self.loop: asyncio.AbstractEventLoop | None = None

    async def write(
        self, method: Method, body: dict[str, Any], key: str | None = None
    ) -> tuple[Any, CallTimings]:
        """(result, timings) of one write, once committed; a refusal raises."""
        prepared, prepare_ms = await self._prepare(method.name, body)
        # Tell the control plane before a write (or a pass) can change what is due, then queue
        # it right after (see due_notes.py).
        if method.access == "maintenance":
            self.due.before_pass()
        else:
            self.due.before_write(method.name)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[Any, CallTimings]] = loop.create_future()

        def done(reply: Reply[Any]) -> None:
            loop.call_soon_threadsafe(_settle, future, reply)

        self.loop = loop
        self.host.calls.submit_write(method.name, body, done, prepared, key=key)
        try:
            result, timings = await future
        except FORGET_REFUSED:
            raise
        except BaseException:
            self._after(method.name)
            raise
        self._after(method.name)
        self.positions.after_write()
        if prepare_ms is not None:
            timings["prepare_ms"] = prepare_ms
        return result, timings

    def _after(self, method_name: str) -> None:
        if method_name == "forget":
            self.after_forget()
            # copies left on nodes the workspace moved from may hold the text too
            self.news.tell(DirectoryMethod.FORGOT)

    async def _prepare(self, method_name: str, body: dict[str, Any]) -> tuple[object, float | None]:
        """The hooks' prepare step (embedding) on a read-pool thread, when the write has one."""
        if not self.host.calls.needs_prepare(method_name):
            return NOT_PREPARED, None
        started = time.perf_counter()
        prepared = await asyncio.wrap_future(self.host.calls.prepare_write(method_name, body))
        return prepared, (time.perf_counter() - started) * 1e3
