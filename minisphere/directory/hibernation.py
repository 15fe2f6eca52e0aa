"""Hibernation, the idle sweep and the resident cap.

At most `max_resident` workspace actors stay; above the cap the least recently called ones
hibernate (drain, snapshot if changed, close, let go of the workspace) before a new one is
bound, and the sweep hibernates those idle for `idle_s`. A wake holds its slot under the cap
from the moment there is room for it until its bind has ended (`slot_for`). A cleanly
hibernated process is a spare again: it goes back to the pool (`SparePool.give_back`) unless
the pool is full or the process is due for retirement (`residency_policy.retirement_reason`:
too many binds, or grown too far), and only then is it killed. An actor killed after a clean hibernation refused every
call it did not finish, so a caller whose call failed on it may send it again: `ended_cleanly`
tells it so (a recycled one refuses such calls itself, as `hibernating`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator

from minisphere.control.plane import ControlPlane
from minisphere.control.residency_policy import (
    IN_SESSION_S,
    MIB,
    idle_before_hibernation_s,
    lru_victims,
    retirement_reason,
)
from minisphere.directory.actor_runtime import ActorRuntime
from minisphere.directory.residents import Resident, ResidentTable
from minisphere.directory.spares import Spare, SparePool
from minisphere.errors import Overloaded
from minisphere.wire.actor_methods import WorkspaceActorMethod
from minisphere.wire.residency import (
    Hibernated,
    HibernationAnswer,
    HibernationReport,
    HostHibernation,
    ProcessReport,
)

log = logging.getLogger("minisphere.directory")
HIBERNATE_TIMEOUT_S = 60.0  # a workspace actor's drain + snapshot + close
SWEEP_MAX_PER_ROUND = 16  # idle workspaces hibernated per sweep round, at most
CLEAN_EXITS_KEPT = 10_000  # actor ids remembered as cleanly hibernated
ROOM_WAIT_S = 0.01  # re-check pause while other activations fill the cap
# How many evicted actors may still be hibernating (draining, snapshotting, closing) while the
# wakes that evicted them go ahead: a wake under the cap then waits for no one's snapshot, at
# the price of this many processes above the cap for the length of a hibernation. Per CPU of
# the cluster (at least one).
HIBERNATING_OVER_CAP_PER_CPU = 1.0


class Hibernation:
    def __init__(
        self,
        control: ControlPlane,
        runtime: ActorRuntime,
        residents: ResidentTable,
        max_resident: int,
        idle_s: float,
        hibernating_over_cap: int = 1,
        pool: SparePool | None = None,
        recycle_max_binds: int = 0,
        recycle_max_growth_mib: float = 0.0,
    ):
        self.control = control
        self.runtime = runtime
        self.residents = residents
        self.pool = pool  # where hibernated processes go back (or None)
        self.recycle_max_binds = int(recycle_max_binds)
        self.recycle_max_growth_bytes = float(recycle_max_growth_mib) * MIB
        self.retired: dict[str, int] = {}  # processes ended after hibernating, by why
        self.refused_for_room = 0  # wakes refused: every resident was in use
        self.in_session_s = IN_SESSION_S  # a resident used this recently is not evicted
        self.max_resident = int(max_resident)
        self.idle_s = float(idle_s)
        self.hibernating_over_cap = max(0, int(hibernating_over_cap))
        # evictions for room, while they run
        self._evictions: set[asyncio.Task[HibernationAnswer]] = set()
        self._clean_exits: OrderedDict[str, None] = OrderedDict()  # actor ids, bounded
        # hibernations begun since the directory started, by reason (idle, lru, manual, ...):
        # many `lru` per wake is the cap thrashing
        self.counts: dict[str, int] = {}

    # ---- one workspace -----------------------------------------------------------------------------
    async def hibernate(self, workspace_id: str, reason: str = "manual") -> HibernationAnswer:
        """Hibernate a resident workspace: its actor drains, snapshots (if changed), closes;
        then it is killed. Calls that reach it afterwards were never run (ended cleanly)."""
        if workspace_id in self.residents.hibernations:
            return await self.residents.hibernations.joined(workspace_id)
        resident = self.residents.get(workspace_id)
        if resident is None:
            self.control.get(workspace_id)  # NotFound for a workspace never made
            return {"workspace": workspace_id, "hibernated": False, "why": "not resident"}
        self.residents.forget(workspace_id)
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if self.pool is not None:
            self.pool.expect_return()  # now, before any await: the refiller counts it
        return await self.residents.hibernations.run(
            workspace_id, lambda: self._hibernate_actor(workspace_id, resident, reason)
        )

    async def _hibernate_actor(
        self, workspace_id: str, resident: Resident, reason: str
    ) -> Hibernated:
        try:
            report: HibernationReport = await self.runtime.call(
                resident.handle, WorkspaceActorMethod.HIBERNATE, timeout_s=HIBERNATE_TIMEOUT_S
            )
        except Exception as exc:  # noqa: BLE001 - timed out, died, or Ray's own failure
            # whatever the failure, the actor is killed: it is no longer resident, so left
            # alive it would be nobody's (a process and a slot nothing would ever free)
            self._end_process(resident, False, "hibernation failed")
            failed: HostHibernation = {
                "workspace": workspace_id,
                "snapshot": None,
                "pendingSnapshot": True,
                "snapshots": None,
                "error": f"hibernation failed: {exc.__class__.__name__}",
                "cleanupOwed": True,  # unknown: a wake later costs less than text left behind
            }
            return self._recorded(workspace_id, resident, reason, failed, recycled=False)
        except BaseException:
            self._end_process(resident, False, "cancelled")  # cancelled: never left alive
            raise
        if report.get("threadsLeft"):  # still running in that process: no other tenant there
            self._end_process(resident, True, "its workspace's threads still ran")
            recycled = False
        else:
            recycled = self._recycle(resident, report["process"])
        if report.get("tokensUsed"):  # the actor's last report of its tokens' use
            self.control.tokens.touch(workspace_id, report["tokensUsed"])
        return self._recorded(workspace_id, resident, reason, report, recycled)

    def _recorded(
        self,
        workspace_id: str,
        resident: Resident,
        reason: str,
        report: HostHibernation,
        recycled: bool,
    ) -> Hibernated:
        """The hibernation recorded in the control plane (and logged), as answered."""
        version = report["snapshot"]["version"] if report["snapshot"] else None
        self.control.record_hibernation(
            workspace_id,
            report["snapshots"],
            report["pendingSnapshot"],
            version,
            report.get("position"),
            report.get("storedPosition"),
        )
        self.control.cleanup_debts.note(
            workspace_id, report.get("cleanupOwed", False), report["error"]
        )
        # a line per hibernation only when it wrote a snapshot or failed at something: Ray's
        # log monitor reads every line a worker writes, and wake cycles are many
        log.log(
            logging.INFO if version or report["error"] else logging.DEBUG,
            "hibernated %s (%s, actor %s, %s): snapshot %s%s",
            workspace_id,
            reason,
            resident.actor_name,
            "recycled" if recycled else "ended",
            version or "not needed",
            f"; {report['error']}" if report["error"] else "",
        )
        return {**report, "hibernated": True, "reason": reason, "recycled": recycled}

    def _recycle(self, resident: Resident, process: ProcessReport) -> bool:
        """Hand the cleanly hibernated process back to the pool when it may serve again."""
        why = retirement_reason(
            process["binds"],
            process["rssBytes"],
            process["freshRssBytes"],
            self.recycle_max_binds,
            self.recycle_max_growth_bytes,
        )
        if why is None and self.pool is not None:
            spare = Spare(resident.handle, resident.actor_name, process["nodeId"], recycled=True)
            if self.pool.give_back(spare):  # else the pool killed it: it was full
                return True
            self._note_end(resident, True, "the pool is full")
            return False
        self._end_process(resident, True, why or "no pool")
        return False

    def _end_process(self, resident: Resident, clean: bool, why: str) -> None:
        self.runtime.kill(resident.handle)
        if self.pool is not None:
            self.pool.not_returning()
        self._note_end(resident, clean, why)

    def _note_end(self, resident: Resident, clean: bool, why: str) -> None:
        self.retired[why] = self.retired.get(why, 0) + 1
        if clean:
            self._clean_exits[self.runtime.actor_id(resident.handle)] = None
            while len(self._clean_exits) > CLEAN_EXITS_KEPT:
                self._clean_exits.popitem(last=False)

    async def hibernate_all(self, reason: str) -> int:
        ids = self.residents.ids()
        await asyncio.gather(*(self.hibernate(ws, reason) for ws in ids))
        return len(ids)

    async def ended_cleanly(self, workspace_id: str, actor_id: str) -> bool:
        """Did this actor end by hibernation (so a call that failed on it never ran)?"""
        await self.residents.hibernations.settled(workspace_id)  # ending now: refused
        return actor_id in self._clean_exits

    # ---- the sweep -------------------------------------------------------------------------------------
    async def sweep(self) -> list[str]:
        """Hibernate idle residents (not those whose snapshots are failing: they retry), at
        most SWEEP_MAX_PER_ROUND at once, concurrently. Near the cap the idle time shrinks, so
        the room goes to workspaces whose sessions have ended before a wake needs it."""
        if self.idle_s <= 0 or not len(self.residents):
            return []
        await self.residents.refresh()
        idle_s = idle_before_hibernation_s(self.idle_s, len(self.residents), self.max_resident)
        idle = self.residents.idle(idle_s)[:SWEEP_MAX_PER_ROUND]
        await asyncio.gather(*(self.hibernate(ws, "idle") for ws in idle))
        return idle

    def set_limits(
        self,
        max_resident: int | None = None,
        idle_s: float | None = None,
        in_session_s: float | None = None,
    ) -> dict[str, float]:
        """Change the cap / idle time / how recent a use protects a resident from eviction at
        run time (operators, tests); returns the previous."""
        previous = {
            "max_resident": self.max_resident,
            "idle_s": self.idle_s,
            "in_session_s": self.in_session_s,
        }
        if in_session_s is not None:
            self.in_session_s = max(0.0, float(in_session_s))
        if max_resident is not None:
            self.max_resident = max(1, int(max_resident))
        if idle_s is not None:
            self.idle_s = max(0.0, float(idle_s))
        return previous

    # ---- the cap -----------------------------------------------------------------------------------------
    def _over_cap(self) -> int:
        """How many actors the incoming one would put above the cap, counting the wakes that
        hold a slot while they are bound and those still hibernating beyond the allowance (all
        hold a process)."""
        hibernating = max(0, len(self.residents.hibernations) - self.hibernating_over_cap)
        held = self.residents.slots_held()
        return len(self.residents) + hibernating + held + 1 - self.max_resident

    def _evict(self, victim: str) -> None:
        """Hibernate `victim` for room, as a task of its own (held here until it ends: the
        event loop keeps only a weak reference to a task)."""

        def ended(task: asyncio.Task[HibernationAnswer]) -> None:
            self._evictions.discard(task)
            if not task.cancelled() and task.exception() is not None:
                log.warning("evicting %s for room failed: %r", victim, task.exception())

        task = asyncio.ensure_future(self.hibernate(victim, "lru"))
        self._evictions.add(task)
        task.add_done_callback(ended)

    @contextlib.asynccontextmanager
    async def slot_for(self, incoming: str) -> AsyncIterator[None]:
        """The incoming workspace's slot under the cap, held by its wake (`async with`) while
        it is bound, and let go however the bind ends (bound, failed or cancelled): the cap
        counts it as a resident meanwhile. Entered, it makes the room first (`_make_room`),
        so a wake refused for room holds none."""
        await self._make_room(incoming)
        # no await since the cap had room for it: no other wake took that room meanwhile
        self.residents.hold_slot(incoming)
        try:
            yield
        finally:
            self.residents.release_slot(incoming)

    async def _make_room(self, incoming: str) -> None:
        """Hibernate least recently used residents until the incoming one fits the cap. The
        victims' hibernations run on their own; the incoming one waits for them only when more
        than the allowance are still hibernating."""
        if self._over_cap() > 0:
            await self.residents.refresh()
        while (over := self._over_cap()) > 0:
            evictable = self.residents.evictable(incoming)
            # a workspace called within in_session_s is in a session: evicted, its next call
            # would wake it again and evict another (a thrash); the wake is refused instead
            now = time.time()
            between = {
                ws: used for ws, used in evictable.items() if now - used >= self.in_session_s
            }
            victims = lru_victims(between, max(0, len(between) - over))
            if not victims and evictable and not len(self.residents.hibernations):
                self.refused_for_room += 1
                oldest_use = min(evictable.values())
                raise Overloaded(
                    f"workspace {incoming} was not woken: all {len(self.residents)} resident "
                    "workspaces are in use",
                    retry_after_s=self.in_session_s - (now - oldest_use),
                )
            if victims:
                # started, not awaited: each is in `hibernations` from now on, which the next
                # look at the cap counts (a failure is logged and recorded by `hibernate`)
                for victim in victims:
                    self._evict(victim)
                await asyncio.sleep(0)
            elif len(self.residents.hibernations):
                await self.residents.hibernations.any_settled()
            else:  # the room is held by activations or by workspaces just bound
                await asyncio.sleep(ROOM_WAIT_S)
