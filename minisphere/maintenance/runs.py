"""Maintenance runs: the plain-Python core behind the scheduled-tasks actor (no Ray import).

A *run* is what one cron tick (or one admin call) does for one workspace:

1. **Skip rule** (cron only). The control plane keeps, per workspace, what the last pass said
   (`maintenance_due`: nextDueAt, remaining, when it was requested) and the earliest
   due-changing write the pass may not have seen (`dirty_since`). A write at time t can make an
   entry due no earlier than t + the shortest volatility threshold (`MIN_STALE_AFTER_MS`), so
   the earliest moment anything can need marking is

       due = min(nextDueAt, dirty_since + MIN_STALE_AFTER_MS)      (missing terms ignored)

   A cron run is skipped, without contacting the workspace actor, when the last pass left
   `remaining == 0` and `due` is in the future (or there is nothing that can turn stale).
   A workspace never passed has no record: it is always run. A skip is audited.
   `dirty_since` comes from the workspace actor (`actors/workspace/due_notes.py`): before the first
   capture/append/update after each pass (and after each actor start) it notes "a write is
   queued at t" -- one directory call per pass cycle, not per write. Why a write cannot make
   anything due sooner than that bound: a new or confirmed entry's due date is its write time
   plus its class's threshold, and confirmations only move due dates later.
2. Otherwise `runStalenessPass({limit})` is called through the narrow gate until `remaining`
   is 0 or `MAX_PASS_CALLS_PER_RUN` calls were made (each call is its own short transaction,
   so writers are never held up for long); each result is recorded as the new due state.
3. Every run is audited: run id, workspace, trigger, started/finished, outcome
   (ok | error | skipped), summed counts, error message.

The gate and the ledger are protocols (`StalenessGate`, `Ledger`), so tests can pass plain
objects:
- gate.run_staleness_pass(workspace_id, limit) -> {scanned, marked, cleared, remaining, nextDueAt}
- ledger.due_state(workspace_id) -> dict | None, ledger.record_pass(workspace_id, next_due_at,
  remaining, checked_at), ledger.record_run(run: dict), ledger.schedules() -> [dict]
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Protocol, cast

from minisphere.engine.clock import epoch_ms, iso_utc
from minisphere.engine.constants import STALE_AFTER_MS
from minisphere.errors import InvalidArgument
from minisphere.wire.answers import StalenessPassAnswer
from minisphere.wire.records import (
    OUTCOMES,
    TRIGGERS,
    DueState,
    MaintenanceRun,
    Outcome,
    Trigger,
    WorkspaceRecord,
)

log = logging.getLogger("minisphere.maintenance")

# --- Named constants (units in the names) ---------------------------------------------------
# APScheduler's default misfire grace (1 s) silently drops a run that starts late (scheduler
# busy, actor restarting). Five minutes covers a restart or a queue of runs; later than that the
# run is audited as skipped (missed) and the next tick catches up (the pass is resumable).
MISFIRE_GRACE_S = 300
MAX_INSTANCES_PER_WORKSPACE = 1  # two runs for one workspace never overlap
COALESCE_MISSED_RUNS = True  # N missed ticks run once, not N times
MAX_PASS_CALLS_PER_RUN = 50  # limit x this = most entries one cron run handles
MAX_CONCURRENT_RUNS = 4  # scheduler threads (runs mostly wait on the actor)
JOB_REFRESH_INTERVAL_S = 60  # re-read schedules from the directory this often
MIN_STALE_AFTER_MS = min(STALE_AFTER_MS.values())  # shortest volatility threshold
CLOCK_SKEW_ALLOWANCE_MS = 5_000  # scheduler vs workspace node clocks
MAX_ERROR_CHARS = 500
RUNS_DEFAULT_LIMIT = 100
RUNS_MAX_LIMIT = 1000
UNUSABLE_SCHEDULE_PREFIX = "schedule not used (no cron runs until the blueprint is fixed): "
# Writes that can create or move a due date (a new entry, or a confirmation); setStatus, link,
# unlink and forget cannot make anything due earlier.
DUE_CHANGING_WRITES = frozenset({"capture", "append", "update"})


class StalenessGate(Protocol):
    """The narrow way into a workspace: one staleness pass, nothing else."""

    def run_staleness_pass(self, workspace_id: str, limit: int) -> StalenessPassAnswer: ...


class Ledger(Protocol):
    """The control plane's maintenance rows, in this process or across the directory."""

    def schedules(self) -> list[WorkspaceRecord]: ...

    def due_state(self, workspace_id: str) -> DueState | None: ...

    def record_pass(
        self, workspace_id: str, next_due_at: int | None, remaining: int, checked_at: int
    ) -> None: ...

    def record_run(self, run: MaintenanceRun) -> None: ...

    def last_cron_start(self, workspace_id: str) -> int | None: ...


