"""DirectoryActor: the control plane as one named, detached actor owning its SQLite file.

It creates, lists, deletes and activates workspaces; the ingress only asks it when its own
caches (token hashes, actor handles) cannot answer, so a call to a resident workspace never
reaches it and a wake reaches it once. It is an async actor with bounded concurrency: a slow
hibernation (a snapshot upload) never holds the other callers, and its SQLite calls are short.

Activation (`parts/binding.py`) binds a warm spare from its pool (`parts/spares.py`): a process
that has already started and done its imports, so a wake costs opening the file. Without a spare
(the pool is spent, or none sits on the node holding the file) a new actor is started and bound
the same way. Each actor has a random, permanent name; the control plane records which one holds
each workspace, which is how a restarted directory adopts the residents and how an actor Ray
restarted after a crash finds its workspace again.

Residency: at most `max_resident` workspace actors stay (by default derived from the cluster's
memory and CPUs); above the cap the least recently called ones hibernate (snapshot if changed,
close, exit) before a new one is bound, and a background sweep hibernates those idle for
`hibernate_idle_s`. A workspace is re-activated on the node recorded as holding its file
(soft node affinity); when that node is gone it starts elsewhere and restores its newest
snapshot first.
"""
from __future__ import annotations

import asyncio
import logging
import shutil
import time
from pathlib import Path

import ray
from ray.exceptions import RayActorError

from actors.parts.binding import WorkspaceBinding
from actors.parts.residency import Residency
from actors.parts.spares import SparePool
from minisphere.contract.startup import born_with, verified_contracts
from minisphere.control.auth import check_workspace_id, same_hash, token_hash
from minisphere.control.blueprints import (
    load_default_blueprint,
    parse_blueprint,
)
from minisphere.control.plane import ControlPlane
from minisphere.control.residency import (
    IDLE_SWEEP_S,
    derived_resident_cap,
    derived_spare_actors,
)
from minisphere.durability.generations import delete_snapshots
from minisphere.durability.stores import open_snapshot_store
from minisphere.engine.workspace import Workspace
from minisphere.errors import InvalidArgument, NotFound, SnapshotError
from minisphere.maintenance.ledger import LEDGER_OPS, LocalLedger
from minisphere.settings import Settings, ensure_private_dir, restrict_file_modes

log = logging.getLogger("minisphere.directory")
DIRECTORY_NAME = "directory"
DIRECTORY_CONCURRENCY = 64         # calls the directory interleaves at most
HIBERNATE_TIMEOUT_S = 60.0         # a workspace actor's drain + snapshot + close
SWEEP_MAX_PER_ROUND = 16           # idle workspaces hibernated per sweep round, at most
SNAPSHOT_DEBT_EVERY_ROUNDS = 12    # sweep rounds between retries of owed snapshot deletions
PUSH_GRANTS_TIMEOUT_S = 10.0       # handing a resident actor its new token set
# Ray's own resource of the head node. The control plane's file is in the data folder of the node
# the directory runs on; on separate hosts only the head outlives the workers, so the directory
# lives there (a worker going away must not take the record of every workspace with it).
HEAD_NODE_RESOURCE = {"node:__internal_head__": 0.001}


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0,
            max_concurrency=DIRECTORY_CONCURRENCY)
