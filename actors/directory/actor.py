"""DirectoryActor: the control plane as one named, detached actor owning its SQLite file.

It creates, lists, deletes and activates workspaces; the ingress only asks it when its own
caches (token hashes, actor handles) cannot answer, so a call to a resident workspace never
reaches it and a wake reaches it once. It is an async actor with bounded concurrency: a slow
hibernation (a snapshot upload) never holds the other callers, and its SQLite calls are short.

This module is wiring: each remote method is one line over a part of this package,
each part owning one concern and given its collaborators in `assembly.py` —
- `residents`: the resident table (one record per resident workspace, work in flight);
- `placement` + `activation`: where an actor starts, and binding a warm spare or a new actor
  to the workspace;
- `spares`: the warm spare pool (processes started and imported, waiting for a workspace);
- `hibernation`: hibernating, the idle sweep and the resident cap;
- `grants`: tokens and the resident actors' token sets;
- `workspaces`: folders, creation, deletion and owed snapshot deletions;
- `runtime`: the one doorway to Ray.
Each workspace actor has a random, permanent name; the control plane records which one holds
each workspace, which is how a restarted directory adopts the residents and how an actor Ray
restarted after a crash finds its workspace again.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from typing import Any

import ray

from actors.directory.runtime import RayActors
from actors.handles import Handle, actor_class
from actors.process_logging import log_to_stderr
from actors.workspace.actor import WorkspaceActor
from minisphere.control.auth import TokenGrant, token_hash
from minisphere.control.blueprints import parse_blueprint
from minisphere.control.plane import AuditEntry, ControlPlane
from minisphere.control.residency_policy import IDLE_SWEEP_S
from minisphere.directory.activation import record_placement
from minisphere.directory.assembly import assemble
from minisphere.directory.launch import WorkspaceLaunch
from minisphere.directory.spares import PoolStatus
from minisphere.directory.status import residency_status
from minisphere.directory.sweep_rounds import SweepRounds
from minisphere.directory.workspaces import NodeAnswers
from minisphere.errors import InvalidArgument
from minisphere.maintenance.ledger import LEDGER_OPS, LocalLedger
from minisphere.settings import Settings, ensure_private_dir, restrict_file_modes
from minisphere.wire.records import (
    AdminIdentity,
    CreatedWorkspace,
    Deleted,
    Location,
    TokenInfo,
    TokenIssued,
    TokenRevoked,
    WorkspaceDetail,
    WorkspaceRecord,
    WorkspaceTokenIdentity,
)
from minisphere.wire.residency import Activation, HibernationAnswer, SnapshotStatus

log = logging.getLogger("minisphere.directory")
DIRECTORY_NAME = "directory"
DIRECTORY_CONCURRENCY = 64  # calls the directory interleaves at most
# Ray's own resource of the head node. The control plane's file is in the data folder of the node
# the directory runs on; on separate hosts only the head outlives the workers, so the directory
# lives there (a worker going away must not take the record of every workspace with it).
HEAD_NODE_RESOURCE = {"node:__internal_head__": 0.001}


# Ray's typed overloads of remote() list task options only, not an actor's max_concurrency
@ray.remote(
    num_cpus=0,
    max_restarts=-1,
    max_task_retries=0,  # type: ignore[call-overload]
    max_concurrency=DIRECTORY_CONCURRENCY,
)
class DirectoryActor:
    def __init__(self, settings: Settings):
        restrict_file_modes()  # each actor: a `ray start` cluster has its own umask
        log_to_stderr()
        self.settings = settings
        ensure_private_dir(settings.data_dir)
        self.control = control = ControlPlane(settings.control_db)
        admin_hash = token_hash(settings.admin_token)
        runtime = RayActors(
            actor_class(WorkspaceActor),
            settings.namespace,
            ray.get_runtime_context().current_actor,
            admin_hash,
        )
        cluster = ray.cluster_resources()
        parts = assemble(
            settings,
            control,
            runtime,
            admin_hash,
            cluster_cpus=float(cluster.get("CPU", 1)),
            cluster_memory_bytes=float(cluster.get("memory", 2**30)),
        )
        self.parts = parts
        self.residents, self.placement, self.pool = parts.residents, parts.placement, parts.pool
        self.hibernation, self.workspaces = parts.hibernation, parts.workspaces
        self.activator, self.grants = parts.activator, parts.grants
        self.liveness, self.cleanups = parts.liveness, parts.cleanups
        self.maintenance_ledger = LocalLedger(control)  # runs + due state
        self._sweeper: asyncio.Task[None] | None = None
        self.runtime = runtime
        ended = self.residents.adopt()
        if ended:
            log.warning(
                "ended %d workspace processes no one held (spares, or hibernations "
                "under way, of the directory that ran before)",
                ended,
            )
        log.info(
            "directory up: %s (%d workspaces); snapshots in %s; at most %d resident, "
            "%d warm spares, hibernate after %.0f s idle",
            settings.control_db,
            len(control.list()),
            settings.snapshots.describe(),
            self.hibernation.max_resident,
            self.pool.size,
            self.hibernation.idle_s,
        )

    def _start_background(self) -> None:
        """The pool and the idle sweep live on the actor's event loop, started by the first
        call (an async actor's constructor runs before its loop)."""
        if self._sweeper is None:
            self.pool.refill()
            rounds = SweepRounds(self.parts, self.runtime.alive_nodes)
            self._sweeper = asyncio.get_running_loop().create_task(rounds.run_forever(IDLE_SWEEP_S))

    async def start(self) -> PoolStatus:
        """Start the pool and the sweep now (the launcher calls it; any call does it too)."""
        self._start_background()
        return self.pool.status()

    # ---- workspaces ------------------------------------------------------------------------------
    async def create(
        self,
        workspace_id: str | None = None,
        blueprint: dict[str, Any] | None = None,
        label: str | None = None,
    ) -> CreatedWorkspace:
        self._start_background()
        return self.workspaces.create(workspace_id, blueprint, label)

    async def get(self, workspace_id: str) -> WorkspaceDetail:
        return {
            **self.control.get(workspace_id),
            "resident": workspace_id in self.residents,
            "durability": self._durability(workspace_id),
            "location": self.control.locations.location(workspace_id),
        }

    async def list(self, limit: int = 1000, after: str = "") -> builtins.list[WorkspaceRecord]:
        self._start_background()
        return self.control.list(limit, after)

    async def delete(self, workspace_id: str) -> Deleted:
        return await self.workspaces.delete(workspace_id)

    def workspace_path(self, workspace_id: str) -> str:
        return self.workspaces.workspace_path(workspace_id)

    async def settle_snapshot_debts(self) -> int:
        return await self.workspaces.settle_snapshot_debts()

    # ---- tokens ------------------------------------------------------------------------------------
    async def authenticate(
        self, workspace_id: str, candidate_hash: str
    ) -> tuple[str, builtins.list[TokenGrant]]:
        return self.grants.authenticate(workspace_id, candidate_hash)

    async def whoami(self, candidate_hash: str) -> AdminIdentity | WorkspaceTokenIdentity | None:
        return self.grants.whoami(candidate_hash)

    async def create_token(
        self, workspace_id: str, scope: str, label: str | None, expires_at: int | None
    ) -> TokenIssued:
        return await self.grants.create(workspace_id, scope, label, expires_at)

    async def list_tokens(self, workspace_id: str) -> builtins.list[TokenInfo]:
        return self.control.tokens.list_for(workspace_id)

    async def revoke_token(self, workspace_id: str, token_id: str) -> TokenRevoked:
        return await self.grants.revoke(workspace_id, token_id)

    async def binding_of_actor(
        self, actor_name: str
    ) -> tuple[WorkspaceLaunch, tuple[TokenGrant, ...]] | None:
        return self.grants.binding_of_actor(actor_name)

    # ---- residency ---------------------------------------------------------------------------------
    async def activate(self, workspace_id: str, caller_saw_failure: bool = False) -> Handle:
        self._start_background()
        handle: Handle = await self.activator.activate(workspace_id, caller_saw_failure)
        return handle

    async def hibernate(self, workspace_id: str, reason: str = "manual") -> HibernationAnswer:
        return await self.hibernation.hibernate(workspace_id, reason)

    async def set_vector_binding(
        self, workspace_id: str, vector: dict[str, Any]
    ) -> WorkspaceRecord:
        """The binding the workspace's blueprint names from now on (checked first); its file
        follows by the rebind the caller sends the actor next, or at its next open."""
        spec = parse_blueprint({"bindings": {"vector": vector}}).bindings.vector
        if spec is None:
            raise InvalidArgument("a vector binding is required (its provider at least)")
        return self.control.set_vector_binding(workspace_id, spec.model_dump())

    async def hibernate_all(self, reason: str = "shutdown") -> int:
        """Hibernate every resident at once (the service is stopping); how many there were."""
        return await self.hibernation.hibernate_all(reason)

    async def sweep(self) -> builtins.list[str]:
        return await self.hibernation.sweep()

    async def ended_cleanly(self, workspace_id: str, actor_id: str) -> bool:
        return await self.hibernation.ended_cleanly(workspace_id, actor_id)

    async def set_residency(
        self,
        max_resident: int | None = None,
        idle_s: float | None = None,
        wake_deadline_s: float | None = None,
        in_session_s: float | None = None,
        hung_after_s: float | None = None,
    ) -> dict[str, float]:
        """Change the cap, the idle time, the wake deadline, how recent a call keeps a
        resident from eviction or how long a silent actor is borne, at run time (operators,
        tests); returns the previous values."""
        admission = self.activator.wake_admission
        previous = {
            **self.hibernation.set_limits(max_resident, idle_s, in_session_s),
            "wake_deadline_s": admission.deadline_s,
            "hung_after_s": self.liveness.hung_after_s,
        }
        if wake_deadline_s is not None:
            admission.deadline_s = max(0.0, float(wake_deadline_s))
        if hung_after_s is not None:
            self.liveness.hung_after_s = max(0.0, float(hung_after_s))
        return previous

    async def actor_name_of(self, workspace_id: str) -> str | None:
        """The name of the actor holding the workspace now (None: not resident)."""
        resident = self.residents.get(workspace_id)
        return resident.actor_name if resident else None

    async def resident(self) -> builtins.list[str]:
        """Workspaces whose actor currently exists in the cluster."""
        for workspace_id in self.residents.ids():
            self.activator.drop_if_dead(workspace_id)
        return sorted(self.residents.ids())

    async def residency_status(self) -> dict[str, Any]:
        self._start_background()
        return residency_status(self.parts)

    def spares(self) -> PoolStatus:
        self._start_background()
        return self.pool.status()

    def spare_handles(
        self, known: builtins.list[str]
    ) -> tuple[builtins.list[str], dict[str, Handle]]:
        """For an ingress replica's advance contact (actors/ingress/spare_contacts.py): the
        names of the ready spares, and the handles of those not in `known`."""
        ready = self.pool.ready_handles()
        already = set(known)
        return list(ready), {name: h for name, h in ready.items() if name not in already}

    async def ping(self) -> None:
        """Nothing: what a spare sends the directory while it waits, so that the first message
        of its process to the directory is not sent inside a woken workspace's first call."""

    def set_spares(self, size: int) -> PoolStatus:
        """Resize the pool at run time (operators, tests); returns its status."""
        self._start_background()
        self.pool.resize(size)
        return self.pool.status()

    # ---- durability ----------------------------------------------------------------------------------
    def _durability(self, workspace_id: str) -> dict[str, Any]:
        resident = self.residents.get(workspace_id)
        return {
            "resident": resident is not None,
            "store": self.settings.snapshots.describe(),
            "activation": resident.activation if resident else None,
            "wake": resident.wake if resident else None,
            "placement": resident.placement if resident else None,
            **self.control.durability(workspace_id),
        }

    async def durability(self, workspace_id: str) -> dict[str, Any]:
        return self._durability(workspace_id)

    # ---- reports from workspace actors (fire-and-forget) ---------------------------------------------
    async def placed(self, workspace_id: str, node_id: str, activation: Activation) -> None:
        """A restarted actor reopened its workspace on its own (binds answer the directory)."""
        if not self.control.exists(workspace_id):
            return
        lived_on = self.control.get(workspace_id)["nodeId"]
        self.residents.located(workspace_id, node_id)
        record_placement(self.control, workspace_id, node_id, activation)
        if lived_on not in (None, node_id):
            self.workspaces.sweep_soon()

    async def position(
        self, workspace_id: str, generation: str | None, position: int, stored: int | None
    ) -> None:
        self.control.locations.record_position(workspace_id, generation, position, stored)

    async def accept_stored_state(self, workspace_id: str) -> Location:
        """An admin accepts losing what only an unreachable copy held (then restores)."""
        return self.control.locations.accept_stored_state(workspace_id)

    async def sweep_nodes(self) -> NodeAnswers | None:
        return await self.workspaces.sweep_nodes()

    async def snapshot_status(self, workspace_id: str, status: SnapshotStatus) -> None:
        if self.control.exists(workspace_id):
            self.control.record_snapshot_status(workspace_id, status)

    async def tokens_used(self, workspace_id: str, used: dict[str, int]) -> None:
        if self.control.exists(workspace_id):
            self.control.tokens.touch(workspace_id, used)

    async def forgot(self, workspace_id: str) -> None:
        if self.control.exists(workspace_id):
            self.workspaces.sweep_after_forget()

    async def audit_event(
        self, workspace_id: str, action: str, detail: dict[str, Any] | None = None
    ) -> None:
        if self.control.exists(workspace_id):
            self.control.record_event(workspace_id, action, detail)

    async def set_placement(self, workspace_id: str, node_id: str | None) -> None:
        """Record where the file is (operators moving files; tests simulating a lost node)."""
        self.control.touch(workspace_id, node_id)

    async def audit(
        self, workspace_id: str | None = None, limit: int = 100
    ) -> builtins.list[AuditEntry]:
        return self.control.audit_log(workspace_id, limit)

    async def maintenance(self, op: str, *args: Any) -> Any:
        """The maintenance rows of the control plane: schedules, due state, write notes, the
        run audit (`minisphere.maintenance.ledger.LEDGER_OPS`; nothing else is reachable)."""
        if op not in LEDGER_OPS:
            raise InvalidArgument(f"not a maintenance operation: {op!r}")
        return getattr(self.maintenance_ledger, op)(*args)


def singleton_options(name: str, settings: Settings) -> dict[str, Any]:
    """The actor options of the cluster's named singletons (the directory, the scheduler): one
    per namespace, made on first use and found by name after, detached from its maker,
    restarted without limit, its calls never retried, no CPU reserved."""
    return {
        "name": name,
        "namespace": settings.namespace,
        "lifetime": "detached",
        "get_if_exists": True,
        "num_cpus": 0,
        "max_restarts": -1,
        "max_task_retries": 0,
    }


def get_directory(settings: Settings) -> Handle:
    """The directory singleton: created on first use, found by name afterwards."""
    # mypy keeps a decorated class's own type: Ray's ActorClass (and its .options) is unseen
    directory: Handle = DirectoryActor.options(  # type: ignore[attr-defined]
        **singleton_options(DIRECTORY_NAME, settings), resources=HEAD_NODE_RESOURCE
    ).remote(settings)
    return directory
