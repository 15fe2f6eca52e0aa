"""The real FastAPI app (`build_api`) in front of real engine workspaces, in one process and
without Ray: what the client, CLI and console tests talk to.

`EngineGateway(folder)` keeps the service's data layout under `folder`: a real control plane
(`control.db`: workspace records, token hashes, maintenance runs) and one real SQLite file per
workspace (`workspaces/<id>/workspace.db`, so the CLI's offline `--data-dir` mode reads the
same files), plus a local snapshot store (`snapshots/`). Tokens are checked the way the
service checks them, on every call, against the control plane: the admin token, a `write`
token, a `read` token (writes refused with 403 insufficient_scope), another workspace's token
(403), an unknown, expired or revoked one (401). The admin routes are guarded by the service's
own `AdminCheck`: a wrong admin token spends the client address's budget of guesses (429 once
it is spent), a workspace token there does not. Writes go through `Workspace.run_batch` with
the caller's idempotency key, so a replay is answered with `Idempotent-Replay: true`.

A snapshot version is restored the way the service restores it (verified, published again as
the newest version, swapped in); a restore to a moment answers what a service without
continuous replication answers (422: there is no replica here). Everything runs under one lock
on worker threads: the gateway is for correctness, not for measuring anything.

    gateway = EngineGateway(tmp_path)
    api = engine_api(gateway)                                  # build_api(gateway, [], ...)
    Client(BASE_URL, admin_token=ADMIN_TOKEN, transport=SyncASGITransport(api))
    AsyncClient(BASE_URL, admin_token=ADMIN_TOKEN, transport=httpx.ASGITransport(app=api))
    with serve(api) as url: ...                                # uvicorn on 127.0.0.1, a thread
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from minisphere.control.auth import check_workspace_id, same_hash, token_hash
from minisphere.control.blueprints import load_default_blueprint, parse_blueprint
from minisphere.control.plane import ControlPlane
from minisphere.control.token_cache import AdminCheck
from minisphere.durability.restores import restore_snapshot, restored_answer
from minisphere.durability.snapshots.layout import list_versions
from minisphere.durability.snapshots.manifest import list_snapshots
from minisphere.durability.snapshots.pruning import delete_visible_snapshots, prune
from minisphere.durability.snapshots.publish import take_snapshot
from minisphere.durability.stores import LocalDirSnapshotStore
from minisphere.engine.clock import epoch_ms
from minisphere.engine.embedding import make_provider
from minisphere.engine.methods import METHODS
from minisphere.engine.workspace import Workspace
from minisphere.errors import (
    Forbidden,
    InvalidArgument,
    NotFound,
    TransferError,
    Unauthenticated,
)
from minisphere.http.app import build_api
from minisphere.maintenance import runs as M
from minisphere.maintenance.ledger import LocalLedger
from minisphere.transfer import ImportSession, export_lines
from minisphere.transfer.format import parse_record

ADMIN_TOKEN = "msa_engine-gateway-admin-token-0123456789"
BASE_URL = "http://minisphere.test"
EXPORT_PAGE_LINES = 500
SERVER_START_TIMEOUT_S = 30.0
_REFUSALS = {
    "other": (Forbidden, "this token belongs to another workspace"),
    "expired": (Unauthenticated, "the token has expired"),
    "invalid": (Unauthenticated, "invalid token"),
}


class EngineGateway:
    def __init__(self, folder: Path, *, clock=None, synchronous: str = "NORMAL"):
        self.folder = Path(folder)
        self.clock, self.synchronous = clock, synchronous
        self.control = ControlPlane(self.folder / "control.db", synchronous=synchronous)
        self.ledger = LocalLedger(self.control)
        self.store = LocalDirSnapshotStore(self.folder / "snapshots")
        self.open: dict[str, Workspace] = {}  # resident workspaces (opened on first use)
        self._lock = threading.Lock()
        self.admin = AdminCheck(
            token_hash(ADMIN_TOKEN),
            lambda candidate: self._run(self.control.tokens.whoami, candidate),
        )
        self.durability_admin = EngineDurability(self)

    async def _run(self, fn, *args):
        """`fn(*args)` on a worker thread, one at a time (SQLite connections are shared)."""

        def locked():
            with self._lock:
                return fn(*args)

        return await asyncio.to_thread(locked)

    def path(self, workspace_id: str) -> Path:
        return self.folder / "workspaces" / check_workspace_id(workspace_id) / "workspace.db"

    def workspace(self, workspace_id: str) -> Workspace:
        """The open workspace (opening its file: the engine's own wake)."""
        if workspace_id not in self.open:
            if not self.control.exists(workspace_id):
                raise NotFound(f"no workspace {workspace_id}")
            self.open[workspace_id] = Workspace(
                self.path(workspace_id), clock=self.clock, synchronous=self.synchronous
            )
        return self.open[workspace_id]

    def _close(self, workspace_id: str) -> bool:
        workspace = self.open.pop(workspace_id, None)
        if workspace is not None:
            workspace.close()
        return workspace is not None

    def close(self) -> None:
        for workspace_id in list(self.open):
            self._close(workspace_id)
        self.control.close()

    # ---- auth ----------------------------------------------------------------------------------
    def is_admin(self, token: str) -> bool:
        return self.admin.is_admin(token)

    async def require_admin(self, token: str, client: str = "") -> None:
        await self.admin.require(token, client)  # the service's own check and budget

    def _authorize(self, workspace_id: str, token: str, method_name: str) -> str:
        check_workspace_id(workspace_id)
        if self.is_admin(token):
            return "admin"
        candidate = token_hash(token)
        verdict, grants = self.control.tokens.authenticate(workspace_id, candidate)
        if verdict != "ok":
            error, message = _REFUSALS.get(verdict, _REFUSALS["invalid"])
            raise error(message)
        [grant] = [g for g in grants if same_hash(candidate, g.token_hash)]
        if method_name in METHODS:
            grant.require(method_name, METHODS[method_name].access)
        return grant.scope

    async def authorize(self, workspace_id, token, method_name, client=""):
        return await self._run(self._authorize, workspace_id, token, method_name)

    def _whoami(self, token: str) -> dict:
        if self.is_admin(token):
            return {"kind": "admin"}
        found = self.control.tokens.whoami(token_hash(token))
        if found is None:
            raise Unauthenticated("invalid token")
        return found

    async def whoami(self, token, client=""):
        return await self._run(self._whoami, token)

    # ---- workspace methods ------------------------------------------------------------------------
    def _call(self, workspace_id: str, method_name: str, args, key: str | None):
        workspace = self.workspace(workspace_id)
        started = time.perf_counter()
        if METHODS[method_name].access == "read":
            result, replayed = workspace.call(method_name, args), False
        else:
            [reply] = workspace.run_batch([(method_name, args, key)])
            result, replayed = reply.unwrap(), reply.replayed
        return result, {"engine_ms": (time.perf_counter() - started) * 1e3, "replayed": replayed}

    async def call(self, workspace_id, method_name, body, caller, idempotency_key=None):
        return await self._run(self._call, workspace_id, method_name, body, idempotency_key)

    def _maintenance(self, workspace_id: str, method_name: str, args) -> tuple:
        """Like the service: the pass is recorded as the due state and audited (manual)."""
        record = M.RunRecord.begin(workspace_id, "manual", epoch_ms())
        try:
            result, timings = self._call(workspace_id, method_name, args, None)
        except Exception as exc:
            self.ledger.record_run(record.finish("error", epoch_ms(), M.describe_error(exc)))
            raise
        record.add(result)
        self.ledger.record_pass(
            workspace_id, result.get("nextDueAt"), result["remaining"], record.startedAt
        )
        self.ledger.record_run(record.finish("ok", epoch_ms()))
        return result, timings

    async def run_maintenance(self, workspace_id, method_name, body, caller):
        return await self._run(self._maintenance, workspace_id, method_name, body)

    async def maintenance_runs(self, workspace_id, limit):
        return await self._run(self.ledger.runs, workspace_id, limit)

    # ---- workspaces (admin) -------------------------------------------------------------------------
    def create_now(self, workspace_id=None, blueprint=None, label=None) -> dict:
        """Create a workspace (what `POST /v1/workspaces` does), from this thread."""
        chosen = (
            parse_blueprint(blueprint) if blueprint is not None else load_default_blueprint(None)
        )
        record, token = self.control.create(chosen, [], workspace_id, label)
        path = self.path(record["id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        Workspace(path, synchronous=self.synchronous).close()
        [grant] = self.control.tokens.grants(record["id"])
        return {"workspace": record, "token": token, "tokenId": grant.token_id}

    async def create(self, workspace_id, blueprint, label):
        return await self._run(self.create_now, workspace_id, blueprint, label)

    async def list(self, limit, after):
        return await self._run(self.control.list, limit, after)

    def _get(self, workspace_id: str) -> dict:
        resident = workspace_id in self.open
        return {
            **self.control.get(workspace_id),
            "resident": resident,
            "durability": {**self.control.durability(workspace_id), "resident": resident},
            "location": self.control.locations.location(workspace_id),
        }

    async def get(self, workspace_id):
        return await self._run(self._get, workspace_id)

    def _delete(self, workspace_id: str) -> dict:
        self.control.get(workspace_id)  # NotFound when absent
        self._close(workspace_id)
        shutil.rmtree(self.path(workspace_id).parent, ignore_errors=True)
        deleted = delete_visible_snapshots(self.store, workspace_id)
        self.control.delete(workspace_id)
        return {"deleted": workspace_id, "snapshotsDeleted": deleted > 0}

    async def delete(self, workspace_id):
        return await self._run(self._delete, workspace_id)

    # ---- tokens (admin) -----------------------------------------------------------------------------
    def _create_token(self, workspace_id, scope, label, expires_in_s) -> dict:
        expires_at = epoch_ms() + expires_in_s * 1000 if expires_in_s is not None else None
        return self.control.tokens.issue(workspace_id, scope, label, expires_at)

    async def create_token(self, workspace_id, scope, label, expires_in_s):
        return await self._run(self._create_token, workspace_id, scope, label, expires_in_s)

    async def list_tokens(self, workspace_id):
        return await self._run(self.control.tokens.list_for, workspace_id)

    def _revoke_token(self, workspace_id: str, token_id: str) -> dict:
        self.control.tokens.revoke(workspace_id, token_id)
        return {"revoked": token_id}

    async def revoke_token(self, workspace_id, token_id):
        return await self._run(self._revoke_token, workspace_id, token_id)


class EngineDurability:
    """The operator's snapshots, restores, hibernation and vector bindings over the engine
    gateway's files (its `durability_admin`)."""

    def __init__(self, gateway: EngineGateway):
        self.gateway = gateway

    def _snapshot(self, workspace_id: str, reason: str = "manual") -> dict:
        self.gateway.control.get(workspace_id)
        return take_snapshot(
            self.gateway.path(workspace_id), self.gateway.store, workspace_id, reason=reason
        )

    async def snapshot(self, workspace_id):
        return await self.gateway._run(self._snapshot, workspace_id)

    def _list_snapshots(self, workspace_id: str) -> list[dict]:
        self.gateway.control.get(workspace_id)
        return list_snapshots(self.gateway.store, workspace_id)

    async def list_snapshots(self, workspace_id):
        return await self.gateway._run(self._list_snapshots, workspace_id)

    def _prune_snapshots(self, workspace_id: str, keep: int) -> dict:
        taken = self._snapshot(workspace_id, "prune")  # the newest is the file as it is
        return {
            "workspace": workspace_id,
            "snapshot": taken,
            "deleted": prune(self.gateway.store, workspace_id, keep),
            "kept": list_versions(self.gateway.store, workspace_id),
        }

    async def prune_snapshots(self, workspace_id, keep):
        return await self.gateway._run(self._prune_snapshots, workspace_id, keep)

    def _restore(self, workspace_id: str, version: str) -> dict:
        self.gateway.control.get(workspace_id)
        self.gateway._close(workspace_id)
        result = restore_snapshot(
            self.gateway.store, workspace_id, self.gateway.path(workspace_id), version, publish=True
        )
        return restored_answer(workspace_id, result)

    async def restore(self, workspace_id, version):
        return await self.gateway._run(self._restore, workspace_id, version)

    async def restore_to_moment(self, workspace_id, moment):
        self.gateway.control.get(workspace_id)
        raise InvalidArgument(
            "restoring to a moment needs continuous replication "
            "(MINISPHERE_REPLICATION=sync or async); restore a snapshot "
            "version instead"
        )

    def _rebind_vectors(self, workspace_id: str, vector: dict) -> dict:
        """As the service does it, but at once: the blueprint first, then every entry."""
        spec = parse_blueprint({"bindings": {"vector": vector}}).bindings.vector
        if spec is None:
            raise InvalidArgument("a vector binding is required (its provider at least)")
        wanted = self.gateway.control.set_vector_binding(workspace_id, spec.model_dump())[
            "blueprint"
        ]["bindings"]["vector"]
        report = self.gateway.workspace(workspace_id).enable_vectors(
            make_provider(spec.embedder_spec()), replace=True
        )
        return {
            **self._vector_binding(workspace_id),
            "rebind": {
                "provider": spec.provider,
                "state": "done",
                "embedded": report["embedded"],
                "total": report["total"],
                "error": None,
                "startedAt": time.time(),
                "finishedAt": time.time(),
            },
            "blueprint": wanted,
        }

    async def rebind_vectors(self, workspace_id, vector):
        return await self.gateway._run(self._rebind_vectors, workspace_id, vector)

    def _vector_binding(self, workspace_id: str) -> dict:
        vectors = self.gateway.workspace(workspace_id).vectors
        blueprint = self.gateway.control.get(workspace_id)["blueprint"]
        return {
            "workspace": workspace_id,
            "blueprint": (blueprint.get("bindings") or {}).get("vector"),
            "file": vectors.state()
            if vectors is not None
            else {"provider": None, "dim": None, "missing": None},
            "rebind": None,
        }

    async def vector_binding(self, workspace_id):
        return await self.gateway._run(self._vector_binding, workspace_id)

    def _hibernate(self, workspace_id: str) -> dict:
        self.gateway.control.get(workspace_id)
        if workspace_id not in self.gateway.open:
            return {
                "workspace": workspace_id,
                "hibernated": False,
                "why": "not resident",
                "snapshot": None,
                "pendingSnapshot": False,
            }
        self.gateway._close(workspace_id)
        taken = self._snapshot(workspace_id, "hibernate")
        return {
            "workspace": workspace_id,
            "hibernated": True,
            "why": None,
            "snapshot": taken["version"],
            "pendingSnapshot": False,
        }

    async def hibernate(self, workspace_id):
        return await self.gateway._run(self._hibernate, workspace_id)


class EngineTransfer:
    """The import/export operations of `minisphere.http.routes.transfer` over the gateway's workspaces."""

    def __init__(self, gateway: EngineGateway):
        self.gateway = gateway
        self.imports: dict[str, ImportSession] = {}

    def _export(self, workspace_id: str) -> list[str]:
        return list(export_lines(self.gateway.workspace(workspace_id).conn, now_ms=epoch_ms()))

    async def export_pages(self, workspace_id: str):
        lines = await self.gateway._run(self._export, workspace_id)
        for start in range(0, len(lines), EXPORT_PAGE_LINES):
            yield lines[start : start + EXPORT_PAGE_LINES]

    def _import(self, workspace_id, key, header, lines, first, final) -> dict:
        if not key.isalnum():
            raise TransferError("key must be letters or digits")
        workspace = self.gateway.workspace(workspace_id)
        session = self.imports.get(key)
        if session is None or session.workspace is not workspace:
            session = self.imports[key] = ImportSession(workspace, header, key)
        session.feed([parse_record(line, first + i + 1) for i, line in enumerate(lines)], first)
        if final:
            del self.imports[key]
            return session.finish(first + len(lines) - 1)
        return {"applied": session.applied, "expected": session.total, **session.importer.report}

    async def import_chunk(self, workspace_id, key, header, lines, first, final):
        return await self.gateway._run(self._import, workspace_id, key, header, lines, first, final)


def engine_api(gateway: EngineGateway):
    """The service's HTTP surface over the gateway, import and export included."""
    return build_api(gateway, [], transfer=EngineTransfer(gateway))


class SyncASGITransport(httpx.BaseTransport):
    """httpx's ASGI transport for a sync `httpx.Client`: every request runs on one event loop
    in a background thread, where the app lives (real HTTP semantics, no server process)."""

    def __init__(self, app):
        self._asgi = httpx.ASGITransport(app=app)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, daemon=True, name="sync-asgi-transport"
        )
        self._thread.start()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()

        async def send():
            answer = await self._asgi.handle_async_request(
                httpx.Request(request.method, request.url, headers=request.headers, content=content)
            )
            return answer.status_code, answer.headers, await answer.aread()

        status, headers, body = asyncio.run_coroutine_threadsafe(send(), self._loop).result()
        return httpx.Response(status, headers=headers, content=body, request=request)

    def close(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()


@contextlib.contextmanager
def workspace_http(folder, workspace_id: str, clock=None):
    """A sync HTTP client of the real app over engine files in `folder`, holding the write
    token of one new workspace (`clock`: the engine's, a `ManualClock` in tests of time)."""
    gateway = EngineGateway(folder, clock=clock)
    token = gateway.create_now(workspace_id)["token"]
    transport = SyncASGITransport(engine_api(gateway))
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=BASE_URL, transport=transport, headers=headers) as client:
            yield client
    finally:
        transport.close()
        gateway.close()


def answer_of(http, workspace_id: str, method: str, **body):
    """The 200 answer of one call to `workspace_id` (anything else fails the test)."""
    response = http.post(f"/v1/w/{workspace_id}/{method}", json=body)
    assert response.status_code == 200, response.text
    return response.json()


@contextlib.contextmanager
def serve(app):
    """Run `app` with uvicorn on 127.0.0.1 (a free port) in a thread, its lifespan entered (the
    MCP endpoint's session manager runs there); yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="engine-gateway-uvicorn"
    )
    thread.start()
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()