# --- Skip rule ----------------------------------------------------------------------------------
def effective_due_at(state: DueState | None) -> int | None:
    """Earliest time anything in the workspace can need marking, per the recorded state."""
    if state is None:
        return None
    due = state.get("nextDueAt")
    dirty = state.get("dirtySince")
    if dirty is not None:
        bound = dirty + MIN_STALE_AFTER_MS
        due = bound if due is None else min(due, bound)
    return due


def skip_reason(state: DueState | None, now: int) -> str | None:
    """Why a cron run can be skipped without waking the workspace, or None to run it."""
    if state is None:
        return None  # never passed: unknown, so run
    if state.get("remaining", 1) > 0:
        return None  # the last pass left work behind
    due = effective_due_at(state)
    if due is None:
        return "not due: nothing can turn stale"
    if due > now:
        return f"not due until {iso_utc(due)}"
    return None


# --- Run records ----------------------------------------------------------------------------------
@dataclass
class RunRecord:
    """A run under way; `finish` gives its `MaintenanceRun` row."""

    runId: str
    workspaceId: str
    trigger: Trigger
    startedAt: int
    finishedAt: int | None = None
    outcome: Outcome | None = None
    calls: int = 0
    scanned: int = 0
    marked: int = 0
    cleared: int = 0
    remaining: int | None = None
    nextDueAt: int | None = None
    error: str | None = None

    @classmethod
    def begin(cls, workspace_id: str, trigger: str, started_at: int) -> RunRecord:
        if trigger not in TRIGGERS:
            raise ValueError(f"trigger must be one of {TRIGGERS}")
        return cls(
            runId=str(uuid.uuid4()), workspaceId=workspace_id, trigger=trigger, startedAt=started_at
        )

    def add(self, result: StalenessPassAnswer) -> None:
        self.calls += 1
        self.scanned += result["scanned"]
        self.marked += result["marked"]
        self.cleared += result["cleared"]
        self.remaining = result["remaining"]
        self.nextDueAt = result.get("nextDueAt")

    def finish(self, outcome: str, finished_at: int, error: str | None = None) -> MaintenanceRun:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}")
        self.outcome, self.finishedAt = outcome, finished_at
        self.error = error[:MAX_ERROR_CHARS] if error else None
        return cast("MaintenanceRun", asdict(self))


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    code = getattr(exc, "code", None)
    return f"{code or exc.__class__.__name__}: {text}"[:MAX_ERROR_CHARS]


def run_workspace(
    gate: StalenessGate,
    ledger: Ledger,
    workspace_id: str,
    limit: int,
    trigger: str = "cron",
    *,
    clock: Callable[[], int] = epoch_ms,
    max_calls: int = MAX_PASS_CALLS_PER_RUN,
) -> MaintenanceRun:
    """One audited run for one workspace (see the module docstring). Never raises for a
    failing workspace: the failure is the run's outcome. Returns the audit row."""
    record = RunRecord.begin(workspace_id, trigger, clock())
    try:
        if trigger == "cron":
            state = ledger.due_state(workspace_id)
            reason = skip_reason(state, record.startedAt)
            if reason is not None:
                record.remaining = state.get("remaining") if state else None
                record.nextDueAt = effective_due_at(state)
                return audit_run(ledger, record.finish("skipped", clock(), reason))
        while record.calls < max_calls:
            requested_at = clock()
            result = gate.run_staleness_pass(workspace_id, limit)
            record.add(result)
            ledger.record_pass(
                workspace_id, result.get("nextDueAt"), result["remaining"], requested_at
            )
            if result["remaining"] == 0:
                break
    except Exception as exc:  # noqa: BLE001 - audited as the run's outcome
        log.warning("staleness run for %s failed: %s", workspace_id, describe_error(exc))
        return audit_run(ledger, record.finish("error", clock(), describe_error(exc)))
    return audit_run(ledger, record.finish("ok", clock()))


