"""DirectoryActor: the control plane as one named, detached actor owning its SQLite file.

It creates, lists, deletes and activates workspaces; the ingress only asks it when its own
caches (token hashes, actor handles) cannot answer. Calls are serialized (a plain actor).

Residency: at most `max_resident` workspace actors stay; above the cap the least
recently called ones hibernate (snapshot if changed, close, exit) before a new one starts, and
a background sweep hibernates those idle for `hibernate_idle_s`. A workspace is re-activated on
the node recorded as holding its file (soft node affinity); when that node is gone it starts
elsewhere and restores its newest snapshot first.
"""
from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from actors.parts.residency import Residency
from actors.workspace_actor import WorkspaceActor, WorkspaceLaunch, actor_name
from minisphere.contract.startup import born_with, verified_contracts
from minisphere.control.auth import check_workspace_id
from minisphere.control.blueprints import load_default_blueprint, parse_blueprint
from minisphere.control.plane import ControlPlane
from minisphere.control.residency import IDLE_SWEEP_S
from minisphere.durability.snapshots import delete_all_snapshots
from minisphere.durability.stores import open_snapshot_store
from minisphere.engine.workspace import Workspace
from minisphere.errors import InvalidArgument, NotFound, SnapshotError
from minisphere.maintenance.ledger import LEDGER_OPS, LocalLedger
from minisphere.settings import Settings

