"""DirectoryActor: the control plane as one named, detached actor owning its SQLite file.

It creates, lists, deletes and activates workspaces; the ingress only asks it when its own
caches (token hashes, actor handles) cannot answer. Calls are serialized (a plain actor).
"""
from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import ray

from minisphere.auth import check_workspace_id
from minisphere.blueprints import load_default_blueprint, parse_blueprint
from minisphere.config import ServiceConfig
from minisphere.control_plane import ControlPlane
from minisphere.errors import NotFound
from minisphere.service_contracts import born_with, verified_contracts
from minisphere.workspace import Workspace

from .workspace_actor import WorkspaceActor, actor_name

log = logging.getLogger("minisphere.directory")
DIRECTORY_NAME = "directory"


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class DirectoryActor:
    def __init__(self, config: dict):
        logging.basicConfig(level=logging.INFO)
        self.config = ServiceConfig.from_dict(config)
        self.store = ControlPlane(self.config.control_db)
        self.contracts = born_with(verified_contracts())
        self.default_blueprint = load_default_blueprint(self.config.blueprint_path)
        self.root = self.config.workspaces_dir.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._handles: dict = {}
        log.info("directory up: %s (%d workspaces)", self.config.control_db,
                 len(self.store.list()))

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
        record, token = self.store.create(chosen, self.contracts, workspace_id, label)
        try:   # born now: the file exists and is migrated; the actor starts on first use
            folder = self._folder(record["id"])
            if folder.exists():   # left over from an interrupted delete: keep it, aside
                aside = self.root / ".orphaned" / f"{record['id']}-{time.time_ns()}"
                aside.parent.mkdir(exist_ok=True)
                folder.rename(aside)
                log.warning("moved orphaned folder %s to %s", folder, aside)
            folder.mkdir(parents=True)
            Workspace(folder / "workspace.db", synchronous=self.config.synchronous).close()
        except BaseException:
            self.store.delete(record["id"])
            raise
        log.info("created workspace %s", record["id"])
        return {"workspace": record, "token": token}

    def get(self, workspace_id: str) -> dict:
        return self.store.get(workspace_id)

    def list(self, limit: int = 1000, after: str = "") -> list[dict]:
        return self.store.list(limit, after)

    def authenticate(self, workspace_id: str, candidate_hash: str) -> tuple[str, list[str]]:
        return self.store.authenticate(workspace_id, candidate_hash)

    def activate(self, workspace_id: str, stale: bool = False):
        """The workspace's actor handle, creating the actor if it is not running."""
        if stale:
            self._handles.pop(workspace_id, None)
        handle = self._handles.get(workspace_id)
        if handle is not None:
            return handle
        if not self.store.exists(workspace_id):
            raise NotFound(f"no workspace {workspace_id}")
        handle = WorkspaceActor.options(
            name=actor_name(workspace_id), namespace=self.config.namespace, lifetime="detached",
            get_if_exists=True, num_cpus=0, max_restarts=-1, max_task_retries=0,
        ).remote(workspace_id, self.workspace_path(workspace_id), self.config.synchronous,
                 self.config.max_batch)
        self._handles[workspace_id] = handle
        self.store.touch(workspace_id)
        return handle

    def resident(self) -> list[str]:
        """Workspaces whose actor currently exists in the cluster."""
        alive = []
        for workspace_id in list(self._handles):
            try:
                ray.get_actor(actor_name(workspace_id), namespace=self.config.namespace)
                alive.append(workspace_id)
            except ValueError:
                self._handles.pop(workspace_id, None)
        return alive

    def delete(self, workspace_id: str) -> dict:
        self.store.get(workspace_id)                      # NotFound when absent
        self.store.set_state(workspace_id, "deleting")    # no new activation from here on
        self._handles.pop(workspace_id, None)
        name, namespace = actor_name(workspace_id), self.config.namespace
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
        self.store.delete(workspace_id)
        log.info("deleted workspace %s", workspace_id)
        return {"deleted": workspace_id}

    def audit(self, workspace_id: str | None = None, limit: int = 100) -> list[dict]:
        return self.store.audit_log(workspace_id, limit)


def get_directory(config: ServiceConfig):
    """The directory singleton: created on first use, found by name afterwards."""
    return DirectoryActor.options(
        name=DIRECTORY_NAME, namespace=config.namespace, lifetime="detached",
        get_if_exists=True, num_cpus=0, max_restarts=-1, max_task_retries=0,
    ).remote(config.to_dict())
