"""APScheduler wiring of the maintenance runs (plain Python; the Ray actor is a thin shell).

One job per workspace with a `scheduledTasks {cron, limit}` binding: job id = workspace id,
`cron_trigger(cron)` (cron's meaning, in UTC; `minisphere/cron.py`), added with
`replace_existing=True`. Jobs live in
memory and are rebuilt from the directory on every start, so a restart can never hold a job
twice. Job defaults: `coalesce=True` (N missed ticks run once), `misfire_grace_time=
MISFIRE_GRACE_S` (APScheduler's default of 1 s would silently drop a late run),
`max_instances=1` (two runs for one workspace never overlap). A tick missed beyond the grace is
audited as `skipped` (reason "missed ...") instead of vanishing.

One record can never stop the scheduler: a schedule that cannot be used (a cron APScheduler's
parser refuses, a malformed binding kept by an older build) gets no job and an audited run with
outcome `error` naming the reason, and every other workspace is scheduled as usual.

Catch-up on start: if the workspace's latest cron time lies within the grace window and no cron
run was audited since, the job's first run is that time (it runs at once), so an actor restart
at 03:18 does not lose the 03:17 run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TypedDict

from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from minisphere.cron import cron_trigger
from minisphere.engine.clock import epoch_ms
from minisphere.maintenance import runs as M
from minisphere.wire.records import MaintenanceRun

log = logging.getLogger("minisphere.scheduler")
REFRESH_JOB_ID = "__refresh__"
JOB_DEFAULTS = {
    "coalesce": M.COALESCE_MISSED_RUNS,
    "misfire_grace_time": M.MISFIRE_GRACE_S,
    "max_instances": M.MAX_INSTANCES_PER_WORKSPACE,
}


class SyncSummary(TypedDict):
    """What a `sync` did: the jobs now scheduled, the workspaces added and removed, those whose
    schedule cannot be used."""

    jobs: int
    added: list[str]
    removed: list[str]
    unusable: list[str]


class JobInfo(TypedDict):
    id: str
    name: str
    nextRunTime: str | None  # ISO 8601; None: paused


def new_scheduler() -> BackgroundScheduler:
    return BackgroundScheduler(
        timezone=UTC,
        job_defaults=dict(JOB_DEFAULTS),
        executors={"default": ThreadPoolExecutor(M.MAX_CONCURRENT_RUNS)},
    )


def trigger_for(spec: M.JobSpec) -> CronTrigger:
    return cron_trigger(spec.cron)


def latest_fire_within_grace(spec: M.JobSpec, now: datetime) -> datetime | None:
    """The cron time in (now - grace, now], if there is one."""
    candidate = trigger_for(spec).get_next_fire_time(
        None, now - timedelta(seconds=M.MISFIRE_GRACE_S)
    )
    latest = None
    while candidate is not None and candidate <= now:
        latest = candidate
        candidate = trigger_for(spec).get_next_fire_time(
            candidate, candidate + timedelta(microseconds=1)
        )
    return latest


class MaintenanceScheduler:
    """Runs `maintenance.run_workspace` for every scheduled workspace.

    gate:   the narrow workspace interface (only `run_staleness_pass(workspace_id, limit)`)
    ledger: schedules(), due_state(), record_pass(), record_run(), last_cron_start()
    """

    def __init__(
        self,
        gate: M.StalenessGate,
        ledger: M.Ledger,
        *,
        scheduler: BackgroundScheduler | None = None,
        clock: Callable[[], int] = epoch_ms,
    ) -> None:
        self._gate = gate
        self.ledger = ledger
        self.clock = clock
        self.scheduler = scheduler or new_scheduler()
        self.specs: dict[str, M.JobSpec] = {}
        self.unusable: dict[str, str] = {}  # workspace id -> why its schedule is not used
        self.scheduler.add_listener(self._on_missed, EVENT_JOB_MISSED)

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(
        self,
        *,
        paused: bool = False,
        refresh_every_s: float = M.JOB_REFRESH_INTERVAL_S,
        catch_up: bool = True,
    ) -> SyncSummary:
        if not self.scheduler.running:
            self.scheduler.start(paused=paused)
        summary = self.sync(catch_up=catch_up)
        self.scheduler.add_job(
            self.sync,
            IntervalTrigger(seconds=refresh_every_s),
            id=REFRESH_JOB_ID,
            replace_existing=True,
            name="re-read schedules from the directory",
        )
        return summary

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    # ---- jobs ----------------------------------------------------------------------------------
    def sync(self, catch_up: bool = False) -> SyncSummary:
        """Make the jobs match the directory: add new or changed ones (replace_existing), remove
        those of deleted workspaces, leave unchanged ones alone (their next run time stays).

        A record whose schedule cannot be used (a cron APScheduler refuses, a malformed
        binding, a job the scheduler will not take) gets no job and one audited run with
        outcome `error` saying why; the other workspaces are scheduled as usual. It is audited
        again only when the reason changes, not on every refresh."""
        wanted, problems = M.checked_job_specs(self.ledger.schedules())
        for workspace_id, spec in list(wanted.items()):
            try:
                trigger_for(spec)
            except ValueError as exc:
                problems[workspace_id] = f"cron {spec.cron!r} is not valid: {exc}"
                del wanted[workspace_id]
        existing = {job.id for job in self.scheduler.get_jobs() if job.id != REFRESH_JOB_ID}
        added: list[str] = []
        removed: list[str] = []
        for workspace_id in existing - set(wanted):
            self.scheduler.remove_job(workspace_id)
            self.specs.pop(workspace_id, None)
            removed.append(workspace_id)
        for workspace_id, spec in wanted.items():
            if workspace_id in existing and self.specs.get(workspace_id) == spec:
                continue
            try:
                self._add_job(spec, catch_up)
            except Exception as exc:  # noqa: BLE001 - one job never stops the others
                problems[workspace_id] = f"the job could not be scheduled: {M.describe_error(exc)}"
                if self.scheduler.get_job(workspace_id) is not None:
                    self.scheduler.remove_job(workspace_id)
                self.specs.pop(workspace_id, None)
                continue
            added.append(workspace_id)
        self._audit_problems(problems)
        jobs = len(wanted) - sum(1 for w in problems if w in wanted)
        if added or removed:
            log.info("maintenance jobs: %d (added %d, removed %d)", jobs, len(added), len(removed))
        return {
            "jobs": jobs,
            "added": sorted(added),
            "removed": sorted(removed),
            "unusable": sorted(problems),
        }

    def _add_job(self, spec: M.JobSpec, catch_up: bool) -> None:
        options: dict[str, datetime] = {}
        if catch_up:
            first = self._catch_up_time(spec)
            if first is not None:
                options["next_run_time"] = first
        self.scheduler.add_job(
            self.run_scheduled,
            trigger_for(spec),
            args=[spec.workspace_id, spec.limit],
            id=spec.workspace_id,
            name=f"staleness {spec.workspace_id} [{spec.cron}]",
            replace_existing=True,
            **options,
        )
        self.specs[spec.workspace_id] = spec

    def _audit_problems(self, problems: dict[str, str]) -> None:
        for workspace_id, reason in problems.items():
            if self.unusable.get(workspace_id) == reason:
                continue
            log.error("maintenance schedule of %s not used: %s", workspace_id, reason)
            M.audit_unusable_schedule(self.ledger, workspace_id, reason, self.clock())
            self.unusable[workspace_id] = reason
        for workspace_id in set(self.unusable) - set(problems):
            del self.unusable[workspace_id]  # fixed (or deleted): audit it anew later

    def _catch_up_time(self, spec: M.JobSpec) -> datetime | None:
        now = datetime.fromtimestamp(self.clock() / 1000, UTC)
        latest = latest_fire_within_grace(spec, now)
        if latest is None:
            return None
        last_start = self.ledger.last_cron_start(spec.workspace_id)
        if last_start is not None and last_start >= latest.timestamp() * 1000:
            return None
        return latest

    def jobs(self) -> list[JobInfo]:
        return [
            {
                "id": job.id,
                "name": job.name,
                "nextRunTime": job.next_run_time.isoformat() if job.next_run_time else None,
            }
            for job in self.scheduler.get_jobs()
            if job.id != REFRESH_JOB_ID
        ]

    # ---- runs ------------------------------------------------------------------------------------
    def run_scheduled(self, workspace_id: str, limit: int) -> MaintenanceRun:
        return M.run_workspace(
            self._gate, self.ledger, workspace_id, limit, "cron", clock=self.clock
        )

    def _on_missed(self, event: JobExecutionEvent) -> None:
        if event.job_id == REFRESH_JOB_ID:
            return
        late_s = (datetime.now(UTC) - event.scheduled_run_time).total_seconds()
        record = M.RunRecord.begin(
            event.job_id, "cron", int(event.scheduled_run_time.timestamp() * 1000)
        )
        row = record.finish(
            "skipped",
            self.clock(),
            f"missed: started {late_s:.0f} s late (grace {M.MISFIRE_GRACE_S} s)",
        )
        M.audit_run(self.ledger, row)
