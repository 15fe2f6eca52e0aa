"""Helpers of the maintenance tests: a control plane with workspaces, an in-process gate over
real engine workspaces, and gates that fail or block."""

from __future__ import annotations

import threading

from minisphere.control.blueprints import parse_blueprint
from minisphere.control.plane import ControlPlane
from minisphere.engine.workspace import Workspace
from minisphere.maintenance.ledger import LocalLedger


def blueprint(cron="17 3 * * *", limit=1000, scheduled=True):
    tasks = {"cron": cron, "limit": limit} if scheduled else None
    return parse_blueprint(
        {"name": "t", "version": 1, "bindings": {"scheduledTasks": tasks, "vector": None}}
    )


def control_plane(tmp_path, workspaces=("ws-aaa",), **bp):
    store = ControlPlane(tmp_path / "control.db", synchronous="NORMAL")
    for workspace_id in workspaces:
        store.create(blueprint(**bp), [], workspace_id)
    return store, LocalLedger(store)


class EngineGate:
    """The narrow interface, in process: engine workspaces by id, calls counted."""

    def __init__(self, tmp_path, clock):
        self.tmp_path, self.clock = tmp_path, clock
        self.workspaces: dict[str, Workspace] = {}
        self.calls: list[tuple[str, int]] = []

    def workspace(self, workspace_id: str) -> Workspace:
        if workspace_id not in self.workspaces:
            self.workspaces[workspace_id] = Workspace(
                self.tmp_path / f"{workspace_id}.db", clock=self.clock, synchronous="NORMAL"
            )
        return self.workspaces[workspace_id]

    def run_staleness_pass(self, workspace_id: str, limit: int) -> dict:
        self.calls.append((workspace_id, limit))
        return self.workspace(workspace_id).run_staleness_pass(limit=limit)

    def close(self):
        for ws in self.workspaces.values():
            ws.close()


class FailingGate:
    def __init__(self, error: Exception):
        self.error, self.calls = error, 0

    def run_staleness_pass(self, workspace_id, limit):
        self.calls += 1
        raise self.error


class CountingGate:
    """Answers like an empty workspace; can block to hold a run open."""

    def __init__(self, block: threading.Event | None = None):
        self.block = block
        self.calls: list[str] = []
        self.running = 0
        self.most_running = 0
        self._lock = threading.Lock()
        self.done = threading.Event()

    def run_staleness_pass(self, workspace_id, limit):
        with self._lock:
            self.calls.append(workspace_id)
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            if self.block is not None:
                self.block.wait(10)
            return {"scanned": 0, "marked": 0, "cleared": 0, "remaining": 0, "nextDueAt": None}
        finally:
            with self._lock:
                self.running -= 1
            self.done.set()
