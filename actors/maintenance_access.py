"""What the scheduled-tasks actor may touch, and nothing more.

- `StalenessGate`: the scheduler's only way into a workspace. It can call `runStalenessPass`
  with a validated `limit` on a workspace id, and nothing else: the method name is fixed, the
  directory handle lives in a closure (no attribute to reach for), and `__slots__` forbids
  adding any. A dead or hibernating actor is re-activated and the call repeated (up to
  `PASS_ATTEMPTS` in all; a pass is idempotent).
- `DirectoryLedger`: the maintenance rows of the control plane (schedules, due state, audit),
  through the directory's one `maintenance(op, ...)` method, which only accepts the operations
  in `LEDGER_OPS`.
"""
from __future__ import annotations

import time

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from minisphere.auth import check_workspace_id
from minisphere.errors import MiniSphereError
from minisphere.maintenance_store import LEDGER_OPS
from minisphere.service_errors import WorkspaceUnavailable
from minisphere.snapshot_errors import WorkspaceHibernating
from minisphere.surface import METHODS
from minisphere.workspace import parse_args

PASS_METHOD = "runStalenessPass"
PASS_TIMEOUT_S = 300.0          # one pass call (limit <= 100k entries)
DIRECTORY_TIMEOUT_S = 30.0
PASS_ATTEMPTS = 3               # a pass is idempotent: safe to send again after a failure
RETRY_PAUSE_S = 0.2             # grows with the attempt number


def _unwrap(exc: BaseException) -> BaseException:
    cause = getattr(exc, "cause", None) if isinstance(exc, RayTaskError) else None
    return cause if isinstance(cause, BaseException) else exc


def _get(ref, timeout_s: float):
    try:
        return ray.get(ref, timeout=timeout_s)
    except RayTaskError as exc:
        raise _unwrap(exc) from None
    except GetTimeoutError:
        raise WorkspaceUnavailable(f"no answer within {timeout_s:.0f} s") from None


class StalenessGate:
    """`run_staleness_pass(workspace_id, limit)` and nothing else."""

    __slots__ = ("run_staleness_pass",)

    def __init__(self, directory):
        def run_staleness_pass(workspace_id: str, limit: int) -> dict:
            check_workspace_id(workspace_id)
            parse_args(METHODS[PASS_METHOD], {"limit": limit})     # InvalidArgument if bad
            body = {"limit": limit}
            for attempt in range(1, PASS_ATTEMPTS + 1):
                last = attempt == PASS_ATTEMPTS
                handle = _get(directory.activate.remote(workspace_id, attempt > 1),
                              DIRECTORY_TIMEOUT_S)
                try:
                    envelope = _get(handle.call.remote(PASS_METHOD, body), PASS_TIMEOUT_S)
                except RayActorError:          # died (or hibernated) under the call
                    if not last:
                        time.sleep(RETRY_PAUSE_S * attempt)
                        continue
                    raise WorkspaceUnavailable(
                        f"workspace {workspace_id} failed {attempt} times during "
                        f"{PASS_METHOD}") from None
                if envelope["ok"]:
                    return envelope["result"]
                error = envelope["error"]
                if isinstance(error, WorkspaceHibernating) and not last:
                    time.sleep(RETRY_PAUSE_S * attempt)
                    continue                   # it is hibernating: activate it again
                raise error if isinstance(error, MiniSphereError) else WorkspaceUnavailable(
                    str(error))
            raise WorkspaceUnavailable(f"workspace {workspace_id} is unavailable")  # unreachable
        self.run_staleness_pass = run_staleness_pass


class DirectoryLedger:
    """The ledger interface of `minisphere.maintenance` over the directory actor."""

    __slots__ = ("_call",)

    def __init__(self, directory):
        def call(op: str, *args):
            if op not in LEDGER_OPS:
                raise ValueError(f"not a maintenance ledger operation: {op}")
            return _get(directory.maintenance.remote(op, *args), DIRECTORY_TIMEOUT_S)
        self._call = call

    def schedules(self) -> list[dict]:
        return self._call("schedules")

    def due_state(self, workspace_id: str) -> dict | None:
        return self._call("due_state", workspace_id)

    def record_pass(self, workspace_id, next_due_at, remaining, checked_at) -> None:
        self._call("record_pass", workspace_id, next_due_at, remaining, checked_at)

    def record_run(self, run: dict) -> None:
        self._call("record_run", run)

    def last_cron_start(self, workspace_id: str) -> int | None:
        return self._call("last_cron_start", workspace_id)
