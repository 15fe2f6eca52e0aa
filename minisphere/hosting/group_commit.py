"""Group commit: one writer thread takes every queued write (up to a cap) and commits them in
one transaction, then answers each caller. Acknowledgement only after the commit returned.

Plain Python (no Ray). The caller hands `submit` a callback; it is called on the writer thread
with the call's `Reply`, whose timings have `queue_ms` (enqueue -> batch start),
`engine_ms` (the whole batch's transaction, commit included), `batch` (its size),
`replayed` (the answer came from a stored idempotency key; nothing was written) and
`committed` (the call's transaction committed, even when its answer is an error because the
replica did not confirm it: what a committed write must set off still has to run). A write
whose hooks' `prepare` step already ran (the host embeds a bound capture before queueing it)
carries the prepared value, so the writer thread only does SQLite work.

A call that fails inside the batch is rolled back to its savepoint and fails alone. If the
batch as a whole fails before or at its commit (an unexpected exception, or the commit
itself), nothing of it is durable, so each call is retried in a transaction of its own and
one bad call never fails the others. What runs after a commit cannot fail the batch (the
engine isolates it), so a committed call is never run twice.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from minisphere.engine.hooks import NOT_PREPARED
from minisphere.engine.workspace import Workspace
from minisphere.errors import ReplicationUnconfirmed, WorkspaceClosed
from minisphere.reply import Reply
from minisphere.settings import DEFAULT_MAX_BATCH_WRITES
from minisphere.wire.timings import CallTimings

log = logging.getLogger("minisphere.group_commit")
Callback = Callable[[Reply[Any]], None]
_STOP = object()
_NUDGE = object()  # a confirmation asked for with nothing new committed (`confirm_soon`)
# how long a close waits for the writer (and the confirmer) to finish what is queued; a thread
# still running after it is reported, so its process is never handed to another workspace
WRITER_CLOSE_TIMEOUT_S = 30.0


@dataclass
class _Pending:
    method: str
    body: dict[str, Any]
    callback: Callback
    prepared: Any = NOT_PREPARED
    key: str | None = None  # the caller's idempotency key, if it sent one
    enqueued: float = field(default_factory=time.perf_counter)
    own: Callable[[], Any] | None = None  # a write that commits a transaction of its own


@dataclass
class _Committed:
    """A batch whose transaction has committed, waiting for its confirmation."""

    batch: list[_Pending]
    outcomes: Sequence[Reply[Any]]
    started: float
    finished: float
    position: int  # the file's position once this batch committed


class GroupCommitWriter:
    """`confirm` (replication): returns once everything committed so far is on the replica.
    It runs on a thread of its own, pipelined with the writer: while one confirmation waits for
    the replica, the next batches commit, and one confirmation then covers every batch that
    committed before it began.

    Sync replication: nobody is answered before such a confirmation. When it raises, those
    calls are answered with `ReplicationUnconfirmed` instead of their results, since they are
    not durable as promised (a keyed call sent again gets its stored answer once confirmed).
    Async replication (`answer_first`): calls are answered at their commit, and confirmations
    run behind them at most every `confirm_every_s`, only to learn what the replica holds.

    Either way `durable_position` is the newest position the replica is known to hold (without
    replication: the newest committed), which is all the directory may record: a position only
    a lost node's disk held would make every other copy look stale for good. `on_durable` is
    told whenever it advances."""

    def __init__(
        self,
        workspace: Workspace,
        max_batch: int = DEFAULT_MAX_BATCH_WRITES,
        name: str = "writer",
        confirm: Callable[[], Any] | None = None,
        answer_first: bool = False,
        confirm_every_s: float = 0.0,
        on_durable: Callable[[int], None] | None = None,
        owes_confirm: Callable[[], bool] | None = None,
    ):
        self.workspace = workspace
        self.confirm = confirm
        # async: a confirmation still owes work (a forget's history restart not done yet): it
        # is confirmed again each interval, not only when the next write commits
        self.owes_confirm = owes_confirm
        self.answer_first = answer_first and confirm is not None
        self.confirm_every_s = confirm_every_s
        self.on_durable = on_durable
        # the newest position whose writes have been answered
        self.acknowledged_position = workspace.position
        self.durable_position = workspace.position
        self.max_batch = max(1, int(max_batch))
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self.batches = 0
        self.writes = 0
        self.largest_batch = 0
        self._thread = threading.Thread(target=self._run, name=f"group-commit-{name}", daemon=True)
        self._thread.start()
        self._confirms: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._confirmer = None
        if confirm is not None:
            self._confirmer = threading.Thread(
                target=self._confirm_loop, daemon=True, name=f"replica-confirm-{name}"
            )
            self._confirmer.start()

    def submit(
        self,
        method: str,
        body: dict[str, Any],
        callback: Callback,
        prepared: Any = NOT_PREPARED,
        key: str | None = None,
    ) -> None:
        if self._closed:
            raise WorkspaceClosed("the workspace's writer is closed")
        self._queue.put(_Pending(method, body, callback, prepared, key))

    def submit_own(self, run: Callable[[], Any], callback: Callback) -> None:
        """Queue a write that commits a transaction of its own on the workspace (an import
        chunk): `run()` runs on the writer thread, alone, and is answered like any write --
        after the replica's confirmation in sync mode."""
        if self._closed:
            raise WorkspaceClosed("the workspace's writer is closed")
        self._queue.put(_Pending("own", {}, callback, own=run))

    def close(self, timeout_s: float | None = None) -> bool:
        """Commit what is queued, then stop the threads; False when one outlived the wait."""
        wait_s = WRITER_CLOSE_TIMEOUT_S if timeout_s is None else timeout_s
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join(wait_s)
        if self._confirmer is not None:  # every committed batch answered, then stop
            self._confirms.put(_STOP)
            self._confirmer.join(wait_s)
        return not self._thread.is_alive() and not (
            self._confirmer is not None and self._confirmer.is_alive()
        )

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def counters(self) -> dict[str, int]:
        """Its queue and what it has committed (the actor's stats)."""
        return {
            "queueDepth": self.depth,
            "batches": self.batches,
            "writes": self.writes,
            "largestBatch": self.largest_batch,
        }

    # ---- writer thread -----------------------------------------------------------------------
    def _take_batch(self) -> tuple[list[_Pending], bool]:
        first = self._queue.get()
        if first is _STOP:
            return [], True
        batch, stop = [first], False
        while len(batch) < self.max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                stop = True
                break
            batch.append(item)
        return batch, stop

    def _run(self) -> None:
        stop = False
        while not stop:
            batch, stop = self._take_batch()
            for group in _alone_when_own(batch):
                self._commit(group)

    def _commit(self, batch: list[_Pending]) -> None:
        started = time.perf_counter()
        try:
            outcomes: Sequence[Reply[Any]]
            if batch[0].own is not None:
                outcomes = [Reply.done(batch[0].own())]
            else:
                outcomes = self.workspace.run_batch(
                    [(p.method, p.body, p.key) for p in batch], [p.prepared for p in batch]
                )
        except BaseException as exc:  # noqa: BLE001 - isolate, then retry one by one
            if len(batch) == 1:
                outcomes = [Reply.failed(exc)]
            else:
                log.warning("group of %d failed (%r); committing one by one", len(batch), exc)
                outcomes = [self._commit_alone(p) for p in batch]
        self.batches += 1
        self.writes += len(batch)
        self.largest_batch = max(self.largest_batch, len(batch))
        committed = _Committed(
            batch, outcomes, started, time.perf_counter(), self.workspace.position
        )
        if self._confirmer is None or self.answer_first:
            self._answer([committed], None)
        if self._confirmer is None:
            self._advance_durable(committed.position)
        else:
            self._confirms.put(committed)

    def confirm_soon(self) -> None:
        """Async: confirm once more soon even if nothing else commits (a forget's answer asks
        it: the replica's history restart it owes must not wait for the next write)."""
        if self._confirmer is not None and self.answer_first:
            self._confirms.put(_NUDGE)

    def _next_to_confirm(self) -> Any:
        """The next item to confirm; `_NUDGE` when an interval passed with work still owed."""
        if self.answer_first and self.owes_confirm is not None and self.owes_confirm():
            try:
                return self._confirms.get(timeout=max(self.confirm_every_s, 0.1))
            except queue.Empty:
                return _NUDGE
        return self._confirms.get()

    def _confirm_loop(self) -> None:
        confirm = self.confirm
        assert confirm is not None  # the loop runs only for a writer that confirms
        stop, last = False, float("-inf")
        while not stop:
            group = [self._next_to_confirm()]
            if self.answer_first and group[0] is not _STOP:
                # let writes gather, one confirmation per interval; a close ends the wait (a
                # hibernation waited out the interval: up to a second of every one's wall time)
                self._gather(group, last + self.confirm_every_s)
                last = time.monotonic()
            while True:
                try:
                    group.append(self._confirms.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in group)
            nudged = any(item is _NUDGE for item in group)
            group = [item for item in group if item is not _STOP and item is not _NUDGE]
            error = None
            if nudged or any(outcome.ok for committed in group for outcome in committed.outcomes):
                try:
                    confirm()
                except Exception as exc:  # noqa: BLE001 - every caller of the group is told
                    error = (
                        exc
                        if isinstance(exc, ReplicationUnconfirmed)
                        else ReplicationUnconfirmed(f"replication not confirmed: {exc!r}")
                    )
            if error is None and group:
                self._advance_durable(max(committed.position for committed in group))
            if not self.answer_first:
                self._answer(group, error)

    def _gather(self, group: list[Any], until: float) -> None:
        """Add what arrives for confirmation to `group` until `until` (monotonic) or a stop."""
        while (left := until - time.monotonic()) > 0:
            try:
                item = self._confirms.get(timeout=left)
            except queue.Empty:
                return
            group.append(item)
            if item is _STOP:
                return

    def _advance_durable(self, position: int) -> None:
        if position > self.durable_position:
            self.durable_position = position
            if self.on_durable is not None:
                try:
                    self.on_durable(position)
                except Exception:  # a broken listener must not stop the writer
                    log.exception("on_durable failed")

    def _answer(self, group: list[_Committed], unconfirmed: Exception | None) -> None:
        answered = time.perf_counter()
        if unconfirmed is None:
            self.acknowledged_position = max(
                [self.acknowledged_position, *(committed.position for committed in group)]
            )
        for committed in group:
            for pending, outcome in zip(committed.batch, committed.outcomes):
                reply = (
                    outcome
                    if outcome.error is not None or unconfirmed is None
                    else Reply.failed(unconfirmed)
                )
                timings: CallTimings = {
                    "queue_ms": (committed.started - pending.enqueued) * 1e3,
                    "engine_ms": (committed.finished - committed.started) * 1e3,
                    "batch": len(committed.batch),
                    "replicate_ms": (answered - committed.finished) * 1e3,
                    "replayed": outcome.replayed,
                    "committed": outcome.ok,
                }
                try:
                    pending.callback(reply.with_timings(timings))
                except Exception:  # a broken callback must not stop the writer
                    log.exception("group-commit callback failed")

    def _commit_alone(self, pending: _Pending) -> Reply[Any]:
        try:
            return self.workspace.run_batch(
                [(pending.method, pending.body, pending.key)], [pending.prepared]
            )[0]
        except BaseException as exc:  # noqa: BLE001
            return Reply.failed(exc)


def _alone_when_own(batch: list[_Pending]) -> list[list[_Pending]]:
    """The batch in order, each write with a transaction of its own in a group of its own."""
    groups: list[list[_Pending]] = []
    for pending in batch:
        if pending.own is not None or not groups or groups[-1][0].own is not None:
            groups.append([pending])
        else:
            groups[-1].append(pending)
    return groups
