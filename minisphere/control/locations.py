"""The location record of each workspace, in the control plane's file (migration 0007): where
its live copy is, the fencing epoch of the host that opens it next, the newest acknowledged
position and the newest position the store holds, and which copies a node holds belong to no
live creation of their id.
What the positions and epochs mean: minisphere/engine/location.py.
"""

from __future__ import annotations

from collections.abc import Callable
from sqlite3 import Connection
from typing import Any

from minisphere.errors import NotFound
from minisphere.wire.records import Location

SQL_IDS_PER_QUERY = 500  # ids bound in one IN (...) list (SQLite allows 32,766)


# (workspace id or None, action, detail or None): the control plane's audit log
Audit = Callable[[str | None, str, dict[str, Any] | None], None]


class LocationRecords:
    def __init__(self, conn: Connection, audit: Audit):
        self.conn = conn
        self._audit = audit

    def location(self, workspace_id: str) -> Location:
        row = self.conn.execute(
            "SELECT generation, node_id, epoch, position, stored_position "
            "FROM workspaces WHERE id = ?",
            (workspace_id,),
        ).fetchone()
        if row is None:
            raise NotFound(f"no workspace {workspace_id}")
        generation, node, epoch, position, stored = row
        return {
            "generation": generation,
            "nodeId": node,
            "epoch": epoch,
            "position": position,
            "storedPosition": stored,
        }

    def next_epoch(self, workspace_id: str) -> int:
        """The fencing epoch of the host about to open the workspace (one more than any before)."""
        row = self.conn.execute(
            "UPDATE workspaces SET epoch = epoch + 1 WHERE id = ? RETURNING epoch", (workspace_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no workspace {workspace_id}")
        epoch: int = row[0]
        return epoch

    def record_position(
        self, workspace_id: str, generation: str | None, position: int, stored: int | None = None
    ) -> None:
        """A host of `generation` reports how far the workspace has got (and how far the store
        has): positions only grow, and a report of another creation of the id is ignored."""
        self.conn.execute(
            "UPDATE workspaces SET position = MAX(position, ?), "
            "stored_position = MAX(stored_position, COALESCE(?, 0)) "
            "WHERE id = ? AND generation IS ?",
            (position, stored, workspace_id, generation),
        )

    def accept_stored_state(self, workspace_id: str) -> Location:
        """An admin accepts losing what only a lost copy held: the newest acknowledged position
        becomes the store's, so the workspace opens from the store again."""
        before = self.location(workspace_id)
        self.conn.execute(
            "UPDATE workspaces SET position = stored_position WHERE id = ?", (workspace_id,)
        )
        self._audit(
            workspace_id,
            "loss-accepted",
            {"position": before["position"], "storedPosition": before["storedPosition"]},
        )
        return self.location(workspace_id)

    def dead_copies(self, held: dict[str, str]) -> dict[str, list[str]]:
        """Of the copies one node holds (id -> generation, '' for none), those of no live
        creation (id -> [generation]): the id is being deleted, or lives as another creation,
        or is gone and tombstoned (a copy naming no creation goes with any tombstone of its
        id). A copy of an id the directory never knew is left alone (an offline import).
        Asked with what the node holds, so a sweep's message grows with the node's files, not
        with every workspace ever deleted."""
        dead: dict[str, list[str]] = {}
        ids = list(held)
        for start in range(0, len(ids), SQL_IDS_PER_QUERY):
            chunk = ids[start : start + SQL_IDS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            live = {
                w: (g, state)
                for w, g, state in self.conn.execute(
                    f"SELECT id, COALESCE(generation, ''), state FROM workspaces WHERE id IN "
                    f"({marks})",
                    chunk,
                )
            }
            buried: dict[str, set[str]] = {}
            for workspace_id, generation in self.conn.execute(
                f"SELECT workspace_id, generation FROM tombstones WHERE workspace_id IN ({marks})",
                chunk,
            ):
                buried.setdefault(workspace_id, set()).add(generation)
            for workspace_id in chunk:
                generation = held[workspace_id]
                if workspace_id in live:
                    live_generation, state = live[workspace_id]
                    gone = state == "deleting" or live_generation != generation
                else:
                    gone = workspace_id in buried and (
                        generation == "" or generation in buried[workspace_id]
                    )
                if gone:
                    dead[workspace_id] = [generation]
        return dead

    def stored_copies(self) -> dict[str, tuple[str | None, str | None, int]]:
        """Live workspaces with a live copy somewhere: id -> (generation, node holding the
        live copy, stored position). A copy of one of them on any other node is stale once
        the store holds its position: nothing restores from it any more."""
        rows = self.conn.execute(
            "SELECT id, generation, node_id, stored_position FROM "
            "workspaces WHERE state != 'deleting' AND node_id IS NOT NULL"
        )
        return {w: (g, n, s) for w, g, n, s in rows}
