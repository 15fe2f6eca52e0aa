"""Maintenance tables of the control plane (migration 0002): the run audit and the per-workspace
due state the skip rule reads (see `runs.py`). Functions over the control plane's
connection (autocommit; each function is one statement, so one atomic step)."""

from __future__ import annotations

import builtins
import threading
from typing import Protocol, cast

from minisphere.engine.db import Connection
from minisphere.errors import InvalidArgument
from minisphere.maintenance.runs import CLOCK_SKEW_ALLOWANCE_MS, RUNS_MAX_LIMIT
from minisphere.wire.records import DueState, MaintenanceRun, WorkspaceRecord

# What the directory's `maintenance(op, ...)` accepts (methods of LocalLedger); nothing else.
LEDGER_OPS = frozenset(
    {
        "schedules",
        "due_state",
        "record_pass",
        "note_write",
        "forget_due",
        "record_run",
        "last_cron_start",
        "runs",
    }
)
_RUN_COLUMNS = (
    "run_id",
    "workspace_id",
    "trigger",
    "started_at",
    "finished_at",
    "outcome",
    "calls",
    "scanned",
    "marked",
    "cleared",
    "remaining",
    "next_due_at",
    "error",
)
_RUN_KEYS = tuple(MaintenanceRun.__annotations__)  # in the order of _RUN_COLUMNS
_DUE_KEYS = tuple(DueState.__annotations__)  # in the order of due_state's columns


class ControlPlaneRows(Protocol):
    """What the ledger needs of the control plane (`minisphere.control.ControlPlane`, a layer
    it may not import): its connection and its workspace listing."""

    @property
    def conn(self) -> Connection: ...

    def list(self, limit: int = ..., after: str = ...) -> builtins.list[WorkspaceRecord]: ...


def record_run(conn: Connection, run: MaintenanceRun) -> None:
    conn.execute(
        f"INSERT INTO maintenance_runs({', '.join(_RUN_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(_RUN_COLUMNS))})",
        [run.get(key) for key in _RUN_KEYS],
    )


def list_runs(
    conn: Connection, workspace_id: str | None = None, limit: int = 100
) -> list[MaintenanceRun]:
    """Runs newest first, optionally of one workspace."""
    if not isinstance(limit, int) or not 1 <= limit <= RUNS_MAX_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {RUNS_MAX_LIMIT}")
    rows = conn.execute(
        f"SELECT {', '.join(_RUN_COLUMNS)} FROM maintenance_runs "
        "WHERE ? IS NULL OR workspace_id = ? ORDER BY seq DESC LIMIT ?",
        (workspace_id, workspace_id, limit),
    ).fetchall()
    return [cast("MaintenanceRun", dict(zip(_RUN_KEYS, row))) for row in rows]


def last_cron_start(conn: Connection, workspace_id: str) -> int | None:
    started: int | None = conn.execute(  # MAX over no rows is NULL
        "SELECT MAX(started_at) FROM maintenance_runs WHERE workspace_id = ? AND trigger = 'cron'",
        (workspace_id,),
    ).fetchone()[0]
    return started


def record_pass(
    conn: Connection, workspace_id: str, next_due_at: int | None, remaining: int, checked_at: int
) -> None:
    """A pass requested at `checked_at` answered (next_due_at, remaining). A write noted before
    the request (minus the clock-skew allowance) was seen by it and is forgotten; a later one is
    kept. An answer older than the recorded one changes nothing (concurrent passes)."""
    conn.execute(
        "INSERT INTO maintenance_due(workspace_id, next_due_at, remaining, checked_at) "
        "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = ?) "
        "ON CONFLICT(workspace_id) DO UPDATE SET next_due_at = excluded.next_due_at, "
        "remaining = excluded.remaining, checked_at = excluded.checked_at, "
        "dirty_since = CASE WHEN dirty_since >= excluded.checked_at - ? THEN dirty_since END "
        "WHERE excluded.checked_at >= maintenance_due.checked_at",
        (workspace_id, next_due_at, remaining, checked_at, workspace_id, CLOCK_SKEW_ALLOWANCE_MS),
    )


def note_write(conn: Connection, workspace_id: str, at: int) -> None:
    """A due-changing write is about to be queued at `at` (workspace actor's clock). Ignored when
    the workspace has no due state yet (then the scheduler always runs it anyway)."""
    conn.execute(
        "UPDATE maintenance_due SET dirty_since = MIN(COALESCE(dirty_since, ?), ?) "
        "WHERE workspace_id = ? AND ? >= checked_at - ?",
        (at, at, workspace_id, at, CLOCK_SKEW_ALLOWANCE_MS),
    )


def forget_due(conn: Connection, workspace_id: str) -> None:
    """The file changed under the recorded state (a snapshot restore): unknown again, so the
    next cron run is never skipped."""
    conn.execute("DELETE FROM maintenance_due WHERE workspace_id = ?", (workspace_id,))


def due_state(conn: Connection, workspace_id: str) -> DueState | None:
    row = conn.execute(
        "SELECT next_due_at, remaining, checked_at, dirty_since FROM "
        "maintenance_due WHERE workspace_id = ?",
        (workspace_id,),
    ).fetchone()
    if row is None:
        return None
    return cast("DueState", dict(zip(_DUE_KEYS, row)))


def all_workspaces(control_plane: ControlPlaneRows, page: int = 1000) -> list[WorkspaceRecord]:
    records: list[WorkspaceRecord] = []
    after = ""
    while True:
        batch = control_plane.list(page, after)
        records += batch
        if len(batch) < page:
            return records
        after = batch[-1]["id"]


class LocalLedger:
    """The ledger interface of `maintenance.run_workspace` over a `ControlPlane` in this process
    (the directory actor uses it; tests use it directly)."""

    def __init__(self, control_plane: ControlPlaneRows) -> None:
        self.control_plane = control_plane
        self._lock = threading.Lock()  # scheduler threads share the one connection

    @property
    def conn(self) -> Connection:
        return self.control_plane.conn

    def schedules(self) -> list[WorkspaceRecord]:
        with self._lock:
            return all_workspaces(self.control_plane)

    def due_state(self, workspace_id: str) -> DueState | None:
        with self._lock:
            return due_state(self.conn, workspace_id)

    def record_pass(
        self, workspace_id: str, next_due_at: int | None, remaining: int, checked_at: int
    ) -> None:
        with self._lock:
            record_pass(self.conn, workspace_id, next_due_at, remaining, checked_at)

    def note_write(self, workspace_id: str, at: int) -> None:
        with self._lock:
            note_write(self.conn, workspace_id, at)

    def forget_due(self, workspace_id: str) -> None:
        with self._lock:
            forget_due(self.conn, workspace_id)

    def record_run(self, run: MaintenanceRun) -> None:
        with self._lock:
            record_run(self.conn, run)

    def last_cron_start(self, workspace_id: str) -> int | None:
        with self._lock:
            return last_cron_start(self.conn, workspace_id)

    def runs(self, workspace_id: str | None = None, limit: int = 100) -> list[MaintenanceRun]:
        with self._lock:
            return list_runs(self.conn, workspace_id, limit)
