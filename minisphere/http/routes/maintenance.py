"""`GET /v1/maintenance/runs` (admin): the audit of staleness runs. The manual run itself is
the workspace method `runStalenessPass` (`workspace_rpc`)."""

from __future__ import annotations

from typing import Optional

from minisphere.control.auth import check_workspace_id
from minisphere.http import service_responses as S
from minisphere.http.callers import AdminGateway
from minisphere.http.gateway_protocol import MaintenanceRuns
from minisphere.http.handling import query_integer
from minisphere.http.route_docs import answers
from minisphere.http.routes import Routes
from minisphere.maintenance.runs import RUNS_DEFAULT_LIMIT, RUNS_MAX_LIMIT

MAINTENANCE_TAG = "maintenance (admin token)"

routes = Routes(tags=[MAINTENANCE_TAG])


@routes.get("/v1/maintenance/runs", responses=answers(S.MaintenanceRuns))
async def maintenance_runs(
    gateway: AdminGateway, workspace: Optional[str] = None, limit: str = str(RUNS_DEFAULT_LIMIT)
) -> dict[str, MaintenanceRuns]:
    """Staleness runs (cron and manual), newest first; `?workspace=` filters."""
    if workspace is not None:
        check_workspace_id(workspace)
    count = query_integer(limit, "limit", 1, RUNS_MAX_LIMIT)
    return {"items": await gateway.maintenance_runs(workspace, count)}
