"""Which process is the node's Ray, as a workspace actor sees it: its raylet, the process that
started the actor's worker. The node's replication daemon lives no longer than it
(minisphere/durability/daemon_tether.py), so a `ray stop` or a killed raylet leaves no daemon
shipping files behind."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from minisphere.errors import WorkspaceUnavailable


def raylet_pid() -> int | None:
    """The raylet's pid when this worker's parent is one (None elsewhere: a test, a driver)."""
    parent = os.getppid()
    try:
        program = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return None
    return parent if program.rsplit(b"/", 1)[-1] == b"raylet" else None


def replication_owner(replicating: bool) -> int | None:
    """The process the node's replication daemon is tied to: the raylet. A worker whose
    parent is no raylet any more outlived it (it is being killed with it): a daemon it started
    would have no node's Ray to die with and would ship files nobody holds, so it binds
    nothing that replicates (`WorkspaceUnavailable`: the directory binds elsewhere)."""
    owner = raylet_pid()
    if owner is None and replicating:
        raise WorkspaceUnavailable("this worker's node is going away; bind elsewhere")
    return owner


def was_reconstructed(context: Any) -> bool:
    """Whether Ray restarted this actor after a crash (from its runtime context)."""
    with warnings.catch_warnings():  # Ray's own property warns about its internals
        warnings.simplefilter("ignore", DeprecationWarning)
        return bool(context.was_current_actor_reconstructed)
