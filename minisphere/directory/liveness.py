"""Ending a resident actor that stopped answering: a stopped process, a wedged event loop, a
node gone silent. The directory asks every resident for its activity once a round; one whose
every ask went unanswered for HUNG_AFTER_S is killed and forgotten, and its workspace's next
call wakes it again, from its newest durable state, as after a crash (nothing acknowledged was
only in the process: a write is answered after its commit, and after the replica's
confirmation in sync mode).

The bound is far above what a loaded node needs to answer the ask (it is answered on the
actor's event loop, which never waits for SQLite): ending an actor that was only slow costs
its callers one `503` for the calls it was running, never an acknowledged write.
"""

from __future__ import annotations

import logging

from minisphere.directory.activation import Activator
from minisphere.directory.residents import ResidentTable

log = logging.getLogger("minisphere.directory")

HUNG_AFTER_S = 30.0  # every ask for its activity unanswered this long: the actor is ended


class Liveness:
    def __init__(
        self, residents: ResidentTable, activator: Activator, hung_after_s: float = HUNG_AFTER_S
    ):
        self.residents = residents
        self.activator = activator
        self.hung_after_s = hung_after_s
        self.ended = 0  # hung actors ended since the directory started

    async def end_hung(self) -> list[str]:
        """Ask the residents (at most once per the table's refresh interval) and end those
        silent past the bound; the workspaces whose actors were ended."""
        await self.residents.refresh()
        hung = self.residents.silent(self.hung_after_s)
        for workspace_id, resident in hung.items():
            log.warning(
                "workspace %s: its actor %s answered nothing for %.0f s; ended, the next call "
                "wakes the workspace again",
                workspace_id,
                resident.actor_name,
                self.hung_after_s,
            )
            await self.activator.retire(workspace_id, resident.handle)
        self.ended += len(hung)
        return list(hung)
