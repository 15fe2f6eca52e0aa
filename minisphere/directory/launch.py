"""What the directory hands a workspace actor when it binds it: the workspace's file, how to
write it, where its snapshots live. Shared by both sides, so neither imports the other."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minisphere.settings import (
    DEFAULT_MAX_BATCH_WRITES,
    DEFAULT_SYNCHRONOUS,
    ReplicationSettings,
    SnapshotSettings,
)

if TYPE_CHECKING:
    # an annotation only: the blueprint models (pydantic, the cron parser) are no part of what a
    # spare imports; a launch that carries a binding brings its class along when unpickled
    from minisphere.control.blueprints import VectorBindingSpec

ACTOR_NAME_PREFIX = "workspace-actor:"


def new_actor_name() -> str:
    """A workspace actor's permanent name: random, so a name never says which tenant it holds
    and a restarted directory finds the actor again by the name the control plane recorded."""
    return ACTOR_NAME_PREFIX + uuid.uuid4().hex[:16]


@dataclass(frozen=True)
class WorkspaceLaunch:
    workspace_id: str
    path: str
    synchronous: str = DEFAULT_SYNCHRONOUS
    max_batch: int = DEFAULT_MAX_BATCH_WRITES
    snapshots: SnapshotSettings | None = None  # None: no snapshot store
    pending_writes: int = 0  # writes not in any snapshot yet
    last_snapshot_at: float | None = None  # when the newest snapshot was taken (epoch s)
    expect_snapshot: bool = False  # a missing file must come from a snapshot
    vector: VectorBindingSpec | None = None  # the blueprint's vector binding, if any
    generation: str | None = None  # this creation of the id (snapshot keys)
    epoch: int | None = None  # fencing token of this activation
    position: int = 0  # newest acknowledged position: no copy below
    holder_node: str | None = None  # the node that held the workspace last
    replication: ReplicationSettings = field(default_factory=ReplicationSettings)