def audit_run(ledger: Ledger, row: MaintenanceRun) -> MaintenanceRun:
    """Write one run row (a failure to write is logged, never raised) and log the run."""
    try:
        ledger.record_run(row)
    except Exception as exc:  # noqa: BLE001 - the run happened; losing its row is logged
        log.error("could not audit run %s of %s: %s", row["runId"], row["workspaceId"], exc)
    log.info(
        "staleness run %s %s: %s (calls=%d marked=%d cleared=%d remaining=%s)%s",
        row["trigger"],
        row["workspaceId"],
        row["outcome"],
        row["calls"],
        row["marked"],
        row["cleared"],
        row["remaining"],
        f" - {row['error']}" if row["error"] else "",
    )
    return row


# --- Job specs from blueprints ----------------------------------------------------------------------
@dataclass(frozen=True)
class JobSpec:
    workspace_id: str
    cron: str
    limit: int


def job_spec(record: WorkspaceRecord) -> JobSpec | None:
    """The job a directory record asks for: its blueprint's `scheduledTasks` binding, or None
    (no binding, or the workspace is being deleted). A binding that cannot be a job (no cron
    text, a limit that is not a positive integer) raises InvalidArgument; whether the cron
    itself parses is the scheduler's question (`scheduler.trigger_for`)."""
    workspace_id: str = record["id"]
    if record.get("state") == "deleting":
        return None
    blueprint = record.get("blueprint") or {}
    bindings = (blueprint.get("bindings") or {}) if isinstance(blueprint, dict) else None
    if not isinstance(bindings, dict):
        raise InvalidArgument(f"workspace {workspace_id}: its blueprint is not an object")
    tasks = bindings.get("scheduledTasks")
    if not tasks:
        return None
    if not isinstance(tasks, dict):
        raise InvalidArgument(f"workspace {workspace_id}: scheduledTasks is not an object")
    cron, limit = tasks.get("cron"), tasks.get("limit")
    if not isinstance(cron, str) or not cron.split():
        raise InvalidArgument(
            f"workspace {workspace_id}: scheduledTasks.cron {cron!r} is not a cron expression"
        )
    if type(limit) is not int or limit < 1:
        raise InvalidArgument(
            f"workspace {workspace_id}: scheduledTasks.limit {limit!r} is not a positive integer"
        )
    return JobSpec(workspace_id, " ".join(cron.split()), limit)


def checked_job_specs(records: list[WorkspaceRecord]) -> tuple[dict[str, JobSpec], dict[str, str]]:
    """(the jobs the records ask for, {workspace id: why its schedule cannot be used}). One
    unusable record never hides the others."""
    specs: dict[str, JobSpec] = {}
    problems: dict[str, str] = {}
    for record in records:
        try:
            spec = job_spec(record)
        except InvalidArgument as exc:
            problems[str(record.get("id"))] = exc.message
            continue
        if spec is not None:
            specs[spec.workspace_id] = spec
    return specs, problems


def audit_unusable_schedule(
    ledger: Ledger, workspace_id: str, reason: str, now: int
) -> MaintenanceRun:
    """Audit a schedule the scheduler refused (outcome `error`, no call made): the workspace
    gets no cron runs until its blueprint is fixed, and the audit says so."""
    record = RunRecord.begin(workspace_id, "cron", now)
    return audit_run(ledger, record.finish("error", now, f"{UNUSABLE_SCHEDULE_PREFIX}{reason}"))
