"""The admin's operations on a workspace actor's file: snapshot, restore (to a version or to a
moment of the replica), pruning snapshots, and the pages of an export or the chunks of an
import. Each is admitted like a call (so a hibernation waits for it, and a restore holds every
other call while it swaps the file) and runs on a worker thread, never on the event loop.

The workspace actor owns one (`files`) and sends it these through its `serve` gate; what they
need of the actor is `FileOwner` (file_owner.py). It owns the import/export sessions of the
workspace bound now, made on the first export or import.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from actors.workspace.file_owner import FileOwner
from actors.workspace.vector_rebinds import VectorRebinds
from minisphere.errors import as_named_error
from minisphere.reply import Reply
from minisphere.wire.actor_methods import DirectoryMethod, ServedMethod

if TYPE_CHECKING:
    from actors.workspace.due_notes import DueNotes
    from actors.workspace.transfer_steps import TransferSessions
    from minisphere.hosting.host import WorkspaceHost

P = ParamSpec("P")
T = TypeVar("T")
Target = TypeVar("Target")  # what a restore restores to: a version, or a moment
# the served methods that are the admin's operations on the file (sent to `AdminFiles`)
FILE_METHODS = frozenset(
    {
        ServedMethod.SNAPSHOT,
        ServedMethod.RESTORE,
        ServedMethod.RESTORE_TO_MOMENT,
        ServedMethod.PRUNE_SNAPSHOTS,
        ServedMethod.EXPORT_PAGE,
        ServedMethod.IMPORT_CHUNK,
        ServedMethod.REBIND_VECTORS,
        ServedMethod.VECTOR_BINDING,
    }
)


async def run_on_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Reply[Any]:
    """`fn(*args)` on a worker thread, answered as a reply."""
    try:
        return Reply.done(await asyncio.to_thread(fn, *args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - answered as a named error
        return Reply.failed(as_named_error(exc))


class AdminFiles:
    def __init__(self, owner: FileOwner):
        self.owner = owner
        self._transfers: TransferSessions | None = None
        self.rebinds = VectorRebinds(owner)

    # ---- the workspace bound now (`serve` sends these methods only while there is one) ---------
    @property
    def host(self) -> WorkspaceHost:
        host = self.owner.host
        assert host is not None
        return host

    @property
    def due(self) -> DueNotes:
        due = self.owner.due
        assert due is not None
        return due

    # ---- import and export -----------------------------------------------------------------------
    @property
    def transfers(self) -> TransferSessions:
        """The import/export sessions, made on first use: the transfer format's models are no
        part of what a spare imports to start and bind (most workspaces are never exported)."""
        if self._transfers is None:
            from actors.workspace.transfer_steps import TransferSessions

            self._transfers = TransferSessions()
        return self._transfers

    def let_go(self) -> None:
        """The workspace is let go of (hibernated, closed): its import/export sessions and what
        this process knows of its rebind end with it (a recycled process serves another)."""
        if self._transfers is not None:
            self._transfers.close()
        self._transfers = None
        self.rebinds = VectorRebinds(self.owner)

    def drop_exports(self) -> None:
        """After a forget: the export copies were taken before it, so they must not be served."""
        if self._transfers is not None:
            self._transfers.drop_exports()

    async def export_page(
        self, export_id: str, number: int, max_lines: int, token_hash: str
    ) -> Reply[Any]:
        """The next page of an export (see transfer_steps.py), admitted like a call."""
        try:
            self.owner.tokens.authorize_admin(token_hash, "export")
            async with self.owner._admission().admit():
                self.host.ensure_open()
                return await run_on_thread(
                    self.transfers.export_page, self.host, export_id, number, max_lines
                )
        except Exception as exc:  # noqa: BLE001 - answered as a named error
            return Reply.failed(as_named_error(exc))

    async def import_chunk(
        self, key: str, header: str, lines: list[str], first: int, final: bool, token_hash: str
    ) -> Reply[Any]:
        """Apply one chunk of an import, admitted like a call; like any write it notes the
        scheduler first (an import changes what is due)."""
        try:
            self.owner.tokens.authorize_admin(token_hash, "import")
            async with self.owner._admission().admit():
                self.host.ensure_open()
                self.due.before_bulk_write()
                return await run_on_thread(
                    self.transfers.import_chunk, self.host, key, header, lines, first, final
                )
        except Exception as exc:  # noqa: BLE001 - answered as a named error
            return Reply.failed(as_named_error(exc))

    # ---- snapshots and restores ------------------------------------------------------------------
    # Each takes the caller's admin token hash: a handle to this actor is no admin credential.
    async def snapshot(self, reason: str, token_hash: str) -> Reply[Any]:
        try:
            self.owner.tokens.authorize_admin(token_hash, "a snapshot")
            async with self.owner._admission().admit():
                return await run_on_thread(self.host.states.snapshot_now, reason)
        except Exception as exc:  # noqa: BLE001 - refused, or hibernating
            return Reply.failed(as_named_error(exc))

    async def restore(self, version: str | None, token_hash: str) -> Reply[Any]:
        """Restore a snapshot version (see `_swap_file`)."""
        return await self._swap_file(
            self.host.states.restore, version, "restore", "version", token_hash
        )

    async def restore_to_moment(self, moment: str, token_hash: str) -> Reply[Any]:
        """Restore the replica's state at `moment` (see `_swap_file`)."""
        return await self._swap_file(
            self.host.states.restore_to_time, moment, "restore-to-moment", "moment", token_hash
        )

    async def _swap_file(
        self,
        restore: Callable[[Target], Mapping[str, object]],
        target: Target,
        action: str,
        field: str,
        token_hash: str,
    ) -> Reply[Any]:
        """A restore: hold new calls, let those in flight finish, swap the file, reopen; then
        audit it, and tell the scheduler (its due state was about the old file) and the
        directory (the restored state's new position)."""
        try:
            self.owner.tokens.authorize_admin(token_hash, "a restore")
            async with self.owner._admission().exclusive():
                answer = await run_on_thread(restore, target)
        except Exception as exc:  # noqa: BLE001 - hibernating
            return Reply.failed(as_named_error(exc))
        if answer.ok:
            self.owner.news.tell(
                DirectoryMethod.AUDIT_EVENT, action, {field: answer.unwrap()[field]}
            )
            self.due.forget()
            self.owner.positions.report()
        return answer

    async def rebind_vectors(self, spec: dict[str, Any], token_hash: str) -> Reply[Any]:
        """Start moving the file's vectors to the binding `spec` (see `VectorRebinds`)."""
        try:
            self.owner.tokens.authorize_admin(token_hash, "a rebind")
            async with self.owner._admission().admit():
                return Reply.done(await self.rebinds.start(spec))
        except Exception as exc:  # noqa: BLE001 - refused, or hibernating
            return Reply.failed(as_named_error(exc))

    async def vector_binding(self, token_hash: str) -> Reply[Any]:
        """The file's binding and the rebind under way or last done, if any."""
        try:
            self.owner.tokens.authorize_admin(token_hash, "a vector binding's state")
            return Reply.done(await self.rebinds.state())
        except Exception as exc:  # noqa: BLE001 - refused
            return Reply.failed(as_named_error(exc))

    async def prune_snapshots(self, keep: int, token_hash: str) -> Reply[Any]:
        """Keep the newest `keep` versions, the first of them the file as it is now."""
        try:
            self.owner.tokens.authorize_admin(token_hash, "pruning snapshots")
            async with self.owner._admission().admit():
                return await run_on_thread(self.host.states.prune_snapshots, keep)
        except Exception as exc:  # noqa: BLE001 - hibernating
            return Reply.failed(as_named_error(exc))