log = logging.getLogger("minisphere.directory")
DIRECTORY_NAME = "directory"
HIBERNATE_TIMEOUT_S = 60.0         # a workspace actor's drain + snapshot + close
NAME_RELEASE_TIMEOUT_S = 15.0      # waiting for a killed actor's name to be free again


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class DirectoryActor:
    def __init__(self, settings: Settings):
        logging.basicConfig(level=logging.INFO)
        self.settings = settings
        self.control = ControlPlane(settings.control_db)
        self.contracts = born_with(verified_contracts())
        self.default_blueprint = load_default_blueprint(self.settings.blueprint_path)
        self.root = self.settings.workspaces_dir.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._handles: dict = {}
        self.snapshots = open_snapshot_store(settings.snapshots)
        self.residency = Residency(settings.residency.max_resident,
                                   settings.residency.hibernate_idle_s)
        self._activation: dict[str, dict] = {}     # how each resident actor opened its file
        self._placement: dict[str, str] = {}       # why it was placed where it is
        self._self = ray.get_runtime_context().current_actor
        self.maintenance_ledger = LocalLedger(self.control)   # runs + due state
        self._adopt_residents()
        threading.Thread(target=self._sweep_loop, daemon=True, name="idle-sweep").start()
        log.info("directory up: %s (%d workspaces); snapshots in %s; at most %d resident, "
                 "hibernate after %.0f s idle", settings.control_db, len(self.control.list()),
                 settings.snapshots.describe(), settings.residency.max_resident,
                 settings.residency.hibernate_idle_s)

    def _adopt_residents(self) -> None:
        """After a directory restart: workspace actors still alive count as resident."""
        after = ""
        while page := self.control.list(1000, after):
            for record in page:
                if record["state"] == "active":
                    try:
                        handle = ray.get_actor(actor_name(record["id"]),
                                               namespace=self.settings.namespace)
                    except ValueError:
                        continue
                    self._handles[record["id"]] = handle
                    self.residency.touch(record["id"])
            after = page[-1]["id"]

    def _sweep_loop(self) -> None:
        while True:
            time.sleep(IDLE_SWEEP_S)
            if self.residency.idle_s <= 0:
                continue
            try:
                ray.get(self._self.sweep.remote())
            except Exception:  # noqa: BLE001 - keep sweeping
                log.warning("idle sweep failed", exc_info=True)

    # ---- places ----------------------------------------------------------------------------
    def _folder(self, workspace_id: str) -> Path:
        folder = (self.root / check_workspace_id(workspace_id)).resolve()
        if folder.parent != self.root:      # belt and braces: the id pattern already forbids it
            raise NotFound(f"no workspace {workspace_id}")
        return folder

    def workspace_path(self, workspace_id: str) -> str:
        return str(self._folder(workspace_id) / "workspace.db")

    # ---- workspaces --------------------------------------------------------------------------
    def create(self, workspace_id: str | None = None, blueprint: dict | None = None,
               label: str | None = None) -> dict:
        chosen = parse_blueprint(blueprint) if blueprint is not None else self.default_blueprint
        record, token = self.control.create(chosen, self.contracts, workspace_id, label)
        try:   # born now: the file exists and is migrated; the actor starts on first use
            folder = self._folder(record["id"])
            if folder.exists():   # left over from an interrupted delete: keep it, aside
                aside = self.root / ".orphaned" / f"{record['id']}-{time.time_ns()}"
                aside.parent.mkdir(exist_ok=True)
                folder.rename(aside)
                log.warning("moved orphaned folder %s to %s", folder, aside)
            folder.mkdir(parents=True)
            Workspace(folder / "workspace.db", synchronous=self.settings.synchronous).close()
        except BaseException:
            self.control.delete(record["id"])
            raise
        log.info("created workspace %s", record["id"])
        return {"workspace": record, "token": token}

    def get(self, workspace_id: str) -> dict:
        record = self.control.get(workspace_id)
        record["durability"] = self.durability_of(workspace_id)
        return record

    def list(self, limit: int = 1000, after: str = "") -> list[dict]:
        return self.control.list(limit, after)

    def authenticate(self, workspace_id: str, candidate_hash: str) -> tuple[str, list[str]]:
        return self.control.authenticate(workspace_id, candidate_hash)

    def activate(self, workspace_id: str, stale: bool = False):
        """The workspace's actor handle, creating the actor if it is not running."""
        if stale:
            self._handles.pop(workspace_id, None)
        handle = self._handles.get(workspace_id)
        if handle is not None:
            self.residency.touch(workspace_id)
            return handle
        if not self.control.exists(workspace_id):
            raise NotFound(f"no workspace {workspace_id}")
        try:            # still alive (restarting after a crash, or the cache was stale)
            handle = ray.get_actor(actor_name(workspace_id), namespace=self.settings.namespace)
        except ValueError:
            handle = self._start(workspace_id)
        self._handles[workspace_id] = handle
        self.residency.touch(workspace_id)
        self.control.touch(workspace_id)
        return handle

    def _start(self, workspace_id: str):
        """Start the workspace's actor: make room under the cap, place it, hand it its
        durability settings (and whether a snapshot is owed or expected)."""
        self._make_room(workspace_id)
        record = self.control.get(workspace_id)
        snap = self.control.durability(workspace_id)
        placement, why = self.residency.scheduling(record["nodeId"])
        self._placement[workspace_id] = why
        launch = WorkspaceLaunch(
            workspace_id, self.workspace_path(workspace_id), synchronous=self.settings.synchronous,
            max_batch=self.settings.max_batch, snapshots=self.settings.snapshots,
            pending_writes=1 if snap["snapshotPending"] or not snap["lastSnapshotVersion"] else 0,
            expect_snapshot=bool(snap["lastSnapshotVersion"]),
            vector=parse_blueprint(record["blueprint"]).bindings.vector)
        handle = WorkspaceActor.options(
            name=actor_name(workspace_id), namespace=self.settings.namespace, lifetime="detached",
            get_if_exists=True, max_restarts=-1, max_task_retries=0,
            **{"num_cpus": 0, **placement},
        ).remote(launch, self._self)
        self.control.set_state(workspace_id, "active")
        return handle

    def _make_room(self, incoming: str) -> None:
        if len(self._handles) + 1 <= self.residency.max_resident:
            return
        self.residency.refresh(self._handles)
        for victim in self.residency.victims(incoming):
            self.hibernate(victim, "lru")

    # ---- hibernation ---------------------------------------------------------------------------
    def hibernate(self, workspace_id: str, reason: str = "manual") -> dict:
        """Hibernate a resident workspace: its actor drains, snapshots (if changed), closes;
        then it is killed. Calls that reach it afterwards were never run (ended cleanly)."""
        handle = self._handles.pop(workspace_id, None)
        self.residency.forget(workspace_id)
        if handle is None:
            try:
                handle = ray.get_actor(actor_name(workspace_id), namespace=self.settings.namespace)
            except ValueError:
                return {"workspace": workspace_id, "hibernated": False, "why": "not resident"}
        clean = True
        try:
            result = ray.get(handle.hibernate.remote(), timeout=HIBERNATE_TIMEOUT_S)
        except (RayActorError, GetTimeoutError) as exc:
            clean = False
            result = {"workspace": workspace_id, "snapshot": None, "pendingSnapshot": True,
                      "snapshots": None, "error": f"hibernation failed: {exc.__class__.__name__}"}
        actor_id = handle._actor_id.hex()            # noqa: SLF001 - the only stable id
        ray.kill(handle, no_restart=True)
        self._wait_name_released(workspace_id)
        if clean:
            self.residency.record_clean_exit(actor_id)
        snapshot = result.get("snapshot") or {}
        self.control.record_hibernation(workspace_id, result.get("snapshots"),
                                      bool(result.get("pendingSnapshot")), snapshot.get("version"))
        self._activation.pop(workspace_id, None)
        log.info("hibernated %s (%s): snapshot %s%s", workspace_id, reason,
                 snapshot.get("version", "not needed"),
                 f"; {result['error']}" if result.get("error") else "")
        return {**result, "hibernated": True, "reason": reason}

    def _wait_name_released(self, workspace_id: str) -> None:
        deadline = time.monotonic() + NAME_RELEASE_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                ray.get_actor(actor_name(workspace_id), namespace=self.settings.namespace)
            except ValueError:
                return
            time.sleep(0.02)

    def sweep(self) -> list[str]:
        """Hibernate idle residents (not those whose snapshots are failing: they retry)."""
        if self.residency.idle_s <= 0 or not self._handles:
            return []
        self.residency.refresh(self._handles)
        idle = [ws for ws in self.residency.idle() if ws in self._handles]
        for workspace_id in idle:
            self.hibernate(workspace_id, "idle")
        return idle

    def set_residency(self, max_resident: int | None = None, idle_s: float | None = None) -> dict:
        """Change the cap / idle time at run time (operators, tests); returns the previous."""
        previous = {"max_resident": self.residency.max_resident, "idle_s": self.residency.idle_s}
        if max_resident is not None:
            self.residency.max_resident = max(1, int(max_resident))
        if idle_s is not None:
            self.residency.idle_s = max(0.0, float(idle_s))
        return previous

    def ended_cleanly(self, workspace_id: str, actor_id: str) -> bool:
        """Did this actor end by hibernation (so a call that failed on it never ran)?"""
        return self.residency.ended_cleanly(actor_id)

    # ---- reports from workspace actors (fire-and-forget) ------------------------------------
    def placed(self, workspace_id: str, node_id: str, activation: dict) -> None:
        if not self.control.exists(workspace_id):
            return
        self.control.touch(workspace_id, node_id)
        self._activation[workspace_id] = activation
        if activation.get("source") == "snapshot":
            self.control.record_event(workspace_id, "restore-on-activation",
                                    {"version": activation.get("version"), "node": node_id})

    def snapshot_status(self, workspace_id: str, status: dict) -> None:
        if self.control.exists(workspace_id):
            self.control.record_snapshot_status(workspace_id, status)

    def audit_event(self, workspace_id: str, action: str, detail: dict | None = None) -> None:
        if self.control.exists(workspace_id):
            self.control.record_event(workspace_id, action, detail)

    def set_placement(self, workspace_id: str, node_id: str | None) -> None:
        """Record where the file is (operators moving files; tests simulating a lost node)."""
        self.control.touch(workspace_id, node_id)

    def durability_of(self, workspace_id: str) -> dict:
        resident = workspace_id in self._handles
        return {"resident": resident, "store": self.settings.snapshots.describe(),
                "activation": self._activation.get(workspace_id) if resident else None,
                "placement": self._placement.get(workspace_id),
                **self.control.durability(workspace_id)}

    def resident(self) -> list[str]:
        """Workspaces whose actor currently exists in the cluster."""
        alive = []
        for workspace_id in list(self._handles):
            try:
                ray.get_actor(actor_name(workspace_id), namespace=self.settings.namespace)
                alive.append(workspace_id)
            except ValueError:
                self._handles.pop(workspace_id, None)
                self.residency.forget(workspace_id)
        return alive

    def delete(self, workspace_id: str) -> dict:
        self.control.get(workspace_id)                      # NotFound when absent
        self.control.set_state(workspace_id, "deleting")    # no new activation from here on
        self._handles.pop(workspace_id, None)
        self.residency.forget(workspace_id)
        self._activation.pop(workspace_id, None)
        name, namespace = actor_name(workspace_id), self.settings.namespace
        try:
            ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)
        except ValueError:
            pass
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                ray.get_actor(name, namespace=namespace)
            except ValueError:
                break
            time.sleep(0.05)
        shutil.rmtree(self._folder(workspace_id), ignore_errors=True)
        try:     # deletion is permanent: a later workspace of that id must not inherit them
            delete_all_snapshots(self.snapshots, workspace_id)
        except SnapshotError as exc:
            log.warning("snapshots of deleted workspace %s not removed: %s", workspace_id,
                        exc.message)
        self.control.delete(workspace_id)
        log.info("deleted workspace %s", workspace_id)
        return {"deleted": workspace_id}

    def audit(self, workspace_id: str | None = None, limit: int = 100) -> list[dict]:
        return self.control.audit_log(workspace_id, limit)

    # ---- maintenance -------------------------------------------------------------------
    def maintenance(self, op: str, *args):
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
    ).remote(settings)
