"""The ingress's gauge poll against the running service: the snapshot-age and replication-lag
gauges are set from the resident workspaces' own status (its directory and actors are the real
ones; only the Prometheus gauges are recorders)."""

from __future__ import annotations

import asyncio

from actors.ingress.gateway import Gateway
from actors.ingress.metrics import ServiceMetrics
from tests.e2e.helpers import capture, snapshot


class Gauge:
    def __init__(self):
        self.values = []

    def set(self, value) -> None:
        self.values.append(value)


def test_the_metrics_poll_sets_the_snapshot_age_and_replication_lag_gauges(
    service, http, admin_headers, new_workspace
):
    ws, h = new_workspace()
    capture(http, ws, h, "in the snapshot")
    snapshot(http, ws, admin_headers)
    capture(http, ws, h, "written since the snapshot: its age counts")
    metrics = ServiceMetrics(Gateway(service["config"]))
    for name in ("resident", "snapshot_age", "replication_lag"):
        setattr(metrics, name, Gauge())
    polled = asyncio.run(metrics.poll_once())
    assert polled.get("snapshotAgeS", 0) > 0, polled
    assert metrics.snapshot_age.values == [polled["snapshotAgeS"]]
    assert metrics.replication_lag.values == [polled["replicationLagS"]]
