"""WorkspaceActor: the only owner of one workspace's SQLite file (a Durable Object on Ray).

One write path: every write goes onto the group-commit writer's queue (one thread, one
connection) and each caller is answered after the batch holding its write committed. A write
the workspace's hooks take part in (a capture on a vector-bound file) is first prepared on a
read-pool thread — embedded there, outside any transaction and lock — and then queued. Reads
(recall included, bound or not) run on a small pool of read-only connections. The event loop
never touches SQLite.

Warm spares: an actor may start unbound (`launch=None`): it does its imports and the contract
check, then waits in the directory's pool until `bind(launch)` gives it a workspace — opening
a file is then all a wake costs. A bound actor serves one workspace at a time: `bind` refuses a
second while one is bound, and `hibernate` lets the workspace go entirely (its file closed and
unregistered from replication, its objects and the text caches dropped) before the directory
hands the process to the next wake, so one process never holds two tenants' data. Callers
reach it through `serve`, which names the workspace meant and refuses a call for any other.
Actor names are `workspace-actor:<random>` and never change; the directory records which actor
holds which workspace, and an actor Ray restarts after a crash asks the directory what it was
bound to and opens that file again.

The file, writer, readers and snapshotter live in a `WorkspaceHost` (`opening.py` opens it from
the launch); an `Admission` admits calls, holds them while a restore swaps the file, and
refuses them (`hibernating`, not run, safe to resend) once the actor hibernates. Every call
carries the caller's token hash, checked here against the workspace's token hashes (or the
admin's), so a caller inside the cluster can call the actor directly. The actor reports its
node (placement) and every snapshot attempt to the directory, fire-and-forget. The admin's
operations on the file (snapshot, restore, export, import) are its `AdminFiles` (admin_methods.py).

Every method callers reach a workspace by answers a `Reply` (minisphere/reply.py), never a
raised exception, so callers can tell engine errors from actor failures: done with the result,
or refused with the named error, with its timings (milliseconds):
`prepare_ms` (embedding before the write was queued), `queue_ms` (waiting for the writer / a
reader thread), `engine_ms` (the transaction, or the read), `batch` (writes committed
together), `actor_ms` (inside this actor, end to end).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import ray

from actors.handles import Handle
from actors.process_logging import log_to_stderr
from actors.sent_queries import adopt_sent_query, recall_reply
from actors.workspace.admin_methods import FILE_METHODS, AdminFiles
from actors.workspace.admission import Admission
from actors.workspace.directory_news import DirectoryNews
from actors.workspace.due_notes import DueNotes
from actors.workspace.node_ray import was_reconstructed
from actors.workspace.opening import open_host, opening_progress
from actors.workspace.position_reports import PositionReports
from actors.workspace.process_facts import ProcessFacts
from actors.workspace.process_memory import (
    drop_process_wide_traces,
    rss_bytes,
    settle_startup_heap,
)
from actors.workspace.token_checks import TokenChecks
from actors.workspace.write_path import WritePath
from actors.workspace_call import WorkspaceCall
from minisphere.contract.startup import verified_contracts
from minisphere.control.auth import TokenGrant
from minisphere.directory.launch import WorkspaceLaunch
from minisphere.engine.hooks import NOT_PREPARED
from minisphere.engine.methods import find_method
from minisphere.errors import (
    InternalError,
    WorkspaceHibernating,
    WorkspaceUnavailable,
    as_named_error,
)
from minisphere.hosting.host import WorkspaceHost
from minisphere.reply import Reply
from minisphere.settings import restrict_file_modes
from minisphere.wire.actor_methods import DirectoryMethod, ServedMethod
from minisphere.wire.residency import (
    Activation,
    Activity,
    BindAnswer,
    HibernationReport,
    HostHibernation,
    OpeningProgress,
    SnapshotStatus,
    SpareReady,
)
from minisphere.wire.timings import CallTimings

if TYPE_CHECKING:
    from actors.workspace.isolation_audit import Retained

log = logging.getLogger("minisphere.workspace_actor")


DIRECTORY_TIMEOUT_S = 30.0  # a restarted actor asking what it was bound to
# What callers reach through `serve` (each checked against the workspace served now).
SERVED_METHODS = frozenset(ServedMethod)


def log_opened(
    host: WorkspaceHost, launch: WorkspaceLaunch, name: str | None, restarted: bool
) -> None:
    # DEBUG: a line per wake is read by Ray's log monitor too (a restore logs its own)
    assert host.workspace is not None  # open_host opened the file
    log.debug(
        "workspace %s open at %s in %s (schema %s, restarted=%s, from %s)",
        launch.workspace_id,
        launch.path,
        name,
        host.workspace.schema_version,
        restarted,
        host.activation["source"],
    )


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class WorkspaceActor:
    def __init__(
        self,
        launch: WorkspaceLaunch | None = None,
        directory: Handle | None = None,
        admin_token_hash: str = "",
        grants: tuple[TokenGrant, ...] = (),
    ):
        restrict_file_modes()  # spares too: a `ray start` cluster has its own umask
        log_to_stderr()
        self.contracts = verified_contracts()  # a broken pin must not open any file
        if launch is None:  # no tenant's object exists yet: only the startup heap is frozen
            settle_startup_heap()
        self.directory = directory  # handle, for reports (may be None)
        self.news = DirectoryNews(directory, lambda: self.workspace_id)
        self._directory_contacted = False
        context = ray.get_runtime_context()
        self.name = context.get_actor_name()
        self.node_id = context.get_node_id()
        self.restarted = was_reconstructed(context)
        self.facts = ProcessFacts(self.name, self.node_id, self.restarted)
        self.workspace_id: str | None = None
        self.host: WorkspaceHost | None = None
        self.admission: Admission | None = None
        self.due: DueNotes | None = None
        self.tokens = TokenChecks(
            admin_token_hash, lambda used: self.news.tell(DirectoryMethod.TOKENS_USED, used)
        )
        self.launch: WorkspaceLaunch | None = None
        self.write_path: WritePath | None = None
        self.positions = PositionReports(
            lambda: self.host.durable_position() if self.host else None, self._report_position
        )
        self.files = AdminFiles(self)  # the admin's operations on the file
        if launch is None and self.restarted and directory is not None:
            # Ray re-ran the constructor after a crash: reopen what this actor was bound to
            binding = ray.get(
                directory.binding_of_actor.remote(self.name), timeout=DIRECTORY_TIMEOUT_S
            )
            if binding is not None:
                launch, grants = binding
        if launch is not None:
            self._bind(launch, grants)

    async def ready(self) -> SpareReady:
        """What the directory's pool records of a spare once its imports are done.
        `runtimeEnv`: any non-empty one (inherited from whoever started the directory) makes
        Ray start workers through its setup_worker.py shim, which makes every start dearer."""
        if self.directory is not None and not self._directory_contacted:
            # The first message a process sends to an actor is slow to submit (Ray looks the
            # actor up and connects to it), and a bound actor writes to the directory (token
            # use, positions, the scheduler's notes). Sent now, that first contact is paid by
            # the spare's start instead of a woken workspace's first call.
            self._directory_contacted = True
            self.directory.ping.remote()
        facts = self.facts
        if not facts.binds and not facts.fresh_rss_bytes:
            facts.fresh_rss_bytes = rss_bytes()
        return {
            "name": self.name,
            "pid": os.getpid(),
            "nodeId": self.node_id,
            "bound": self.workspace_id,
            "serving": self.host is not None
            and self.admission is not None
            and not self.admission.hibernating,
            "runtimeEnv": ray.get_runtime_context().get_runtime_env_string(),
        }

    async def bind(
        self, launch: WorkspaceLaunch, grants: tuple[TokenGrant, ...] = ()
    ) -> Reply[BindAnswer]:
        """Give this actor its one workspace: open the file (restoring it from a snapshot if it
        is missing). A reply; a second bind is refused."""
        started = time.perf_counter()
        try:
            # the directory records the placement from this answer (no report back to it)
            activation = await asyncio.to_thread(self._bind, launch, grants, False)
        except Exception as exc:  # noqa: BLE001 - answered as a named error
            return Reply.failed(as_named_error(exc))
        # while the answer travels to the directory and the caller's call travels here
        assert self.host is not None  # _bind opened it
        self.host.calls.warm_reads()
        # the directory's own clock on a bind also holds the call's way there and back
        return Reply.done(
            {
                "activation": activation,
                "nodeId": self.node_id,
                "pid": os.getpid(),
                "openMs": round((time.perf_counter() - started) * 1e3, 3),
            }
        )

    async def opening(self) -> OpeningProgress:
        """How far the bind under way has come (see `opening_progress`)."""
        return await asyncio.to_thread(opening_progress, self.launch)

    def _bind(
        self, launch: WorkspaceLaunch, grants: tuple[TokenGrant, ...], report_placement: bool = True
    ) -> Activation:
        """Open the workspace. `report_placement`: tell the directory where it opened, which
        a bind the directory asked for does not need (it reads the answer), and a process's
        first message to an actor is slow to submit, which would land inside every wake."""
        if self.workspace_id is not None:
            if self._serves(launch):
                # Ray restarted this actor while the directory bound it, and the restart bound
                # it first (the directory records the name before the bind): already done
                assert self.host is not None  # _serves checked it
                return self.host.activation
            raise InternalError(
                f"actor {self.name} already serves workspace "
                f"{self.workspace_id}; it is never bound to another"
            )
        self.workspace_id = workspace_id = launch.workspace_id  # claimed, even if opening fails
        self.launch = launch
        self.facts.binds += 1
        self.host = open_host(
            launch,
            self.node_id,
            on_snapshot_status=self._report_snapshot,
            on_durable=self._durable_advanced,
        )
        self.tokens.set_grants(grants)
        self.admission = Admission(workspace_id)
        self.due = DueNotes(workspace_id, self.directory)
        self.write_path = WritePath(
            self.host, self.due, self.news, self.positions, self.files.drop_exports
        )
        self.facts.last_call_at = time.time()
        log_opened(self.host, launch, self.name, self.restarted)
        if report_placement:  # Ray re-ran the constructor: the directory asked nothing
            self.news.tell(DirectoryMethod.PLACED, self.node_id, self.host.activation)
        if self.host.activation["source"] == "snapshot":
            self.due.forget()  # opened from a snapshot: the recorded due state is stale
        return self.host.activation

    def _serves(self, launch: WorkspaceLaunch) -> bool:
        """This actor has the launch's workspace open, as the same creation of its id."""
        return (
            self.host is not None
            and self.launch is not None
            and self.workspace_id == launch.workspace_id
            and self.launch.generation == launch.generation
        )

    def _durable_advanced(self, _position: int) -> None:
        """On the writer's thread: the replica holds more (async replication learns it after
        the answers went out): the directory hears it within the report interval."""
        loop = self.write_path.loop if self.write_path is not None else None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.positions.after_write)

    async def set_tokens(self, grants: tuple[TokenGrant, ...]) -> None:
        """The directory's current token grants of this workspace: the authoritative set,
        checked on every call (a revoked token is refused from the next call on)."""
        self.tokens.set_grants(grants)

    def _writes(self) -> WritePath:
        if self.write_path is None:
            raise WorkspaceUnavailable(f"actor {self.name} serves no workspace yet")
        return self.write_path

    def _admission(self) -> Admission:
        if self.admission is None:
            raise WorkspaceUnavailable(f"actor {self.name} serves no workspace yet")
        return self.admission

    def _report_position(self, position: int, stored: int | None) -> None:
        assert self.launch is not None  # a position is known only while a file is open
        self.news.tell(DirectoryMethod.POSITION, self.launch.generation, position, stored)

    def _report_snapshot(self, status: SnapshotStatus) -> None:
        self.news.tell(DirectoryMethod.SNAPSHOT_STATUS, status)
        self.positions.report(status.get("lastPosition"))

    async def serve(self, workspace_id: str, method: str, *args: Any) -> Reply[Any]:
        """Run one of the methods callers reach a workspace by, if this actor serves
        `workspace_id` now. A process outlives a workspace's residency (it is recycled through
        the spare pool), so a handle cached for a workspace that has since hibernated may
        reach it while it is a spare or serves another tenant: that call is refused as
        `hibernating` (it ran nowhere; the caller wakes its workspace and sends it again)."""
        if method not in SERVED_METHODS:
            return Reply.failed(InternalError(f"no workspace method {method!r}"))
        if workspace_id != self.workspace_id or self.host is None:
            return Reply.failed(
                WorkspaceHibernating(
                    f"workspace {workspace_id} is not served here any more; the call was not run"
                )
            )
        served: Callable[..., Awaitable[Reply[Any]]] = getattr(
            self.files if method in FILE_METHODS else self, method
        )
        return await served(*args)

    async def call(self, request: WorkspaceCall) -> Reply[Any]:
        """One contract method. A keyed write repeated after it committed answers the stored
        result (timings `replayed`) and writes nothing; a recall's query the caller already
        sent to this workspace's embedder is taken in place of embedding it again, and a
        recall's reply names the embedder (`RecallReply`)."""
        started = time.perf_counter()
        method_name, body = request.method, request.body
        self.facts.note_call()
        timings: CallTimings = {}
        try:
            assert self.host is not None  # serve() let the call in: a workspace is bound
            method = find_method(method_name)
            self.tokens.authorize(method, request.caller)
            ahead = adopt_sent_query(self.host.embedder, body, request.sent_query)
            read = method.access == "read"
            calls = self.host.calls
            # a bound recall's query goes to the embedder now, while the call waits for
            # admission and a reader thread
            started_read = calls.start_read(method_name, body) if read else NOT_PREPARED
            async with self._admission().admit():
                if read:
                    result, timings = await asyncio.wrap_future(
                        calls.submit_read(method_name, body, started_read)
                    )
                else:
                    result, timings = await self._writes().write(
                        method, body or {}, request.idempotency_key
                    )
        except Exception as exc:  # noqa: BLE001 - answered as a named error
            timings["actor_ms"] = (time.perf_counter() - started) * 1e3
            return Reply.failed(as_named_error(exc), timings=timings)
        timings["actor_ms"] = (time.perf_counter() - started) * 1e3
        if method_name == "recall":
            return recall_reply(result, timings, self.host.embedder, ahead)
        return Reply.done(result, timings=timings)

    async def audit_retained(self, hex_needles: list[str]) -> Retained:
        """Where this process still holds any of the needles (isolation_audit.py): run on
        a recycled process, with the previous tenant's id, paths and text, it must find none."""
        from actors.workspace.isolation_audit import retained

        return retained(list(hex_needles))

    async def ping(self) -> dict[str, Any]:
        return {"workspace": self.workspace_id, "pid": os.getpid(), "nodeId": self.node_id}

    async def activity(self) -> Activity:
        """What the directory needs to choose hibernation victims (cheap)."""
        return self.facts.activity(self.host, self.admission)

    # ---- ending ----------------------------------------------------------------------------------
    async def hibernate(self) -> HibernationReport:
        """Refuse new calls, finish those in flight, snapshot if changed, close, and let go of
        everything of the workspace: the process is then a spare again, which the directory
        keeps in its pool or kills. `process` says what the pool's retirement rule needs."""
        if self.host is None:
            return self.facts.spare_hibernated()
        assert self.admission is not None  # bound with the host
        await self.admission.close_for_hibernation()
        self.files.let_go()
        used = self.tokens.take_use()  # in the answer: no message of its own to the directory
        result = await asyncio.to_thread(self._hibernate_and_release)
        return {**result, "tokensUsed": used, "process": self.facts.process()}

    def _hibernate_and_release(self) -> HostHibernation:
        assert self.host is not None  # hibernate() checked it
        result = self.host.hibernate()
        self._release_workspace()
        return result

    def _release_workspace(self) -> None:
        """Forget the workspace this process served: nothing of it (objects, caches, open
        files) may reach the next tenant bound here."""
        self.host = self.admission = self.due = self.launch = self.write_path = None
        self.files.let_go()
        self.workspace_id = None
        self.tokens.forget_workspace()
        drop_process_wide_traces()

    async def durability(self) -> Reply[dict[str, Any]]:
        return Reply.done(
            {
                "nodeId": self.node_id,
                "actor": self.name,
                **(self.host.status() if self.host is not None else {}),
            }
        )

    async def stats(self) -> dict[str, Any]:
        return self.facts.stats(self.host, self.workspace_id, self.contracts)

    async def close(self) -> dict[str, str | None]:
        """Commit what is queued, close every connection. The actor must be killed after."""
        if self.host is not None:
            assert self.admission is not None  # bound with the host
            await self.admission.close_for_hibernation()
            await asyncio.to_thread(self.host.close)
        self.files.let_go()
        return {"closed": self.workspace_id}
