"""The directory's background round, every IDLE_SWEEP_S: the nodes swept when one joined (or a
sweep is owed), adopted actors that serve nothing and hung ones ended, idle residents
hibernated, owed forget clean-ups paid, spares on the wrong nodes retired; every so many rounds,
owed snapshot deletions retried and every node swept. What the directory actor runs on its event
loop; here without Ray, over its parts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from minisphere.directory.assembly import DirectoryParts

log = logging.getLogger("minisphere.directory")
SNAPSHOT_DEBT_EVERY_ROUNDS = 12  # sweep rounds between retries of owed snapshot deletions
NODE_SWEEP_EVERY_ROUNDS = 120  # sweep rounds (of IDLE_SWEEP_S) between sweeps of every node


class SweepRounds:
    def __init__(self, parts: DirectoryParts, alive_nodes: Callable[[], Iterable[str]]):
        self.parts = parts
        self.alive_nodes = alive_nodes
        self.rounds = 0
        self.nodes = set(alive_nodes())

    async def run_forever(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await self.run_once()
            except Exception:  # keep sweeping
                log.warning("idle sweep failed", exc_info=True)

    async def run_once(self) -> None:
        parts = self.parts
        self.rounds += 1
        # a node that joined (or came back under a new id) may hold copies that were deleted
        # or moved on while it was away: it is swept now, not in ten minutes
        alive = set(self.alive_nodes())
        joined, self.nodes = alive - self.nodes, alive
        if joined:
            parts.workspaces.sweep_soon()
        else:
            parts.workspaces.sweep_if_owed()
        let_go = await parts.residents.confirm_adopted()
        if let_go:
            log.warning("adopted actors that served nothing ended: %s", let_go)
        await parts.liveness.end_hung()  # before the idle sweep: not hibernated
        await parts.hibernation.sweep()
        parts.cleanups.pay_soon()
        parts.pool.retire(parts.placement.misplaced_spares(parts.pool.ready_nodes()))
        if self.rounds % SNAPSHOT_DEBT_EVERY_ROUNDS == 0:
            await parts.workspaces.settle_snapshot_debts()
        if self.rounds % NODE_SWEEP_EVERY_ROUNDS == 0:
            await parts.workspaces.sweep_nodes()
