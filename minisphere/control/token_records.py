"""A workspace's tokens in the control plane's file: issuing, listing and revoking them, and
checking one a caller presents. Only hashes are stored; a secret exists in the answer that
issued it and nowhere else."""

from __future__ import annotations

from collections.abc import Callable
from sqlite3 import Connection

from minisphere.control.auth import (
    TokenGrant,
    new_token_id,
    new_workspace_token,
    same_hash,
    token_hash,
)
from minisphere.control.locations import Audit
from minisphere.engine.clock import epoch_ms
from minisphere.errors import NotFound
from minisphere.wire.records import TokenInfo, TokenIssued, WorkspaceTokenIdentity


class TokenRecords:
    def __init__(self, conn: Connection, audit: Audit, exists: Callable[[str], bool]):
        self.conn = conn
        self._audit = audit
        self._exists = exists  # whether the control plane holds the workspace

    def insert(
        self,
        workspace_id: str,
        token: str,
        scope: str,
        label: str | None,
        expires_at: int | None,
        now: int,
    ) -> str:
        token_id = new_token_id()
        self.conn.execute(
            "INSERT INTO workspace_tokens(token_hash, workspace_id, created_at, token_id, scope, "
            "label, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (token_hash(token), workspace_id, now, token_id, scope, label, expires_at),
        )
        return token_id

    def issue(
        self, workspace_id: str, scope: str, label: str | None = None, expires_at: int | None = None
    ) -> TokenIssued:
        """A new token of the workspace; the secret is in this answer only."""
        if not self._exists(workspace_id):
            raise NotFound(f"no workspace {workspace_id}")
        token, now = new_workspace_token(), epoch_ms()
        token_id = self.insert(workspace_id, token, scope, label, expires_at, now)
        self._audit(workspace_id, "token-create", {"tokenId": token_id, "scope": scope})
        return {
            "tokenId": token_id,
            "token": token,
            "scope": scope,
            "label": label,
            "expiresAt": expires_at,
        }

    def list_for(self, workspace_id: str) -> list[TokenInfo]:
        """The workspace's tokens, oldest first: never a secret or a hash."""
        if not self._exists(workspace_id):
            raise NotFound(f"no workspace {workspace_id}")
        rows = self.conn.execute(
            "SELECT token_id, scope, label, created_at, expires_at, last_used_at FROM "
            "workspace_tokens WHERE workspace_id = ? ORDER BY created_at, rowid",  # ties: issue order
            (workspace_id,),
        )
        return [
            {
                "tokenId": t,
                "scope": s,
                "label": label,
                "createdAt": c,
                "expiresAt": e,
                "lastUsedAt": u,
            }
            for t, s, label, c, e, u in rows
        ]

    def revoke(self, workspace_id: str, token_id: str) -> None:
        cursor = self.conn.execute(
            "DELETE FROM workspace_tokens WHERE workspace_id = ? AND token_id = ?",
            (workspace_id, token_id),
        )
        if cursor.rowcount == 0:
            raise NotFound(f"workspace {workspace_id} has no token {token_id}")
        self._audit(workspace_id, "token-revoke", {"tokenId": token_id})

    def grants(self, workspace_id: str) -> list[TokenGrant]:
        """What each token of the workspace may do (the workspace actor's authoritative set)."""
        if not self._exists(workspace_id):
            return []
        return [
            TokenGrant(*row)
            for row in self.conn.execute(
                "SELECT token_hash, token_id, scope, expires_at FROM workspace_tokens WHERE "
                "workspace_id = ? ORDER BY token_id",
                (workspace_id,),
            )
        ]

    def authenticate(
        self, workspace_id: str, candidate_hash: str, now_ms: int | None = None
    ) -> tuple[str, list[TokenGrant]]:
        """("ok", grants) | ("expired", []) | ("other", []) for another workspace's token |
        ("invalid", [])."""
        grants = self.grants(workspace_id)
        mine = [g for g in grants if same_hash(candidate_hash, g.token_hash)]
        if mine:
            if mine[0].expired(now_ms if now_ms is not None else epoch_ms()):
                return "expired", []
            return "ok", grants
        owner = self.conn.execute(
            "SELECT workspace_id FROM workspace_tokens WHERE token_hash = ?", (candidate_hash,)
        ).fetchone()
        return ("other", []) if owner else ("invalid", [])

    def whoami(
        self, candidate_hash: str, now_ms: int | None = None
    ) -> WorkspaceTokenIdentity | None:
        """The workspace token with this hash, as its holder may see it (None: unknown or
        expired, or its workspace is being deleted)."""
        row = self.conn.execute(
            "SELECT t.workspace_id, t.token_id, t.scope, t.label, t.expires_at FROM "
            "workspace_tokens t JOIN workspaces w ON w.id = t.workspace_id WHERE "
            "t.token_hash = ? AND w.state != 'deleting'",
            (candidate_hash,),
        ).fetchone()
        if row is None:
            return None
        workspace_id, token_id, scope, label, expires_at = row
        if expires_at is not None and (now_ms if now_ms is not None else epoch_ms()) >= expires_at:
            return None
        return {
            "kind": "workspace",
            "workspace": workspace_id,
            "tokenId": token_id,
            "scope": scope,
            "label": label,
            "expiresAt": expires_at,
        }

    def touch(self, workspace_id: str, used: dict[str, int]) -> None:
        """When tokens were last used (the workspace actor reports it, coarsely)."""
        self.conn.executemany(
            "UPDATE workspace_tokens SET last_used_at = MAX(COALESCE(last_used_at, 0), ?) "
            "WHERE workspace_id = ? AND token_id = ?",
            [(at, workspace_id, token_id) for token_id, at in used.items()],
        )
