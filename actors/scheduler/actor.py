"""ScheduledTasksActor: APScheduler inside one named, detached Ray actor.

Each workspace whose blueprint binds `scheduledTasks {cron, limit}` gets one job that fires
`runStalenessPass({limit})` through `StalenessPassAccess` (the only workspace method it can
reach), skipping workspaces with nothing due and auditing every run in the control plane. The
job logic is `minisphere.maintenance.scheduler` (plain Python); this is the Ray shell.

A singleton by name (`get_if_exists`), so the service starting it at every launch, or two
replicas starting it at once, never makes a second scheduler; jobs are rebuilt from the
directory in `__init__`, so a restart (Ray restarts it after a crash) never duplicates one.
"""

from __future__ import annotations

import logging
import warnings

import ray

from actors.directory.actor import get_directory, singleton_options
from actors.handles import Handle
from actors.process_logging import log_to_stderr
from actors.scheduler.access import DirectoryLedger, StalenessPassAccess
from minisphere.control.auth import token_hash
from minisphere.maintenance.scheduler import JobInfo, MaintenanceScheduler, SyncSummary
from minisphere.settings import Settings, restrict_file_modes
from minisphere.wire.records import MaintenanceRun

log = logging.getLogger("minisphere.scheduled_tasks")
SCHEDULER_NAME = "scheduled-tasks"


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class ScheduledTasksActor:
    def __init__(self, settings: Settings):
        restrict_file_modes()  # each actor: a `ray start` cluster has its own umask
        log_to_stderr()
        directory = get_directory(settings)
        self.core = MaintenanceScheduler(
            StalenessPassAccess(directory, token_hash(settings.admin_token)),
            DirectoryLedger(directory),
        )
        self.started = self.core.start()
        with warnings.catch_warnings():  # Ray's own property warns about its internals
            warnings.simplefilter("ignore", DeprecationWarning)
            self.restarted = ray.get_runtime_context().was_current_actor_reconstructed
        log.info("scheduled tasks up: %d jobs (restarted=%s)", self.started["jobs"], self.restarted)

    def refresh(self) -> SyncSummary:
        """Re-read the schedules now (also done every JOB_REFRESH_INTERVAL_S)."""
        return self.core.sync()

    def jobs(self) -> list[JobInfo]:
        return self.core.jobs()

    def run_scheduled(self, workspace_id: str) -> MaintenanceRun:
        """Run one workspace's job now, exactly as its cron tick would (skip rule included)."""
        spec = self.core.specs.get(workspace_id)
        if spec is None:
            self.core.sync()
            spec = self.core.specs.get(workspace_id)
        if spec is None:
            raise ValueError(f"workspace {workspace_id} has no scheduled staleness job")
        return self.core.run_scheduled(workspace_id, spec.limit)

    def status(self) -> dict[str, int | bool]:
        return {
            "jobs": len(self.core.jobs()),
            "restarted": self.restarted,
            "running": self.core.scheduler.running,
        }


def get_scheduled_tasks(settings: Settings) -> Handle:
    """The scheduler singleton: created on first use, found by name afterwards."""
    # mypy keeps a decorated class's own type: Ray's ActorClass (and its .options) is unseen
    scheduler: Handle = ScheduledTasksActor.options(  # type: ignore[attr-defined]
        **singleton_options(SCHEDULER_NAME, settings)
    ).remote(settings)
    return scheduler
