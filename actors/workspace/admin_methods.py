"""The admin's operations on a workspace actor's file: snapshot, restore (to a version or to a
moment of the replica), pruning snapshots, and the pages of an export or the chunks of an
import. Each is admitted like a call (so a hibernation waits for it, and a restore holds every
other call while it swaps the file) and runs on a worker thread, never on the event loop.

A mixin of `WorkspaceActor` (Ray takes inherited methods as actor methods): it uses the
actor's `host`, `tokens`, `due`, `positions`, `_admission()` and `_report`, and owns
`_transfers`, the import/export sessions, made on the first export or import.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from actors.actor_methods import DirectoryMethod
from minisphere.errors import as_named_error

if TYPE_CHECKING:
    from actors.workspace.transfer_steps import TransferSessions


async def run_on_thread(fn, *args) -> dict:
    """`fn(*args)` on a worker thread, answered as an envelope."""
    try:
        return {"ok": True, "result": await asyncio.to_thread(fn, *args)}
    except Exception as exc:  # noqa: BLE001 - answered as a named error
        return {"ok": False, "error": as_named_error(exc)}


class AdminFileMethods:
    _transfers: TransferSessions | None = None

    # ---- import and export -----------------------------------------------------------------------
    @property
    def transfers(self) -> TransferSessions:
        """The import/export sessions, made on first use: the transfer format's models are no
        part of what a spare imports to start and bind (most workspaces are never exported)."""
        if self._transfers is None:
            from actors.workspace.transfer_steps import TransferSessions
            self._transfers = TransferSessions()
        return self._transfers

    def _close_transfers(self) -> None:
        if self._transfers is not None:
            self._transfers.close()

    def _drop_exports(self) -> None:
        """After a forget: the export copies were taken before it, so they must not be served."""
        if self._transfers is not None:
            self._transfers.drop_exports()

    async def export_page(self, export_id: str, number: int, max_lines: int,
                          token_hash: str) -> dict:
        """The next page of an export (see transfer_steps.py), admitted like a call."""
        try:
            self.tokens.authorize_admin(token_hash, "export")
            async with self._admission().admit():
                self.host.ensure_open()
                return await run_on_thread(self.transfers.export_page, self.host, export_id,
                                           number, max_lines)
        except Exception as exc:  # noqa: BLE001 - answered as a named error
            return {"ok": False, "error": as_named_error(exc)}

    async def import_chunk(self, key: str, header: str, lines: list[str], first: int,
                           final: bool, token_hash: str) -> dict:
        """Apply one chunk of an import, admitted like a call; like any write it notes the
        scheduler first (an import changes what is due)."""
        try:
            self.tokens.authorize_admin(token_hash, "import")
            async with self._admission().admit():
                self.host.ensure_open()
                self.due.before_bulk_write()
                return await run_on_thread(self.transfers.import_chunk, self.host, key, header,
                                           lines, first, final)
        except Exception as exc:  # noqa: BLE001 - answered as a named error
            return {"ok": False, "error": as_named_error(exc)}

    # ---- snapshots and restores ------------------------------------------------------------------
    # Each takes the caller's admin token hash: a handle to this actor is no admin credential.
    async def snapshot(self, reason: str, token_hash: str) -> dict:
        try:
            self.tokens.authorize_admin(token_hash, "a snapshot")
            async with self._admission().admit():
                return await run_on_thread(self.host.states.snapshot_now, reason)
        except Exception as exc:  # noqa: BLE001 - refused, or hibernating
            return {"ok": False, "error": as_named_error(exc)}

    async def restore(self, version: str | None, token_hash: str) -> dict:
        """Restore a snapshot version (see `_swap_file`)."""
        return await self._swap_file(self.host.states.restore, version, "restore", "version",
                                     token_hash)

    async def restore_to_moment(self, moment: str, token_hash: str) -> dict:
        """Restore the replica's state at `moment` (see `_swap_file`)."""
        return await self._swap_file(self.host.states.restore_to_time, moment,
                                     "restore-to-moment", "moment", token_hash)

    async def _swap_file(self, restore, target: str | None, action: str, field: str,
                         token_hash: str) -> dict:
        """A restore: hold new calls, let those in flight finish, swap the file, reopen; then
        audit it, and tell the scheduler (its due state was about the old file) and the
        directory (the restored state's new position)."""
        try:
            self.tokens.authorize_admin(token_hash, "a restore")
            async with self._admission().exclusive():
                answer = await run_on_thread(restore, target)
        except Exception as exc:  # noqa: BLE001 - hibernating
            return {"ok": False, "error": as_named_error(exc)}
        if answer["ok"]:
            self._report(DirectoryMethod.AUDIT_EVENT, action, {field: answer["result"][field]})
            self.due.forget()
            self.positions.report()
        return answer

    async def prune_snapshots(self, keep: int, token_hash: str) -> dict:
        """Keep the newest `keep` versions, the first of them the file as it is now."""
        try:
            self.tokens.authorize_admin(token_hash, "pruning snapshots")
            async with self._admission().admit():
                return await run_on_thread(self.host.states.prune_snapshots, keep)
        except Exception as exc:  # noqa: BLE001 - hibernating
            return {"ok": False, "error": as_named_error(exc)}
