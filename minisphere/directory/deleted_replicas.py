"""Deleted creations whose replica is deleted again after the node sweeps, until it stays empty.

A killed actor's file may be shipped by its node's daemon until that node's sweep lets the daemon
go of it, and an upload already under way then (or retried after the store was away) still lands
afterwards. So the replica of a deleted creation is deleted once more after each sweep that
reached its node, until QUIET_RECHECKS such deletes in a row found nothing; the directory sweeps
again RECHECK_AFTER_S later while any is left.
"""

from __future__ import annotations

QUIET_RECHECKS = 2  # deletes in a row that found nothing: the replica stays empty
RECHECK_AFTER_S = 10.0  # between those deletes: longer than an upload under way takes to land

Creation = tuple[str, str | None]  # (workspace id, generation)


class DeletedReplicas:
    def __init__(self) -> None:
        # creation -> (the node it lived on, None when none; quiet deletes so far)
        self._pending: dict[Creation, tuple[str | None, int]] = {}

    def __bool__(self) -> bool:
        return bool(self._pending)

    def add(self, creation: Creation, node: str | None) -> None:
        self._pending[creation] = (node, 0)

    def take(self) -> dict[Creation, tuple[str | None, int]]:
        """Those to delete again after this sweep (each is put back unless it is done)."""
        taken, self._pending = self._pending, {}
        return taken

    def keep(self, creation: Creation, node: str | None, quiet: int) -> None:
        """Not deleted again this time (its node not reached, or the store failed)."""
        self._pending.setdefault(creation, (node, quiet))

    def deleted_again(self, creation: Creation, node: str | None, quiet: int, found: int) -> None:
        """Deleted once more, `found` objects gone: something landed since, or it stays."""
        quiet = quiet + 1 if found == 0 else 0
        if quiet < QUIET_RECHECKS:
            self._pending.setdefault(creation, (node, quiet))
