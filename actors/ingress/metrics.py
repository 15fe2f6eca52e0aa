"""Prometheus metrics of an ingress replica.

Metrics go through `ray.util.metrics`, so they are served by every node's Ray metrics agent
(the same Prometheus endpoint as Ray Serve's own `ray_serve_*` metrics; Ray prefixes names
with `ray_`):

| metric                                  | type      | tags                     |
|-----------------------------------------|-----------|--------------------------|
| ray_minisphere_requests_total           | counter   | method, status           |
| ray_minisphere_request_latency_ms       | histogram | method                   |
| ray_minisphere_resident_workspaces      | gauge     | (per replica; take max)  |
| ray_minisphere_snapshot_age_seconds     | gauge     | (per replica; take max)  |
| ray_minisphere_replication_lag_seconds  | gauge     | (per replica; take max)  |

The gauges are polled every `METRICS_POLL_S`: the residents from the directory, each one's
status from its actor (the gateway's `durability`). The snapshot age is the oldest
last-snapshot age among resident workspaces that hold writes not yet in a snapshot (0 when
everything is snapshotted). The
replication lag is the largest among them: how long the daemon has not shipped a workspace
whose transactions are not all on its replica (0 when every replica is current; async mode's
loss window, and in sync mode a replica that cannot be reached).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from minisphere.wire.actor_methods import DirectoryMethod

if TYPE_CHECKING:
    from actors.ingress.gateway import Gateway

log = logging.getLogger("minisphere.metrics")
METRICS_POLL_S = 15.0
SNAPSHOT_AGE_SAMPLE = 50  # resident workspaces asked per poll, at most
LATENCY_BOUNDARIES_MS: list[float] = [
    1,
    2,
    5,
    10,
    25,
    50,
    100,
    250,
    500,
    1000,
    2500,
    5000,
    10000,
    30000,
]


class ServiceMetrics:
    def __init__(self, gateway: Gateway | None = None) -> None:
        from ray.util import metrics

        self.gateway = gateway
        self.requests = metrics.Counter(
            "minisphere_requests_total",
            description="HTTP requests by method and status",
            tag_keys=("method", "status"),
        )
        self.latency = metrics.Histogram(
            "minisphere_request_latency_ms",
            description="ingress latency per method (ms)",
            boundaries=LATENCY_BOUNDARIES_MS,
            tag_keys=("method",),
        )
        self.resident = metrics.Gauge(
            "minisphere_resident_workspaces", description="workspace actors resident now"
        )
        self.snapshot_age = metrics.Gauge(
            "minisphere_snapshot_age_seconds",
            description="oldest snapshot age among resident workspaces with unsnapshotted writes",
        )
        self.replication_lag = metrics.Gauge(
            "minisphere_replication_lag_seconds",
            description="longest time a resident workspace's replica has been behind its file",
        )
        self._poller: asyncio.Task[None] | None = None

    def observe(self, record: dict[str, Any]) -> None:
        method = record["method"]
        self.requests.inc(1, tags={"method": method, "status": str(record["status"])})
        self.latency.observe(record["latencyMs"], tags={"method": method})
        if self._poller is None and self.gateway is not None:
            with contextlib.suppress(RuntimeError):
                self._poller = asyncio.get_running_loop().create_task(self._poll_forever())

    async def _poll_forever(self) -> None:
        while True:
            try:
                await self.poll_once()
            except Exception:  # metrics never break the service
                log.debug("metrics poll failed", exc_info=True)
            await asyncio.sleep(METRICS_POLL_S)

    async def poll_once(self) -> dict[str, float]:
        assert self.gateway is not None  # polled only with a gateway to ask
        resident: list[str] = await self.gateway.ask_directory(DirectoryMethod.RESIDENT)
        self.resident.set(len(resident))
        ages, lags = [], []
        for workspace_id in resident[:SNAPSHOT_AGE_SAMPLE]:
            try:
                info = await self.gateway.durability(workspace_id)
            except Exception as exc:  # noqa: BLE001 - hibernated or deleted meanwhile
                log.debug("no durability status of %s: %r", workspace_id, exc)
                continue
            status = info.get("snapshots") or {}
            if status.get("pendingWrites") and status.get("lastSnapshotAt"):
                ages.append(max(0.0, time.time() - float(status["lastSnapshotAt"])))
            lags.append(float((info.get("replication") or {}).get("lagSeconds") or 0.0))
        age, lag = max(ages, default=0.0), max(lags, default=0.0)
        self.snapshot_age.set(age)
        self.replication_lag.set(lag)
        return {"resident": len(resident), "snapshotAgeS": age, "replicationLagS": lag}
