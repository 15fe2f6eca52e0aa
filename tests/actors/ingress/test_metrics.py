"""The ingress metrics: per-method counters and latency histograms, the resident-workspace,
snapshot-age and replication-lag gauges (a workspace whose status cannot be read is left out;
the poll against the real service: tests/e2e/test_metrics_poll.py)."""

from __future__ import annotations

import asyncio
import time

from actors.ingress.metrics import ServiceMetrics

SNAPSHOT_AGE_S = 42.0
REPLICA_BEHIND_S = 7.5


class Gateway:
    def __init__(self, durability=True):
        self.readable = durability

    async def ask_directory(self, method, *args):
        assert method == "resident"
        return ["a", "b", "c"]

    async def durability(self, workspace_id):
        if not self.readable or workspace_id == "a":
            raise RuntimeError(f"{workspace_id} hibernated meanwhile")
        if workspace_id == "c":  # fully snapshotted, replica current: nothing at risk
            return {
                "snapshots": {"pendingWrites": 0, "lastSnapshotAt": time.time() - 999},
                "replication": {"mode": "async", "lagSeconds": 0.0},
            }
        return {
            "snapshots": {"pendingWrites": 2, "lastSnapshotAt": time.time() - SNAPSHOT_AGE_S},
            "replication": {
                "mode": "async",
                "pendingTransactions": 3,
                "lagSeconds": REPLICA_BEHIND_S,
            },
        }


class Recorder:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


def test_infra_metrics_observe_and_poll_including_the_worst_replication_lag():
    metrics = ServiceMetrics(Gateway())
    for name in ("requests", "latency", "resident", "snapshot_age", "replication_lag"):
        setattr(metrics, name, Recorder())
    metrics.observe({"method": "recall", "status": 200, "latencyMs": 3.5})
    assert metrics.requests.calls == [
        ("inc", (1,), {"tags": {"method": "recall", "status": "200"}})
    ]
    assert metrics.latency.calls == [("observe", (3.5,), {"tags": {"method": "recall"}})]
    polled = asyncio.run(metrics.poll_once())
    assert polled["resident"] == 3 and abs(polled["snapshotAgeS"] - SNAPSHOT_AGE_S) < 5
    assert metrics.resident.calls == [("set", (3,), {})]
    assert metrics.replication_lag.calls == [("set", (REPLICA_BEHIND_S,), {})]  # the worst


def test_infra_metrics_with_no_status_readable_set_the_gauges_to_zero():
    metrics = ServiceMetrics(Gateway(durability=False))
    metrics.snapshot_age = Recorder()
    assert asyncio.run(metrics.poll_once()) == {
        "resident": 3,
        "snapshotAgeS": 0.0,
        "replicationLagS": 0.0,
    }
    assert metrics.snapshot_age.calls == [("set", (0.0,), {})]
