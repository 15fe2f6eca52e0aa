"""The calls a workspace host runs: reads on its read pool, writes on its group-commit writer
(a hooked write prepared first, on a read-pool thread), and what each write does to the
snapshot triggers. Each call opens the file first if it is closed (`WorkspaceHost.opened`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from minisphere.durability.snapshotter import Snapshotter
from minisphere.engine.hooks import NOT_PREPARED
from minisphere.errors import ReplicationUnconfirmed
from minisphere.hosting.group_commit import Callback, GroupCommitWriter
from minisphere.hosting.open_file import OpenFile
from minisphere.hosting.read_pool import ReadPool
from minisphere.hosting.stored_states import StoredStates
from minisphere.reply import Reply
from minisphere.wire.timings import CallTimings

log = logging.getLogger("minisphere.host")


class CallsHost(Protocol):
    """What the calls need of the host that makes them (`WorkspaceHost`): its file, opened on
    demand or as it is now, and what a write tells its snapshots."""

    workspace_id: str
    writer: GroupCommitWriter | None
    reads: ReadPool | None
    snapshotter: Snapshotter
    states: StoredStates

    def opened(self) -> OpenFile: ...


class HostCalls:
    def __init__(self, host: CallsHost):
        self.host = host

    def needs_prepare(self, method: str) -> bool:
        """Whether a write must be prepared (`prepare_write`) before it is queued."""
        return method in self.host.opened().workspace.hooks.hooked

    def prepare_write(self, method: str, body: dict[str, Any]) -> Future[Any]:
        """The hooks' prepare step of one write, on a read-pool thread: a Future of the value
        to pass to `submit_write`."""
        return self.host.opened().reads.prepare(method, body)

    def submit_write(
        self,
        method: str,
        body: dict[str, Any],
        callback: Callback,
        prepared: Any = NOT_PREPARED,
        *,
        key: str | None = None,
        counts: bool = True,
    ) -> None:
        """Queue one write; `callback(reply)` runs once it committed (or failed).
        `key`: the caller's idempotency key. `counts`: whether the write makes the file dirty
        for the snapshot triggers -- a read's own follow-up (recall counts) does not, or a
        workspace that is only read would be snapshotted again and again."""
        writer = self.host.opened().writer
        note = self.host.snapshotter.note_writes

        def done(reply: Reply[Any]) -> None:
            try:
                # committed, even when the replica did not confirm it (sync mode answers 503
                # then): the file changed, and a committed forget's text must go everywhere
                committed = reply.ok or reply.timings.get("committed", False)
                replayed = reply.timings.get("replayed")
                if committed and counts and not replayed:
                    note(1)
                    if method == "forget":  # copies taken before it hold the text too
                        self.host.states.after_forget()
                        writer.confirm_soon()  # async: its history restart starts now
                elif method == "forget" and reply.ok and replayed:
                    self.host.states.confirm_forgotten()  # a retry asks again
            except ReplicationUnconfirmed as exc:
                reply = Reply.failed(exc, timings={**reply.timings, "committed": True})
            finally:
                callback(reply)

        writer.submit(method, body, done, prepared, key)

    def write_own(self, run: Callable[[], Any]) -> Any:
        """Run `run` -- it commits a transaction of its own on `host.workspace` (an import
        chunk) -- on the writer thread and return its result once it is answered like any
        write: after the replica confirmed it in sync mode (else `ReplicationUnconfirmed`),
        counted toward the durable position. The caller notes its writes for the snapshots
        (it knows how many it made)."""
        writer = self.host.opened().writer
        answered: Future[Any] = Future()

        def done(reply: Reply[Any]) -> None:
            if reply.error is None:
                answered.set_result(reply.value)
            else:
                answered.set_exception(reply.error)

        writer.submit_own(run, done)
        return answered.result()

    def follow_up(self, method: str, body: dict[str, Any]) -> None:
        """A read's small internal write (recall counts): queued, not awaited by the reader,
        and not a change of the memory, so it leaves the snapshot triggers alone."""

        def done(reply: Reply[Any]) -> None:
            if reply.error is not None:
                log.warning(
                    "follow-up %s of %s failed: %r", method, self.host.workspace_id, reply.error
                )

        if self.host.writer is not None:
            self.submit_write(method, body, done, counts=False)

    def warm_reads(self) -> Future[tuple[Any, CallTimings]] | None:
        """Ready a reader before the first call (see ReadPool.warm); None when not open."""
        reads = self.host.reads
        return reads.warm() if reads is not None else None

    def start_read(self, method: str, body: dict[str, Any] | None) -> Any:
        """What the hooks start as soon as a read arrives (a bound recall's query embedding,
        only sent: cheap enough for the caller's event loop), to pass to `submit_read`. Runs
        before the call is admitted, so it never opens the file (a restore may be swapping
        it): NOT_PREPARED while the file is closed."""
        reads = self.host.reads
        return reads.start(method, body) if reads is not None else NOT_PREPARED

    def submit_read(
        self, method: str, body: dict[str, Any] | None, prepared: Any = NOT_PREPARED
    ) -> Future[tuple[Any, CallTimings]]:
        return self.host.opened().reads.submit(method, body, prepared)
