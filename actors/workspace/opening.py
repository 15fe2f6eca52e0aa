"""How a launch becomes an open workspace in this process: the file's folder, the snapshot
store, the replica (its daemon tied to the node's Ray), and the shared embedder when the
workspace is vector-bound. What a `WorkspaceHost` needs and the actor itself does not."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import ray

from actors.workspace.node_ray import replication_owner
from minisphere.directory.launch import WorkspaceLaunch
from minisphere.durability.replication import workspace_replica
from minisphere.durability.stores import open_snapshot_store
from minisphere.hosting.copies import staged_bytes
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import HostListeners, HostTuning, KnownState
from minisphere.settings import SnapshotSettings, ensure_private_dir
from minisphere.wire.residency import OpeningProgress, SnapshotStatus

if TYPE_CHECKING:
    from actors.workspace.remote_embedder import RemoteEmbedder
    from minisphere.control.blueprints import VectorBindingSpec


def open_host(
    launch: WorkspaceLaunch,
    node_id: str,
    *,
    on_snapshot_status: Callable[[SnapshotStatus], None],
    on_durable: Callable[[int], None],
) -> WorkspaceHost:
    """Open (or restore from a snapshot) the launch's file on this node, `node_id`."""
    owner = replication_owner(launch.replication.enabled)
    ensure_private_dir(Path(launch.path).parent)
    snapshots = launch.snapshots
    return WorkspaceHost(
        launch.workspace_id,
        launch.path,
        store=open_snapshot_store(snapshots) if snapshots is not None else None,
        replica=workspace_replica(
            launch.replication,
            snapshots,
            launch.path,
            launch.workspace_id,
            launch.generation,
            owner_pid=owner,
        ),
        embedder=shared_embedder(launch.vector) if launch.vector is not None else None,
        known=KnownState(
            generation=launch.generation,
            epoch=launch.epoch,
            position=launch.position,
            moved_here=launch.holder_node not in (None, node_id),
            expect_snapshot=launch.expect_snapshot,
            pending_writes=launch.pending_writes,
            last_snapshot_at=launch.last_snapshot_at,
        ),
        tuning=HostTuning(
            synchronous=launch.synchronous,
            max_batch=launch.max_batch,
            snapshots=snapshots or SnapshotSettings(),
        ),
        listeners=HostListeners(on_snapshot_status=on_snapshot_status, on_durable=on_durable),
    )


def opening_progress(launch: WorkspaceLaunch | None) -> OpeningProgress:
    """The bytes the bind under way has staged so far, restoring its file (the directory lets a
    restore that keeps growing outlast the bind's timeout)."""
    return {"stagedBytes": staged_bytes(Path(launch.path).parent) if launch else 0}


def shared_embedder(vector: VectorBindingSpec) -> RemoteEmbedder:
    """A vector binding embeds through the cluster's shared embedder, never a local model."""
    from actors.embedder.actor import embedder_name, get_or_create_embedder
    from actors.workspace.remote_embedder import RemoteEmbedder

    namespace = ray.get_runtime_context().namespace
    spec = vector.embedder_spec()
    return RemoteEmbedder(
        get_or_create_embedder(spec, namespace=namespace), address=(embedder_name(spec), namespace)
    )
