"""What a workspace actor's process is and has done, as the directory's pool, its hibernation
sweep and the operator read it: its identity, how many calls and workspaces it has served, and
its memory."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from actors.workspace.admission import Admission
from actors.workspace.process_memory import rss_bytes
from minisphere.hosting.host import WorkspaceHost
from minisphere.wire.residency import Activity, HibernationReport, ProcessReport

CLOSED_WRITER_COUNTERS = ("queueDepth", "batches", "writes", "largestBatch")


@dataclass
class ProcessFacts:
    name: str | None  # None only outside a named actor (tests)
    node_id: str
    restarted: bool  # Ray re-ran the constructor after a crash
    started_at: float = field(default_factory=time.time)
    calls: int = 0
    binds: int = 0  # workspaces this process has served (it is recycled)
    fresh_rss_bytes: int = 0  # its memory as a spare that has served nobody yet
    last_call_at: float = field(default_factory=time.time)

    def note_call(self) -> None:
        self.calls += 1
        self.last_call_at = time.time()

    def process(self) -> ProcessReport:
        """What the pool's retirement rule needs of a process handed back."""
        return {
            "binds": self.binds,
            "rssBytes": rss_bytes(),
            "freshRssBytes": self.fresh_rss_bytes,
            "pid": os.getpid(),
            "nodeId": self.node_id,
        }

    def spare_hibernated(self) -> HibernationReport:
        """A spare's answer to `hibernate`: it served nothing, so it keeps nothing."""
        return {
            "workspace": None,
            "snapshot": None,
            "error": None,
            "pendingSnapshot": False,
            "snapshots": None,
            "process": self.process(),
        }

    def activity(self, host: WorkspaceHost | None, admission: Admission | None) -> Activity:
        """What the directory needs to choose hibernation victims (cheap)."""
        if host is None or admission is None:
            return {"lastCallAt": self.last_call_at, "inflight": 0, "snapshotFailing": False}
        snapshots = host.snapshotter.status()
        return {
            "lastCallAt": self.last_call_at,
            "inflight": admission.inflight,
            "snapshotFailing": bool(
                snapshots["consecutiveFailures"] and snapshots["pendingWrites"]
            ),
        }

    def stats(
        self, host: WorkspaceHost | None, workspace_id: str | None, contracts: Any
    ) -> dict[str, Any]:
        if host is None:
            return {
                "workspace": None,
                "name": self.name,
                "pid": os.getpid(),
                "rssBytes": rss_bytes(),
                "restarted": self.restarted,
            }
        writer = host.writer  # None while the file is closed (or failed to reopen)
        counters = writer.counters() if writer else dict.fromkeys(CLOSED_WRITER_COUNTERS, 0)
        return {
            "workspace": workspace_id,
            "name": self.name,
            "pid": os.getpid(),
            "rssBytes": rss_bytes(),
            "open": writer is not None,
            "startedAt": self.started_at,
            "restarted": self.restarted,
            "calls": self.calls,
            "lastCallAt": self.last_call_at,
            **counters,
            "contracts": contracts,
            "nodeId": self.node_id,
            "durability": host.status(),
        }
