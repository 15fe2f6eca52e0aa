"""The grouped arguments of a `WorkspaceHost`: what the control plane knows of the workspace,
how the host runs, and whom it tells what."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minisphere.hosting.read_pool import DEFAULT_READ_THREADS
from minisphere.settings import DEFAULT_MAX_BATCH_WRITES, DEFAULT_SYNCHRONOUS, SnapshotSettings
from minisphere.wire.residency import SnapshotStatus


@dataclass(frozen=True)
class KnownState:
    """The location record's view of the workspace (engine/location.py), as the launch
    carries it. `generation`: the creation of the id; `epoch`: this host's fencing epoch (None:
    unfenced, a host outside the service); `position`: the newest state known to have been
    acknowledged (no copy below it is opened); `moved_here`: another node held it last (the
    copy here may be behind); `expect_snapshot`: a snapshot was taken, so a missing file is to
    be restored, not created; `pending_writes` and `last_snapshot_at`: the snapshot schedule
    carried over from its last residency."""

    generation: str | None = None
    epoch: int | None = None
    position: int = 0
    moved_here: bool = False
    expect_snapshot: bool = False
    pending_writes: int = 0
    last_snapshot_at: float | None = None


@dataclass(frozen=True)
class HostTuning:
    """How the host runs. `background`: the snapshotter runs on its own thread (tests drive
    it by hand)."""

    synchronous: str = DEFAULT_SYNCHRONOUS
    max_batch: int = DEFAULT_MAX_BATCH_WRITES
    read_threads: int = DEFAULT_READ_THREADS
    background: bool = True
    snapshots: SnapshotSettings = field(default_factory=SnapshotSettings)


@dataclass(frozen=True)
class HostListeners:
    """Whom the host tells: a read's follow-up write (recall counts; None: written here), each
    snapshot attempt's status, and a newer position the replica is known to hold."""

    on_follow_up: Callable[[str, dict[str, Any]], None] | None = None
    on_snapshot_status: Callable[[SnapshotStatus], None] | None = None
    on_durable: Callable[[int], None] | None = None


# the defaults (frozen, so one of each is shared)
NOTHING_KNOWN = KnownState()
DEFAULT_TUNING = HostTuning()
NO_LISTENERS = HostListeners()