class DirectoryActor(WorkspaceBinding):
    def __init__(self, settings: Settings):
        restrict_file_modes()       # each actor: a `ray start` cluster has its own umask
        logging.basicConfig(level=logging.INFO)
        self.settings = settings
        ensure_private_dir(settings.data_dir)
        self.control = ControlPlane(settings.control_db)
        self.contracts = born_with(verified_contracts())
        self.default_blueprint = load_default_blueprint(settings.blueprint_path)
        self.root = ensure_private_dir(settings.workspaces_dir).resolve()
        if settings.snapshots.store == "local":
            ensure_private_dir(settings.snapshots.local_dir)
        self.snapshots = open_snapshot_store(settings.snapshots)
        cluster = ray.cluster_resources()
        cpus, memory = float(cluster.get("CPU", 1)), float(cluster.get("memory", 2 ** 30))
        self.residency = Residency(
            settings.residency.max_resident or derived_resident_cap(memory, cpus),
            settings.residency.hibernate_idle_s, slots=settings.residency.workspace_slots)
        spares = settings.residency.spare_actors
        self.pool = None
        self._pool_size = derived_spare_actors(cpus) if spares is None else spares
        self._handles: dict[str, object] = {}       # resident workspace -> its actor
        self._actor_names: dict[str, str] = {}
        self._activating: dict[str, asyncio.Future] = {}
        self._reserved: set[str] = set()            # being bound, a slot under the cap held
        self._hibernating: dict[str, asyncio.Future] = {}
        self._activation: dict[str, dict] = {}     # how each resident actor opened its file
        self._woken_from: dict[str, dict] = {}     # spare | new, and how long the wake took
        self._placement: dict[str, str] = {}       # why it was placed where it is
        self._self = ray.get_runtime_context().current_actor
        self._admin_hash = token_hash(settings.admin_token)
        self._background: list[asyncio.Task] = []
        self.maintenance_ledger = LocalLedger(self.control)   # runs + due state
        self._adopt_residents()
        log.info("directory up: %s (%d workspaces); snapshots in %s; at most %d resident, "
                 "%d warm spares, hibernate after %.0f s idle", settings.control_db,
                 len(self.control.list()), settings.snapshots.describe(),
                 self.residency.max_resident, self._pool_size, self.residency.idle_s)

    def _adopt_residents(self) -> None:
        """After a directory restart: workspace actors still alive count as resident."""
        for workspace_id, name in self.control.bound_actors():
            try:
                handle = ray.get_actor(name, namespace=self.settings.namespace)
            except ValueError:
                self.control.set_actor(workspace_id, None)
                continue
            self._handles[workspace_id] = handle
            self._actor_names[workspace_id] = name
            self.residency.touch(workspace_id)
            self.residency.located(workspace_id, self.control.get(workspace_id)["nodeId"])

    def _start_background(self) -> None:
        """The pool and the idle sweep live on the actor's event loop, started by the first
        call (an async actor's constructor runs before its loop)."""
        if self.pool is None:
            self.pool = SparePool(self._pool_size, self._start_spare, self._kill)
            self.pool.refill()
            self._background.append(asyncio.get_running_loop().create_task(self._sweep_loop()))

    async def start(self) -> dict:
        """Start the pool and the sweep now (the launcher calls it; any call does it too)."""
        self._start_background()
        return self.pool.status()

    # ---- spares ------------------------------------------------------------------------------
    def spares(self) -> dict:
        self._start_background()
        return self.pool.status()

    def set_spares(self, size: int) -> dict:
        """Resize the pool at run time (operators, tests); returns its status."""
        self._start_background()
        self.pool.resize(size)
        return self.pool.status()

    # ---- places ----------------------------------------------------------------------------
    def _folder(self, workspace_id: str) -> Path:
        folder = (self.root / check_workspace_id(workspace_id)).resolve()
        if folder.parent != self.root:      # belt and braces: the id pattern already forbids it
            raise NotFound(f"no workspace {workspace_id}")
        return folder

    def workspace_path(self, workspace_id: str) -> str:
        return str(self._folder(workspace_id) / "workspace.db")

    # ---- workspaces --------------------------------------------------------------------------
    async def create(self, workspace_id: str | None = None, blueprint: dict | None = None,
                     label: str | None = None) -> dict:
        self._start_background()
        chosen = parse_blueprint(blueprint) if blueprint is not None else self.default_blueprint
        record, token = self.control.create(chosen, self.contracts, workspace_id, label)
        try:   # born now: the file exists and is migrated; the actor starts on first use
            folder = self._folder(record["id"])
            if folder.exists():   # left over from an interrupted delete: keep it, aside
                aside = self.root / ".orphaned" / f"{record['id']}-{time.time_ns()}"
                ensure_private_dir(aside.parent)
                folder.rename(aside)
                log.warning("moved orphaned folder %s to %s", folder, aside)
            ensure_private_dir(folder)
            Workspace(folder / "workspace.db", synchronous=self.settings.synchronous).close()
        except BaseException:
            self.control.delete(record["id"])
            raise
        log.info("created workspace %s", record["id"])
        [grant] = self.control.grants(record["id"])
        return {"workspace": record, "token": token, "tokenId": grant.token_id}

    async def get(self, workspace_id: str) -> dict:
        record = self.control.get(workspace_id)
        record["resident"] = workspace_id in self._handles
        record["durability"] = self.durability_of(workspace_id)
        return record

    async def list(self, limit: int = 1000, after: str = "") -> list[dict]:
        self._start_background()
        return self.control.list(limit, after)

    async def authenticate(self, workspace_id: str, candidate_hash: str):
        """("ok", grants) | ("admin", []) | ("expired", []) | ("other", []) | ("invalid", [])."""
        if same_hash(candidate_hash, self._admin_hash):
            return "admin", []
        return self.control.authenticate(workspace_id, candidate_hash)

    async def whoami(self, candidate_hash: str) -> dict | None:
        """What a token is: {"kind": "admin"}, its workspace grant, or None (unknown)."""
        if same_hash(candidate_hash, self._admin_hash):
            return {"kind": "admin"}
        return self.control.whoami(candidate_hash)

    # ---- tokens ------------------------------------------------------------------------------
    async def create_token(self, workspace_id: str, scope: str, label: str | None,
                           expires_at: int | None) -> dict:
        issued = self.control.issue_token(workspace_id, scope, label, expires_at)
        await self._push_grants(workspace_id)
        return issued

    async def list_tokens(self, workspace_id: str) -> list[dict]:
        return self.control.list_tokens(workspace_id)

    async def revoke_token(self, workspace_id: str, token_id: str) -> dict:
        """Revoke now: answered once the workspace's actor (if resident) holds the new set,
        so the very next call with that token is refused, whichever ingress sends it."""
        self.control.revoke_token(workspace_id, token_id)
        await self._push_grants(workspace_id)
        return {"revoked": token_id}

    async def _push_grants(self, workspace_id: str) -> None:
        """Hand the resident actor the current token set. An actor that cannot be told (hung,
        dead, restarting) is retired rather than left serving with the old set, which could
        still hold a revoked token: the next call wakes a new actor that starts with the
        current set (committed writes are in the file; a call cut short was never answered)."""
        handle = self._handles.get(workspace_id)     # a bind in flight re-checks at its end
        if handle is None:
            return
        try:
            await asyncio.wait_for(handle.set_tokens.remote(
                tuple(self.control.grants(workspace_id))), PUSH_GRANTS_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - whatever the cause, it must not keep serving
            log.warning("could not hand the new token set to %s's actor (%s): retiring it",
                        workspace_id, exc.__class__.__name__)
            if self._handles.get(workspace_id) is handle:
                self._forget_resident(workspace_id)
            self._kill(handle)
            await self._until_dead(handle)

    async def tokens_used(self, workspace_id: str, used: dict[str, int]) -> None:
        """When tokens were last used, reported by the workspace actor (fire-and-forget)."""
        if self.control.exists(workspace_id):
            self.control.touch_tokens(workspace_id, used)

    async def actor_name_of(self, workspace_id: str) -> str | None:
        """The name of the actor holding the workspace now (None: not resident)."""
        return self._actor_names.get(workspace_id)

    async def binding_of_actor(self, actor_name: str):
        """(launch, token grants) of the workspace this actor is bound to, or None: what an
        actor Ray restarted after a crash asks."""
        workspace_id = self.control.workspace_of_actor(actor_name)
        if workspace_id is None:
            return None
        return self._launch(workspace_id), tuple(self.control.grants(workspace_id))

    # ---- activation ----------------------------------------------------------------------------
    async def activate(self, workspace_id: str, stale: bool = False):
        """The workspace's actor handle, binding one if it is not resident. Concurrent
        activations of one workspace share the first one's result."""
        self._start_background()
        if stale:
            await self._drop_if_dead(workspace_id)
        handle = self._handles.get(workspace_id)
        if handle is not None:
            self.residency.touch(workspace_id)
            return handle
        pending = self._activating.get(workspace_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future = asyncio.get_running_loop().create_future()
        self._activating[workspace_id] = future
        try:
            handle = await self._bind(workspace_id)
            future.set_result(handle)
            return handle
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()          # retrieved: no "never retrieved" warning
            raise
        finally:
            self._activating.pop(workspace_id, None)

    # ---- hibernation ---------------------------------------------------------------------------
    async def hibernate(self, workspace_id: str, reason: str = "manual") -> dict:
        """Hibernate a resident workspace: its actor drains, snapshots (if changed), closes;
        then it is killed. Calls that reach it afterwards were never run (ended cleanly)."""
        if workspace_id in self._hibernating:
            return await asyncio.shield(self._hibernating[workspace_id])
        if workspace_id not in self._handles:
            self.control.get(workspace_id)            # NotFound for a workspace never made
        handle = self._handles.pop(workspace_id, None)
        name = self._actor_names.pop(workspace_id, None)
        self.residency.forget(workspace_id)
        if handle is None:
            return {"workspace": workspace_id, "hibernated": False, "why": "not resident"}
        future = asyncio.get_running_loop().create_future()
        self._hibernating[workspace_id] = future
        try:
            result = await self._hibernate_actor(workspace_id, handle, name, reason)
            future.set_result(result)
            return result
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()
            raise
        finally:
            self._hibernating.pop(workspace_id, None)

    async def _hibernate_actor(self, workspace_id: str, handle, name: str, reason: str) -> dict:
        clean = True
        try:
            result = await asyncio.wait_for(handle.hibernate.remote(), HIBERNATE_TIMEOUT_S)
        except (TimeoutError, RayActorError) as exc:
            clean = False
            result = {"workspace": workspace_id, "snapshot": None, "pendingSnapshot": True,
                      "snapshots": None, "error": f"hibernation failed: {exc.__class__.__name__}"}
        actor_id = handle._actor_id.hex()            # noqa: SLF001 - the only stable id
        self._kill(handle)
        if clean:
            self.residency.record_clean_exit(actor_id)
        snapshot = result.get("snapshot") or {}
        self.control.record_hibernation(workspace_id, result.get("snapshots"),
                                        bool(result.get("pendingSnapshot")),
                                        snapshot.get("version"))
        self._activation.pop(workspace_id, None)
        log.info("hibernated %s (%s, actor %s): snapshot %s%s", workspace_id, reason, name,
                 snapshot.get("version", "not needed"),
                 f"; {result['error']}" if result.get("error") else "")
        return {**result, "hibernated": True, "reason": reason}

    async def _sweep_loop(self) -> None:
        rounds = 0
        while True:
            await asyncio.sleep(IDLE_SWEEP_S)
            rounds += 1
            try:
                await self.sweep()
                self.pool.retire(self.residency.misplaced_spares(self.pool.ready_nodes()))
                if rounds % SNAPSHOT_DEBT_EVERY_ROUNDS == 0:
                    await self.settle_snapshot_debts()
            except Exception:  # noqa: BLE001 - keep sweeping
                log.warning("idle sweep failed", exc_info=True)

    async def sweep(self) -> list[str]:
        """Hibernate idle residents (not those whose snapshots are failing: they retry), at
        most SWEEP_MAX_PER_ROUND at once, concurrently."""
        if self.residency.idle_s <= 0 or not self._handles:
            return []
        await self.residency.refresh(self._handles)
        idle = [ws for ws in self.residency.idle() if ws in self._handles]
        idle = idle[:SWEEP_MAX_PER_ROUND]
        await asyncio.gather(*(self.hibernate(ws, "idle") for ws in idle))
        return idle

    async def set_residency(self, max_resident: int | None = None,
                            idle_s: float | None = None) -> dict:
        """Change the cap / idle time at run time (operators, tests); returns the previous."""
        previous = {"max_resident": self.residency.max_resident, "idle_s": self.residency.idle_s}
        if max_resident is not None:
            self.residency.max_resident = max(1, int(max_resident))
        if idle_s is not None:
            self.residency.idle_s = max(0.0, float(idle_s))
        return previous

    async def ended_cleanly(self, workspace_id: str, actor_id: str) -> bool:
        """Did this actor end by hibernation (so a call that failed on it never ran)?"""
        if workspace_id in self._hibernating:         # ending now: the call was refused
            await asyncio.shield(self._hibernating[workspace_id])
        return self.residency.ended_cleanly(actor_id)

    # ---- reports from workspace actors (fire-and-forget) ------------------------------------
    async def placed(self, workspace_id: str, node_id: str, activation: dict) -> None:
        if not self.control.exists(workspace_id):
            return
        self.control.touch(workspace_id, node_id)
        if workspace_id in self._handles:
            self.residency.located(workspace_id, node_id)
        if activation.get("source") == "snapshot":
            self.control.record_event(workspace_id, "restore-on-activation",
                                      {"version": activation.get("version"), "node": node_id})

    async def snapshot_status(self, workspace_id: str, status: dict) -> None:
        if self.control.exists(workspace_id):
            self.control.record_snapshot_status(workspace_id, status)

    async def audit_event(self, workspace_id: str, action: str,
                          detail: dict | None = None) -> None:
        if self.control.exists(workspace_id):
            self.control.record_event(workspace_id, action, detail)

    async def set_placement(self, workspace_id: str, node_id: str | None) -> None:
        """Record where the file is (operators moving files; tests simulating a lost node)."""
        self.control.touch(workspace_id, node_id)

    def durability_of(self, workspace_id: str) -> dict:
        resident = workspace_id in self._handles
        return {"resident": resident, "store": self.settings.snapshots.describe(),
                "activation": self._activation.get(workspace_id) if resident else None,
                "wake": self._woken_from.get(workspace_id) if resident else None,
                "placement": self._placement.get(workspace_id),
                **self.control.durability(workspace_id)}

    async def durability(self, workspace_id: str) -> dict:
        return self.durability_of(workspace_id)

    async def resident(self) -> list[str]:
        """Workspaces whose actor currently exists in the cluster."""
        for workspace_id in list(self._handles):
            await self._drop_if_dead(workspace_id)
        return sorted(self._handles)

    async def residency_status(self) -> dict:
        self._start_background()
        return {"resident": len(self._handles), "hibernating": len(self._hibernating),
                "maxResident": self.residency.max_resident, "idleS": self.residency.idle_s,
                "spares": self.pool.status()}

    async def delete(self, workspace_id: str) -> dict:
        self.control.get(workspace_id)                      # NotFound when absent
        self.control.set_state(workspace_id, "deleting")    # no new activation from here on
        if workspace_id in self._activating:
            try:
                await asyncio.shield(self._activating[workspace_id])
            except Exception:  # noqa: BLE001 - it is being deleted anyway
                pass
        handle = self._handles.pop(workspace_id, None)
        self._actor_names.pop(workspace_id, None)
        self.residency.forget(workspace_id)
        self._activation.pop(workspace_id, None)
        if handle is not None:
            self._kill(handle)
        shutil.rmtree(self._folder(workspace_id), ignore_errors=True)
        generation = self.control.get(workspace_id)["generation"]
        snapshots_deleted = await self._delete_snapshots(workspace_id, generation)
        self.control.delete(workspace_id)
        log.info("deleted workspace %s", workspace_id)
        return {"deleted": workspace_id, "snapshotsDeleted": snapshots_deleted}

    async def _delete_snapshots(self, workspace_id: str, generation: str | None) -> bool:
        """Remove one generation's snapshots; when the store fails, owe it (the sweep retries).
        A workspace created later with the same id has another generation, so it never sees
        these meanwhile."""
        try:
            await asyncio.to_thread(delete_snapshots, self.snapshots, workspace_id, generation)
        except SnapshotError as exc:
            log.warning("snapshots of deleted workspace %s (%s) not removed yet: %s",
                        workspace_id, generation, exc.message)
            self.control.owe_snapshot_deletion(workspace_id, generation, exc.message)
            return False
        return True

    async def settle_snapshot_debts(self) -> int:
        """Retry deleting the snapshots of deleted workspaces; returns how many are left."""
        debts = self.control.snapshot_debts()
        for workspace_id, generation in debts:
            if await self._delete_snapshots(workspace_id, generation):
                self.control.settle_snapshot_debt(workspace_id, generation)
        return len(self.control.snapshot_debts())

    async def audit(self, workspace_id: str | None = None, limit: int = 100) -> list[dict]:
        return self.control.audit_log(workspace_id, limit)

    # ---- maintenance -------------------------------------------------------------------------
    async def maintenance(self, op: str, *args):
        """The maintenance rows of the control plane: schedules, due state, write notes, the
        run audit (`minisphere.maintenance.ledger.LEDGER_OPS`; nothing else is reachable)."""
        if op not in LEDGER_OPS:
            raise InvalidArgument(f"not a maintenance operation: {op!r}")
        return getattr(self.maintenance_ledger, op)(*args)


def get_directory(settings: Settings):
    """The directory singleton: created on first use, found by name afterwards."""
    return DirectoryActor.options(
        name=DIRECTORY_NAME, namespace=settings.namespace, lifetime="detached",
        get_if_exists=True, num_cpus=0, max_restarts=-1, max_task_retries=0,
        resources=HEAD_NODE_RESOURCE,
    ).remote(settings)
