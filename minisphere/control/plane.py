"""The control plane's store: workspaces, their blueprints, contracts and token hashes.

Plain Python over its own SQLite file (its migrations: `control/schema.py`). The directory
actor is its only user in the service; tests use it directly.
"""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any, TypedDict

from minisphere.control.auth import (
    check_workspace_id,
    new_generation,
    new_workspace_id,
    new_workspace_token,
)
from minisphere.control.blueprints import Blueprint
from minisphere.control.cleanup_debts import CleanupDebts
from minisphere.control.locations import LocationRecords
from minisphere.control.schema import migrate_control_plane
from minisphere.control.token_records import TokenRecords
from minisphere.engine import db
from minisphere.engine.clock import epoch_ms
from minisphere.errors import NotFound, WorkspaceExists
from minisphere.wire.records import BornWith, WorkspaceRecord
from minisphere.wire.residency import SnapshotStatus

_COLUMNS = (
    "id, created_at, updated_at, state, contracts_json, blueprint_json, label, node_id, "
    "last_active_at, generation"
)
SNAPSHOT_DEBT_RETRY_LIMIT = 100  # debts handed out per retry round, oldest first


class DurabilityRecord(TypedDict):
    snapshots: dict[str, Any] | None
    lastSnapshotVersion: str | None
    snapshotPending: bool


class AuditEntry(TypedDict):
    seq: int
    at: int
    workspaceId: str | None
    action: str
    detail: dict[str, Any] | None


def _row_dict(row: tuple[Any, ...]) -> WorkspaceRecord:
    (
        id_,
        created,
        updated,
        state,
        contracts,
        blueprint,
        label,
        node_id,
        last_active,
        generation,
    ) = row
    return {
        "id": id_,
        "createdAt": created,
        "updatedAt": updated,
        "state": state,
        "contracts": json.loads(contracts),
        "blueprint": json.loads(blueprint),
        "label": label,
        "nodeId": node_id,
        "lastActiveAt": last_active,
        "generation": generation,
    }


