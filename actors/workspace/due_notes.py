"""Keeping the scheduler's skip rule correct across writes (see `minisphere.maintenance.runs`).

Before the first due-changing write (capture / append / update) after each staleness pass —
and after each actor start — the workspace actor tells the control plane "a write is queued at
t"; the control plane then treats the workspace as due no later than t + the shortest
volatility threshold. One directory message per pass cycle, not per write, and the write never
waits for it: the note is sent (not awaited) right before the write is queued.

Why that is exact enough: the note carries its own time t, so the order in which it and a
pass's answer reach the control plane does not matter —
- a pass queued after the write sees it (the writer is FIFO); its answer forgets notes older
  than its request, and a note that arrives later is only a harmless extra (one run that could
  have been skipped is not);
- a pass queued before the write was requested before t, so recording its answer keeps the
  note (`maintenance.ledger.record_pass` only forgets notes older than the pass's request).
A note that cannot be delivered clears the flag, so the next write sends one again; the worst
case is a skipped cron run, which only delays *persisting* marks: reads judge staleness lazily
anyway. Every write, on a vector-bound workspace too, goes through the one FIFO writer.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any

from actors.handles import Handle
from minisphere.engine.clock import epoch_ms
from minisphere.maintenance.runs import DUE_CHANGING_WRITES

log = logging.getLogger("minisphere.due_notes")


class DueNotes:
    """`directory`: the directory actor's handle (None: no control plane to tell; no-op)."""

    def __init__(self, workspace_id: str, directory: Handle | None):
        self.workspace_id = workspace_id
        self.directory = directory
        self.noted = False

    def before_write(self, method_name: str) -> None:
        """Call right before queueing a write: sends the note when one is owed."""
        if method_name in DUE_CHANGING_WRITES:
            self.before_bulk_write()

    def before_bulk_write(self) -> None:
        """Call right before an import chunk (it captures entries): as `before_write`."""
        if self.noted or self.directory is None:
            return
        self.noted = True
        try:
            ref = self.directory.maintenance.remote("note_write", self.workspace_id, epoch_ms())
            ref.future().add_done_callback(self._delivered)
        except Exception as exc:  # noqa: BLE001 - the write must not fail for this
            self._undelivered(exc)

    def _delivered(self, future: Future[Any]) -> None:
        exc = future.exception()
        if exc is not None:
            self._undelivered(exc)

    def _undelivered(self, exc: BaseException) -> None:
        self.noted = False  # the next write sends one again
        log.warning("could not note a write of %s for the scheduler: %s", self.workspace_id, exc)

    def forget(self) -> None:
        """After the file was replaced by a snapshot (restore, or activation from one): the
        recorded due state no longer describes it. Fire-and-forget."""
        if self.directory is None:
            return
        try:
            self.directory.maintenance.remote("forget_due", self.workspace_id)
        except Exception:
            log.warning("could not reset the due state of %s", self.workspace_id, exc_info=True)

    def before_pass(self) -> None:
        """Call right before queueing a staleness pass: the next write notes again."""
        self.noted = False
