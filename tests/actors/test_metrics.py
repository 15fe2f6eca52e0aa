"""The ingress metrics: per-method counters and latency histograms, the resident-workspace and
snapshot-age gauges (polled from the directory; skipped gracefully when it cannot say)."""
from __future__ import annotations

import asyncio
import time

from actors.ingress.metrics import ServiceMetrics

SNAPSHOT_AGE_S = 42.0
REPLICA_BEHIND_S = 7.5


class Directory:
    def __init__(self, durability=True):
        self.durability = durability

    async def ask_directory(self, method, *args):
        if method == "resident":
            return ["a", "b", "c"]
        if not self.durability:
            raise AttributeError("durability_of")
        if args[0] == "c":      # fully snapshotted, replica current: nothing at risk
            return {"snapshots": {"pendingWrites": 0, "lastSnapshotAt": time.time() - 999},
                    "replication": {"mode": "async", "lagSeconds": 0.0}}
        return {"snapshots": {"pendingWrites": 2, "lastSnapshotAt": time.time() - SNAPSHOT_AGE_S},
                "replication": {"mode": "async", "pendingTransactions": 3,
                                "lagSeconds": REPLICA_BEHIND_S if args[0] == "b" else 1.0}}


class Recorder:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


def test_infra_metrics_observe_and_poll_including_the_worst_replication_lag():
    metrics = ServiceMetrics(Directory())
    for name in ("requests", "latency", "resident", "snapshot_age", "replication_lag"):
        setattr(metrics, name, Recorder())
    metrics.observe({"method": "recall", "status": 200, "latencyMs": 3.5})
    assert metrics.requests.calls == [("inc", (1,), {"tags": {"method": "recall",
                                                              "status": "200"}})]
    assert metrics.latency.calls == [("observe", (3.5,), {"tags": {"method": "recall"}})]
    polled = asyncio.run(metrics.poll_once())
    assert polled["resident"] == 3 and abs(polled["snapshotAgeS"] - SNAPSHOT_AGE_S) < 5
    assert metrics.resident.calls == [("set", (3,), {})]
    assert metrics.replication_lag.calls == [("set", (REPLICA_BEHIND_S,), {})]   # the worst


def test_infra_metrics_without_snapshot_status_skip_the_age():
    metrics = ServiceMetrics(Directory(durability=False))
    metrics.snapshot_age = Recorder()
    assert asyncio.run(metrics.poll_once()) == {"resident": 3}
    assert metrics.snapshot_age.calls == []
