"""Paying the forget clean-ups that hibernated workspaces still owe.

A workspace that hibernated while its store was down may still hold, in the replica's history
or in snapshot versions, text it forgot (control/cleanup_debts.py records the debt). Opening
its file pays what the file's ledger says is owed, and hibernating it again reports whether
that worked; so paying a debt is a wake and a hibernation, done here in the background when it
is due, a few at a time, so neither a store that stays down nor a thousand debts at once can
hold the directory's loop or take its wake slots from callers.
"""

from __future__ import annotations

import asyncio
import logging

from minisphere.control.plane import ControlPlane
from minisphere.directory.activation import Activator
from minisphere.directory.hibernation import Hibernation
from minisphere.directory.residents import ResidentTable
from minisphere.errors import NotFound

log = logging.getLogger("minisphere.directory")
CLEANUP_WAKES_PER_ROUND = 4  # debts a round pays at most, one after another
CLEANUP_REASON = "forget clean-up"


class OwedCleanups:
    def __init__(
        self,
        control: ControlPlane,
        residents: ResidentTable,
        activator: Activator,
        hibernation: Hibernation,
    ):
        self.control = control
        self.residents = residents
        self.activator = activator
        self.hibernation = hibernation
        self._round: asyncio.Task[list[str]] | None = None
        self.paid = 0  # debts paid since the directory started

    def pay_soon(self) -> None:
        """At each round of the directory's loop: pay the debts that are due, in the
        background (one round at a time)."""
        if self._round is not None and not self._round.done():
            return
        if not self.control.cleanup_debts.due(1):
            return
        self._round = asyncio.get_running_loop().create_task(self.pay_due())

    async def pay_due(self) -> list[str]:
        """Wake and hibernate again each workspace whose debt is due; which were paid. A
        resident one is left alone: its own hibernation will say."""
        paid: list[str] = []
        for workspace_id in self.control.cleanup_debts.due(CLEANUP_WAKES_PER_ROUND):
            if self.residents.get(workspace_id) is not None:
                continue
            try:
                await self.activator.activate(workspace_id)
            except NotFound:  # deleted meanwhile: nothing of it is left to clean
                self.control.cleanup_debts.drop(workspace_id)
                continue
            except Exception as exc:  # noqa: BLE001 - tried again on the back-off
                log.warning(
                    "workspace %s: a wake to pay its forget clean-up failed: %r", workspace_id, exc
                )
                self.control.cleanup_debts.note(workspace_id, True, f"wake failed: {exc!r}"[:300])
                continue
            # a hibernation notes its own outcome; one that did not run must not leave the
            # debt due at once again (every round would wake the workspace)
            answer = await self.hibernation.hibernate(workspace_id, CLEANUP_REASON)
            if not answer["hibernated"]:
                self.control.cleanup_debts.note(workspace_id, True, answer["why"])
            elif self.control.cleanup_debts.get(workspace_id) is None:
                self.paid += 1
                paid.append(workspace_id)
        return paid
