"""Keeping the scheduler's skip rule correct across writes (see `minisphere.maintenance.runs`).

Before the first due-changing write (capture / append / update) after each staleness pass —
and after each actor start — the workspace actor tells the control plane "a write is queued at
t"; the control plane then treats the workspace as due no later than t + the shortest
volatility threshold. One directory call per pass cycle, not per write.

Why it is exact enough: the note is sent *before* the write is queued, under a lock that the
pass also takes before it is queued, so
- a pass queued after the write sees it (the writer is FIFO), and
- a pass queued before it was requested before t, so recording its answer keeps the note
  (`maintenance.ledger.record_pass` only forgets notes older than the pass's request).
A crash between note and write leaves a harmless extra note. If the note cannot be sent the
write still proceeds (the flag stays unset, so the next write tries again); the worst case is a
skipped cron run, which only delays *persisting* marks: reads judge staleness lazily anyway.
Every write, on a vector-bound workspace too, goes through the one FIFO writer, and a write is
embedded *before* its note is sent, so nothing slow sits between the note and the queueing.
"""
from __future__ import annotations

import asyncio
import logging

from minisphere.engine.clock import epoch_ms
from minisphere.maintenance.runs import DUE_CHANGING_WRITES

log = logging.getLogger("minisphere.due_notes")
NOTE_TIMEOUT_S = 5.0


class DueNotes:
    """`directory`: the directory actor's handle (None: no control plane to tell; no-op)."""

    def __init__(self, workspace_id: str, directory):
        self.workspace_id = workspace_id
        self.directory = directory
        self.noted = False
        self._lock = asyncio.Lock()

    async def before_write(self, method_name: str) -> None:
        """Await before queueing a write; queue it right after (no await in between)."""
        if self.noted or self.directory is None or method_name not in DUE_CHANGING_WRITES:
            return
        async with self._lock:
            if self.noted:
                return
            at = epoch_ms()
            try:
                await asyncio.wait_for(
                    self.directory.maintenance.remote("note_write", self.workspace_id, at),
                    NOTE_TIMEOUT_S)
                self.noted = True
            except Exception as exc:  # noqa: BLE001 - the write must not fail for this
                log.warning("could not note a write of %s for the scheduler: %s",
                            self.workspace_id, exc)

    def forget(self) -> None:
        """After the file was replaced by a snapshot (restore, or activation from one): the
        recorded due state no longer describes it. Fire-and-forget."""
        if self.directory is None:
            return
        try:
            self.directory.maintenance.remote("forget_due", self.workspace_id)
        except Exception:  # noqa: BLE001
            log.warning("could not reset the due state of %s", self.workspace_id, exc_info=True)

    async def before_pass(self) -> None:
        """Await before queueing a staleness pass; queue it right after."""
        async with self._lock:
            self.noted = False
