"""The type checker's half of the protocol checks: each implementation assigned to its protocol
(mypy reports a missing method or an incompatible signature here). Never called; the run-time
half is `tests/support/protocols.py`."""

from __future__ import annotations

from actors.directory.runtime import RayActors
from actors.ingress.durability_admin import DurabilityAdmin
from actors.ingress.gateway import Gateway
from minisphere.directory.actor_runtime import ActorRuntime
from minisphere.http.gateway_protocol import DurabilityOperations, WorkspaceGateway
from tests.support.engine_gateway import EngineDurability, EngineGateway
from tests.support.in_process_actors import InProcessActors


def gateways(service: Gateway, in_process: EngineGateway) -> list[WorkspaceGateway]:
    return [service, in_process]


def durability_admins(
    service: DurabilityAdmin, in_process: EngineDurability
) -> list[DurabilityOperations]:
    return [service, in_process]


def runtimes(ray_actors: RayActors, in_process: InProcessActors) -> list[ActorRuntime]:
    return [ray_actors, in_process]
