"""A development harness for the web console, without Ray: the real FastAPI app (`build_api`)
in front of a small gateway that runs seeded engine workspaces in this process.

    python -m tests.http.console_harness [--port 8765] [--entries 1000]

prints the console's address and three tokens (admin, write, read) and serves until Ctrl-C.
It answers the routes the console uses (workspace methods, whoami, the admin list and
detail, snapshots (none), maintenance runs (none)); it is for looking at the console and
poking its JavaScript, not a stand-in the tests rely on (they use the real service).
"""
from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from minisphere.control.auth import token_hash
from minisphere.engine.methods import METHODS
from minisphere.engine.workspace import Workspace
from minisphere.errors import Forbidden, InsufficientScope, NotFound, Unauthenticated
from minisphere.http.app import build_api
from tests.e2e.console_helpers import build_seed_file

ADMIN = "msa_console-harness-admin"
WRITE = "msw_console-harness-write"
READ = "msw_console-harness-read"
WORKSPACE = "demo"


class HarnessGateway:
    def __init__(self, folder: Path, entries: int):
        path = folder / "demo.db"
        self.seeded = build_seed_file(path, entries)
        self.workspaces = {WORKSPACE: Workspace(path)}
        self.created = int(time.time() * 1000)
        self.grants = {token_hash(WRITE): (WORKSPACE, "write"), token_hash(READ): (WORKSPACE, "read")}

    def is_admin(self, token: str) -> bool:
        return token == ADMIN

    def require_admin(self, token: str) -> None:
        if not self.is_admin(token):
            raise Unauthenticated("this route needs the admin token")

    def _grant(self, token: str):
        grant = self.grants.get(token_hash(token))
        if grant is None:
            raise Unauthenticated("invalid token")
        return grant

    async def authorize(self, workspace: str, token: str, method: str, *_client) -> str:
        if self.is_admin(token):
            return "admin"
        owner, scope = self._grant(token)
        if owner != workspace:
            raise Forbidden("this token belongs to another workspace")
        access = METHODS[method].access if method in METHODS else "read"
        if access == "maintenance":
            raise Forbidden(f"{method} needs the admin token")
        if access == "write" and scope != "write":
            raise InsufficientScope(f"this token may only read; {method} is a write")
        return scope

    async def whoami(self, token: str, *_client) -> dict:
        if self.is_admin(token):
            return {"kind": "admin"}
        owner, scope = self._grant(token)
        return {"kind": "workspace", "workspace": owner, "scope": scope, "tokenId": scope,
                "label": f"harness {scope}", "expiresAt": None}

    def _workspace(self, workspace_id: str) -> Workspace:
        if workspace_id not in self.workspaces:
            raise NotFound(f"no workspace {workspace_id}")
        return self.workspaces[workspace_id]

    async def call(self, workspace, method, args, caller, idempotency_key=None):
        ws = self._workspace(workspace)
        started = time.perf_counter()
        result = await asyncio.to_thread(ws.call, method, args,
                                         **({"idempotency_key": idempotency_key}
                                            if METHODS[method].access == "write" else {}))
        return result, {"engine_ms": (time.perf_counter() - started) * 1e3}

    async def run_maintenance(self, workspace, method, args, caller):
        return await self.call(workspace, method, args, caller)

    def _record(self, workspace_id: str) -> dict:
        return {"id": workspace_id, "createdAt": self.created, "updatedAt": self.created,
                "state": "active", "contracts": [], "blueprint": {
                    "scheduledTasks": {"cron": "17 3 * * *", "limit": 1000}},
                "label": "console harness", "nodeId": None, "lastActiveAt": self.created,
                "generation": None}

    async def list(self, limit, after):
        return [self._record(w) for w in sorted(self.workspaces) if w > after][:limit]

    async def get(self, workspace_id):
        self._workspace(workspace_id)
        return {**self._record(workspace_id), "resident": True,
                "durability": {"resident": True, "snapshots": None, "lastSnapshotVersion": None,
                               "snapshotPending": False}}

    async def list_snapshots(self, workspace_id):
        self._workspace(workspace_id)
        return []

    async def maintenance_runs(self, workspace, limit):
        return []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--entries", type=int, default=1000)
    args = parser.parse_args(argv)
    import uvicorn
    folder = Path(tempfile.mkdtemp(prefix="console-harness-"))
    gateway = HarnessGateway(folder, args.entries)
    api = build_api(gateway, [])
    print(f"console: http://127.0.0.1:{args.port}/ui/\nadmin token: {ADMIN}\n"
          f"write token: {WRITE}\nread token:  {READ}\nworkspace: {WORKSPACE}", flush=True)
    uvicorn.run(api, host="127.0.0.1", port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
