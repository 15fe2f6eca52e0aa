"""The directory's parts, wired to each other once: the directory actor builds them over Ray's
runtime, and tests build the very same wiring over a runtime that keeps its actors in-process."""

from __future__ import annotations

from dataclasses import dataclass

from minisphere.contract.startup import born_with, verified_contracts
from minisphere.control.blueprints import load_default_blueprint
from minisphere.control.plane import ControlPlane
from minisphere.control.residency_policy import (
    derived_resident_cap,
    derived_spare_actors,
    spare_budget,
)
from minisphere.directory.activation import WAKE_STARTS_AT_ONCE_PER_CPU, Activator, SpareStarter
from minisphere.directory.actor_runtime import ActorRuntime
from minisphere.directory.cleanups import OwedCleanups
from minisphere.directory.grants import TokenGrants
from minisphere.directory.hibernation import HIBERNATING_OVER_CAP_PER_CPU, Hibernation
from minisphere.directory.liveness import Liveness
from minisphere.directory.placement import NodePlacement
from minisphere.directory.residents import ResidentTable
from minisphere.directory.spares import STARTS_AT_ONCE_PER_CPU, Demand, SparePool
from minisphere.directory.workspaces import WorkspaceLifecycle
from minisphere.durability.stores import open_snapshot_store
from minisphere.settings import ResidencySettings, Settings, ensure_private_dir


@dataclass
class DirectoryParts:
    residents: ResidentTable
    placement: NodePlacement
    pool: SparePool
    hibernation: Hibernation
    workspaces: WorkspaceLifecycle
    activator: Activator
    grants: TokenGrants
    liveness: Liveness
    cleanups: OwedCleanups


def spare_pool(
    limits: ResidencySettings,
    starter: SpareStarter,
    runtime: ActorRuntime,
    cluster_cpus: float,
    cluster_memory_bytes: float,
) -> SparePool:
    """A pool of the size the settings fix, else one that follows demand: at least the derived
    size, at most what the spare budget allows (never below that floor)."""
    if limits.spare_actors is not None:
        return SparePool(limits.spare_actors, starter.start, runtime.kill)
    floor = derived_spare_actors(cluster_cpus)
    ceiling = max(
        floor,
        spare_budget(
            cluster_memory_bytes,
            cluster_cpus,
            limits.spare_memory_share,
            limits.spare_idle_cpu_share,
        ),
    )
    at_once = max(1, int(cluster_cpus * STARTS_AT_ONCE_PER_CPU))
    return SparePool(
        floor, starter.start, runtime.kill, demand=Demand(floor, ceiling, starts_at_once=at_once)
    )


def assemble(
    settings: Settings,
    control: ControlPlane,
    runtime: ActorRuntime,
    admin_token_hash: str,
    *,
    cluster_cpus: float,
    cluster_memory_bytes: float,
) -> DirectoryParts:
    """Every part, given its collaborators; the limits not set in `settings` are derived from
    the cluster's size."""
    if settings.snapshots.store == "local":
        ensure_private_dir(settings.snapshots.local_dir)
    limits = settings.residency
    residents = ResidentTable(control, runtime)
    placement = NodePlacement(runtime, residents, slots=limits.workspace_slots)
    starter = SpareStarter(runtime, placement, residents)
    pool = spare_pool(limits, starter, runtime, cluster_cpus, cluster_memory_bytes)
    hibernation = Hibernation(
        control,
        runtime,
        residents,
        limits.max_resident or derived_resident_cap(cluster_memory_bytes, cluster_cpus),
        limits.hibernate_idle_s,
        hibernating_over_cap=max(1, int(cluster_cpus * HIBERNATING_OVER_CAP_PER_CPU)),
        pool=pool,
        recycle_max_binds=limits.recycle_max_binds,
        recycle_max_growth_mib=limits.recycle_max_growth_mib,
    )
    workspaces = WorkspaceLifecycle(
        settings,
        control,
        open_snapshot_store(settings.snapshots),
        residents,
        runtime,
        born_with(verified_contracts()),
        load_default_blueprint(settings.blueprint_path),
    )
    activator = Activator(
        settings,
        control,
        runtime,
        residents,
        placement,
        pool,
        hibernation,
        workspaces.workspace_path,
        starts_at_once=max(1, int(cluster_cpus * WAKE_STARTS_AT_ONCE_PER_CPU)),
        on_move=workspaces.sweep_soon,
    )
    grants = TokenGrants(control, runtime, residents, activator, admin_token_hash)
    liveness = Liveness(residents, activator)
    cleanups = OwedCleanups(control, residents, activator, hibernation)
    return DirectoryParts(
        residents, placement, pool, hibernation, workspaces, activator, grants, liveness, cleanups
    )
