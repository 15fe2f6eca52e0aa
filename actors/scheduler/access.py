"""What the scheduled-tasks actor may touch, and nothing more.

- `StalenessPassAccess`: the scheduler's only way into a workspace. It can call
  `runStalenessPass` with a validated `limit` on a workspace id, and nothing else: the method
  name is fixed, the directory lives in a closure (no attribute to reach for), and
  `__slots__` forbids adding any. A dead or hibernating actor is re-activated and the pass sent
  again (`actors/workspace_reach.py`; up to `PASS_ATTEMPTS` in all: a pass is idempotent).
- `DirectoryLedger`: the maintenance rows of the control plane (schedules, due state, audit),
  through the directory's one `maintenance(op, ...)` method, which only accepts the operations
  in `LEDGER_OPS`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayTaskError

from actors.handles import Handle
from actors.workspace_call import WorkspaceCall
from actors.workspace_reach import WorkspaceReach, unwrap
from minisphere.control.auth import check_workspace_id
from minisphere.engine.methods import METHODS, parse_args
from minisphere.errors import WorkspaceUnavailable
from minisphere.maintenance.ledger import LEDGER_OPS
from minisphere.wire.actor_methods import ServedMethod
from minisphere.wire.answers import StalenessPassAnswer
from minisphere.wire.records import DueState, MaintenanceRun, WorkspaceRecord

PASS_METHOD = "runStalenessPass"
PASS_TIMEOUT_S = 300.0  # one pass call (limit <= 100k entries)
DIRECTORY_TIMEOUT_S = 30.0
PASS_ATTEMPTS = 3  # a pass is idempotent: safe to send again after a failure


class StalenessPassAccess:
    """`run_staleness_pass(workspace_id, limit)` and nothing else."""

    __slots__ = ("run_staleness_pass",)

    def __init__(self, directory: Handle, admin_token_hash: str = ""):
        reach = WorkspaceReach(directory)

        def run_staleness_pass(workspace_id: str, limit: int) -> StalenessPassAnswer:
            check_workspace_id(workspace_id)
            parse_args(METHODS[PASS_METHOD], {"limit": limit})  # InvalidArgument if bad
            # runs on an APScheduler thread: the resend loop gets an event loop of its own
            reply, _, _ = asyncio.run(
                reach.call(
                    workspace_id,
                    ServedMethod.CALL,
                    WorkspaceCall(PASS_METHOD, {"limit": limit}, admin_token_hash),
                    idempotent_attempts=PASS_ATTEMPTS,
                    max_attempts=PASS_ATTEMPTS,
                    timeout_s=PASS_TIMEOUT_S,
                    unknown_outcome=f"workspace {workspace_id} failed {PASS_ATTEMPTS} times during "
                    f"{PASS_METHOD}",
                )
            )
            answer: StalenessPassAnswer = reply.unwrap()
            return answer

        self.run_staleness_pass = run_staleness_pass


class DirectoryLedger:
    """The ledger interface of `minisphere.maintenance.runs` over the directory actor."""

    __slots__ = ("_call",)

    def __init__(self, directory: Handle):
        def call(op: str, *args: Any) -> Any:
            if op not in LEDGER_OPS:
                raise ValueError(f"not a maintenance ledger operation: {op}")
            try:
                return ray.get(directory.maintenance.remote(op, *args), timeout=DIRECTORY_TIMEOUT_S)
            except RayTaskError as exc:
                raise unwrap(exc) from None
            except GetTimeoutError:
                raise WorkspaceUnavailable(
                    f"no answer from the directory within {DIRECTORY_TIMEOUT_S:.0f} s"
                ) from None

        self._call = call

    def schedules(self) -> list[WorkspaceRecord]:
        records: list[WorkspaceRecord] = self._call("schedules")
        return records

    def due_state(self, workspace_id: str) -> DueState | None:
        due: DueState | None = self._call("due_state", workspace_id)
        return due

    def record_pass(
        self, workspace_id: str, next_due_at: int | None, remaining: int, checked_at: int
    ) -> None:
        self._call("record_pass", workspace_id, next_due_at, remaining, checked_at)

    def record_run(self, run: MaintenanceRun) -> None:
        self._call("record_run", run)

    def last_cron_start(self, workspace_id: str) -> int | None:
        started: int | None = self._call("last_cron_start", workspace_id)
        return started