class ControlPlane:
    def __init__(self, path: str | Path, synchronous: str = "FULL"):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = db.connect(self.path, synchronous=synchronous)
        self._migrate()
        self.locations = LocationRecords(self.conn, self._audit)
        self.tokens = TokenRecords(self.conn, self._audit, self.exists)
        self.cleanup_debts = CleanupDebts(self.conn, self._audit)

    def close(self) -> None:
        self.conn.close()

    def _migrate(self) -> None:
        migrate_control_plane(self.conn, epoch_ms())

    def _audit(
        self, workspace_id: str | None, action: str, detail: dict[str, Any] | None = None
    ) -> None:
        self.conn.execute(
            "INSERT INTO audit(at, workspace_id, action, detail) VALUES (?,?,?,?)",
            (
                epoch_ms(),
                workspace_id,
                action,
                json.dumps(detail, sort_keys=True) if detail else None,
            ),
        )

    # ---- workspaces ----------------------------------------------------------------------
    def create(
        self,
        blueprint: Blueprint,
        contracts: builtins.list[BornWith],
        workspace_id: str | None = None,
        label: str | None = None,
    ) -> tuple[WorkspaceRecord, str]:
        """Record a new workspace with one write token; returns (record, token). The token
        exists only here."""
        workspace_id = check_workspace_id(workspace_id) if workspace_id else new_workspace_id()
        token = new_workspace_token()
        now = epoch_ms()
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.conn.execute(
                "SELECT 1 FROM workspaces WHERE id = ?", (workspace_id,)
            ).fetchone():
                raise WorkspaceExists(f"workspace {workspace_id} already exists")
            self.conn.execute(
                f"INSERT INTO workspaces({_COLUMNS}) VALUES (?, ?, ?, 'active', ?, ?, ?, NULL, ?, "
                "?)",
                (
                    workspace_id,
                    now,
                    now,
                    json.dumps(contracts, sort_keys=True),
                    blueprint.model_dump_json(),
                    label,
                    now,
                    new_generation(),
                ),
            )
            self.tokens.insert(workspace_id, token, "write", None, None, now)
            self._audit(workspace_id, "create", {"blueprint": blueprint.name})
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return self.get(workspace_id), token

    def get(self, workspace_id: str) -> WorkspaceRecord:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM workspaces WHERE id = ?", (workspace_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no workspace {workspace_id}")
        return _row_dict(row)

    def exists(self, workspace_id: str) -> bool:
        return (
            self.conn.execute(
                "SELECT 1 FROM workspaces WHERE id = ? AND state != 'deleting'", (workspace_id,)
            ).fetchone()
            is not None
        )

    def list(self, limit: int = 1000, after: str = "") -> builtins.list[WorkspaceRecord]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM workspaces WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
        ).fetchall()
        return [_row_dict(r) for r in rows]

    def set_vector_binding(
        self, workspace_id: str, vector: dict[str, Any] | None
    ) -> WorkspaceRecord:
        """The workspace's blueprint from now on names this vector binding (the next open, or
        a rebind under way, brings the file to it); audited. Returns the record."""
        blueprint = self.get(workspace_id)["blueprint"]
        before = (blueprint.get("bindings") or {}).get("vector")
        blueprint.setdefault("bindings", {})["vector"] = vector
        self.conn.execute(
            "UPDATE workspaces SET blueprint_json = ?, updated_at = ? WHERE id = ?",
            (json.dumps(blueprint), epoch_ms(), workspace_id),
        )
        self._audit(
            workspace_id,
            "vector-binding",
            {"from": (before or {}).get("provider"), "to": (vector or {}).get("provider")},
        )
        return self.get(workspace_id)

    def set_state(self, workspace_id: str, state: str) -> None:
        """Change the state; a workspace being deleted stays so (an activation that finishes
        during the deletion must not make it active again)."""
        self.conn.execute(
            "UPDATE workspaces SET state = ?, updated_at = ? WHERE id = ? AND "
            "(state != 'deleting' OR ? = 'deleting')",
            (state, epoch_ms(), workspace_id, state),
        )

    def touch(self, workspace_id: str, node_id: str | None = None) -> None:
        self.conn.execute(
            "UPDATE workspaces SET last_active_at = ?, node_id = COALESCE(?, node_id) WHERE id = ?",
            (epoch_ms(), node_id, workspace_id),
        )

    def delete(self, workspace_id: str) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(
                "INSERT OR IGNORE INTO tombstones(workspace_id, generation, "
                "deleted_at) SELECT id, COALESCE(generation, ''), ? FROM "
                "workspaces WHERE id = ?",
                (epoch_ms(), workspace_id),
            )
            self.conn.execute("DELETE FROM workspaces WHERE id = ?", (workspace_id,))
            self.cleanup_debts.drop(workspace_id)
            self._audit(workspace_id, "delete")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # ---- snapshots of deleted workspaces -----------------------------------------------------
    def owe_snapshot_deletion(self, workspace_id: str, generation: str | None, error: str) -> None:
        """Snapshots of a deleted workspace that are still in the store: retried later."""
        self.conn.execute(
            "INSERT INTO snapshot_debts(workspace_id, generation, since, attempts, last_error) "
            "VALUES (?, ?, ?, 1, ?) ON CONFLICT(workspace_id, generation) DO UPDATE SET "
            "attempts = attempts + 1, last_error = excluded.last_error",
            (workspace_id, generation or "", epoch_ms(), error),
        )

    def snapshot_debts(self) -> builtins.list[tuple[str, str | None]]:
        """(workspace id, generation) of snapshots still to delete, oldest first."""
        rows = self.conn.execute(
            "SELECT workspace_id, generation FROM snapshot_debts ORDER BY since LIMIT ?",
            (SNAPSHOT_DEBT_RETRY_LIMIT,),
        )
        return [(w, g or None) for w, g in rows]

    def settle_snapshot_debt(self, workspace_id: str, generation: str | None) -> None:
        self.conn.execute(
            "DELETE FROM snapshot_debts WHERE workspace_id = ? AND generation = ?",
            (workspace_id, generation or ""),
        )
        self._audit(workspace_id, "snapshots-deleted", {"generation": generation})

    # ---- durability -----------------------------------------------------------------
    def durability(self, workspace_id: str) -> DurabilityRecord:
        row = self.conn.execute(
            "SELECT snapshot_json, last_snapshot_version, snapshot_pending "
            "FROM workspaces WHERE id = ?",
            (workspace_id,),
        ).fetchone()
        if row is None:
            raise NotFound(f"no workspace {workspace_id}")
        return {
            "snapshots": json.loads(row[0]) if row[0] else None,
            "lastSnapshotVersion": row[1],
            "snapshotPending": bool(row[2]),
        }

    def record_snapshot_status(self, workspace_id: str, status: SnapshotStatus) -> None:
        """The workspace actor's latest snapshot status (after every attempt)."""
        self.conn.execute(
            "UPDATE workspaces SET snapshot_json = ?, "
            "last_snapshot_version = COALESCE(?, last_snapshot_version), "
            "snapshot_pending = CASE WHEN ? = 0 THEN 0 ELSE snapshot_pending END WHERE id = ?",
            (
                json.dumps(status, sort_keys=True),
                status.get("lastVersion"),
                status.get("pendingWrites", 1),
                workspace_id,
            ),
        )

    def record_hibernation(
        self,
        workspace_id: str,
        status: SnapshotStatus | None,
        pending: bool,
        version: str | None,
        position: int | None = None,
        stored: int | None = None,
    ) -> None:
        """The workspace hibernated: no actor; its snapshot status; the position its copy was
        left at, and the newest position the store holds (a snapshot's, or the replica's)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if position is not None:
                self.conn.execute(
                    "UPDATE workspaces SET position = MAX(position, ?), stored_position = "
                    "MAX(stored_position, COALESCE(?, 0)) WHERE id = ?",
                    (position, stored, workspace_id),
                )
            self.conn.execute(
                "UPDATE workspaces SET state = 'hibernated', updated_at = ?, actor_name = NULL, "
                "snapshot_json = COALESCE(?, snapshot_json), snapshot_pending = ?, "
                "last_snapshot_version = COALESCE(?, last_snapshot_version) "
                "WHERE id = ? AND state != 'deleting'",
                (
                    epoch_ms(),
                    json.dumps(status, sort_keys=True) if status else None,
                    1 if pending else 0,
                    version,
                    workspace_id,
                ),
            )
            self._audit(workspace_id, "hibernate", {"snapshot": version, "pending": pending})
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # ---- actors ------------------------------------------------------------------------------
    def set_actor(self, workspace_id: str, actor_name: str | None) -> None:
        """The live actor now holding the workspace (None: not resident)."""
        self.conn.execute(
            "UPDATE workspaces SET actor_name = ? WHERE id = ?", (actor_name, workspace_id)
        )

    def workspace_of_actor(self, actor_name: str) -> str | None:
        row = self.conn.execute(
            "SELECT id FROM workspaces WHERE actor_name = ? AND state != 'deleting'", (actor_name,)
        ).fetchone()
        return row[0] if row else None

    def bound_actors(self) -> builtins.list[tuple[str, str]]:
        """(workspace id, actor name) of every workspace recorded as resident."""
        return self.conn.execute(
            "SELECT id, actor_name FROM workspaces WHERE actor_name IS NOT "
            "NULL AND state != 'deleting' ORDER BY id"
        ).fetchall()

    def record_event(
        self, workspace_id: str, action: str, detail: dict[str, Any] | None = None
    ) -> None:
        self._audit(workspace_id, action, detail)

    def prune_audit(self, older_than_ms: int) -> int:
        """Forget audit rows older than `older_than_ms` (epoch ms); how many went. Tombstones
        stay: one is the only proof that a disk back after long away holds a deleted
        tenant's copy (a few dozen bytes each, and read per id, never whole)."""
        return self.conn.execute("DELETE FROM audit WHERE at < ?", (older_than_ms,)).rowcount

    def audit_log(
        self, workspace_id: str | None = None, limit: int = 100
    ) -> builtins.list[AuditEntry]:
        rows = self.conn.execute(
            "SELECT seq, at, workspace_id, action, detail FROM audit WHERE ? IS NULL OR "
            "workspace_id = ? ORDER BY seq DESC LIMIT ?",
            (workspace_id, workspace_id, limit),
        )
        return [
            {
                "seq": s,
                "at": at,
                "workspaceId": w,
                "action": a,
                "detail": json.loads(d) if d else None,
            }
            for s, at, w, a, d in rows
        ]
