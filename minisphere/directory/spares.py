"""The directory's pool of warm spare workspace actors.

A spare is a `WorkspaceActor` started with no workspace: its process is up, its imports are
done and the contract is verified, so binding it to a workspace costs only opening a file.
`take(node)` hands out a ready spare — on the given node when one is there — and never the same
spare twice; the pool refills itself in the background, one start at a time per free slot, so
a burst of wakes spends the pool first and then waits only for process starts.

Its size is fixed (`MINISPHERE_SPARE_ACTORS`, or `resize`), or it follows demand (`Demand`):
every `take` not served by a recycled process is a wake, and the pool keeps as many spares as
the busiest minute of the last three saw such wakes (`residency_policy.demand_spare_target`),
within its floor and its budget; it looks again every `DEMAND_REVIEW_S`, so it also shrinks
once a busy minute leaves the window.

Recycling: a workspace that hibernates hands its process back (`give_back`) rather than have it
killed, and the pool keeps it while it wants another spare. A pool that follows demand also keeps
a process that comes back beyond its size (within its budget) for `RETURNED_KEPT_S`: the wake
that takes it then leaves the pool at its size, where killing it (or a fresh spare in its place)
would have the refiller start a process for that very wake, a start and a kill per wake cycle of
one workspace. The hibernations under way are
processes on their way back (`expect_return`), so the refiller starts fresh ones only for the
room they will not fill, and a wake that finds the pool empty while one is on its way waits for
it (`returned`) rather than start a process: a start costs most of a core while it runs, a
return nothing.

Plain asyncio inside the (async) directory actor; `start_spare(spares per node)`
(`SpareStarter.start`) is where a process is started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypedDict

from minisphere.control.residency_policy import (
    SPARE_DEMAND_WINDOW_S,
    demand_spare_target,
    peak_wakes_per_bucket,
)
from minisphere.directory.actor_runtime import Handle

log = logging.getLogger("minisphere.spares")
SPARE_READY_TIMEOUT_S = 120.0  # a spare that has not finished starting by then is dropped
REFILL_RETRY_PAUSE_S = 1.0  # after a failed start
NO_ROOM_RETRY_S = 5.0  # after finding no free workspace slot for a spare
# A process start takes most of a core while it runs: starting the replacement right away would
# take that CPU from the very wake that used the spare. Wait this long first.
REFILL_DELAY_S = 0.5
DEMAND_REVIEW_S = 10.0  # how often a demand-following pool recomputes its size
# A start takes most of a core while it runs. A pool grown by a burst that started all its
# replacements at once would take every core from the wakes it exists for: a demand-following
# pool starts at most this many per CPU of the cluster at a time (at least one).
STARTS_AT_ONCE_PER_CPU = 0.5
# How long a demand-following pool keeps a returned process beyond its size: an idle spare costs
# under 1% of a core (residency_policy.SPARE_ACTOR_IDLE_CPUS), so a minute of it costs less than
# the start (most of a core for a second) it saves when a wake comes for it.
RETURNED_KEPT_S = 60.0


class NoRoomForSpare(Exception):
    """No node has room for another spare now: not a failure, the pool waits and tries again."""


class PoolStatus(TypedDict):
    """The pool's counters, as the directory's residency status shows them."""

    size: int
    ready: int
    starting: int
    started: int
    handedOut: int
    failed: int
    noRoom: int
    noRoomWhy: str
    retired: int
    returning: int
    recycled: int
    notKept: int
    startSecondsP50: float | None
    followsDemand: bool
    shrunk: int
    floor: int | None
    ceiling: int | None
    peakWakesPerMinute: int


@dataclass(frozen=True)
class Demand:
    """A pool that follows demand keeps at least `floor` spares and never more than `ceiling`
    (its budget of memory and idle CPU)."""

    floor: int
    ceiling: int
    starts_at_once: int = 1


@dataclass
class Spare:
    handle: Handle
    name: str
    node_id: str | None
    ready_at: float = field(default_factory=time.monotonic)
    recycled: bool = False  # a hibernated workspace's process, not a fresh start


class SparePool:
    def __init__(
        self,
        size: int,
        start_spare: Callable[[dict[str, int]], Awaitable[Spare]],
        kill: Callable[[Handle], None],
        demand: Demand | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.demand = demand
        self.clock = clock
        self._wakes: deque[float] = deque()  # when each recent `take` came
        self._asks_again = False  # the last take was a miss with no node asked
        self.size = max(0, int(size)) if demand is None else self._demand_target(demand)
        self._start_spare = start_spare
        self._kill = kill
        self._ready: deque[Spare] = deque()
        self._starting = 0
        self._refiller: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self.started = 0  # spares that finished starting
        self.handed_out = 0
        self.failed = 0
        self.no_room = 0  # starts skipped: no node had a free slot
        self.no_room_why = ""
        self.retired = 0  # ready spares killed so their node could go idle
        self.shrunk = 0  # ready spares killed because demand fell
        self.start_seconds: deque[float] = deque(maxlen=64)  # recent start durations
        self.returning = 0  # hibernations under way whose process may come back
        self.recycled = 0  # hibernated processes kept as spares
        self.not_kept = 0  # processes killed on a return: the pool was full
        self._returned = asyncio.Event()

    # ---- use -----------------------------------------------------------------------------------
    def take(self, node_id: str | None = None) -> Spare | None:
        """A ready spare (on `node_id` when given and one is there), or None. Either way a
        wake: a pool that follows demand counts it."""
        retry = self._asks_again and node_id is None
        self._asks_again = False
        chosen = self._choose(node_id)
        # leaving the queue is what makes it never handed out twice (a bound actor also refuses
        # a second workspace), and first: the size is then looked at without it (a returned
        # process kept beyond the size, taken, leaves nothing for the refiller to start). No
        # record of past spares is kept: the state stays the size of the pool.
        if chosen is not None:
            self._ready.remove(chosen)
        # a wake served by a process a hibernation gave back needed no start: it is no demand
        # for pre-started spares (each costs a start and idle upkeep)
        if self.demand is not None and not retry and not (chosen and chosen.recycled):
            self._wakes.append(self.clock())
            self.follow_demand()
            self.refill()  # the pool may have grown: start the new spares
        if chosen is None:
            # a wake with no recorded node that finds no spare asks once more, for any node,
            # right away (the activator's next call): one wake, counted once
            self._asks_again = node_id is None and not retry
            return None
        self.handed_out += 1
        self.refill()
        return chosen

    # ---- recycling -------------------------------------------------------------------------
    def expect_return(self) -> None:
        """A hibernation began: its process may come back (`give_back` or `not_returning`)."""
        self.returning += 1

    def not_returning(self) -> None:
        self.returning = max(0, self.returning - 1)
        self.refill()  # the room it was to fill is the refiller's again

    def give_back(self, spare: Spare) -> bool:
        """A hibernated workspace's process, unbound again: kept if the pool has room for it
        (True: below its size, or its budget when it follows demand), else killed here. A pool
        that is full of fresh spares keeps it in place of its newest one (a process ends either
        way, and the recycled one is the warmer)."""
        self.returning = max(0, self.returning - 1)
        if len(self._ready) >= self._room_for_returns():
            fresh = next((s for s in reversed(self._ready) if not s.recycled), None)
            if fresh is None or not self.size:
                self._kill(spare.handle)
                self.not_kept += 1
                return False
            self._ready.remove(fresh)
            self._kill(fresh.handle)
            self.not_kept += 1
        # first in line: its process is warm (connected to the directory, its imports used),
        # and a shrinking pool kills from the other end, its newest fresh starts
        spare.ready_at = self.clock()
        self._ready.appendleft(spare)
        self.recycled += 1
        self._returned.set()
        self._returned = asyncio.Event()
        return True

    def _room_for_returns(self) -> int:
        """How many ready spares a returned process may join: the size of a fixed pool, the
        budget of one that follows demand (see `RETURNED_KEPT_S`)."""
        if self.demand is None:
            return self.size
        return max(self.size, self.demand.ceiling)

    @staticmethod
    def _kept_back(spare: Spare, now: float) -> bool:
        """A spare that came back from a hibernation within RETURNED_KEPT_S."""
        return spare.recycled and now - spare.ready_at < RETURNED_KEPT_S

    def has_ready(self, node_id: str | None = None) -> bool:
        return self._choose(node_id) is not None

    async def returned(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) for a process on its way back; False if none is."""
        if not self.returning:
            return False
        try:
            await asyncio.wait_for(self._returned.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def _choose(self, node_id: str | None) -> Spare | None:
        chosen = None
        if node_id is not None:
            chosen = next((s for s in self._ready if s.node_id == node_id), None)
            if chosen is None:
                return None
        elif self._ready:
            chosen = self._ready[0]
        return chosen

    def start_p50_s(self) -> float | None:
        """The median of the recent process starts' durations (None: none measured yet)."""
        recent = sorted(self.start_seconds)
        return recent[len(recent) // 2] if recent else None

    def status(self) -> PoolStatus:
        demand = self.demand
        return {
            "size": self.size,
            "ready": len(self._ready),
            "starting": self._starting,
            "started": self.started,
            "handedOut": self.handed_out,
            "failed": self.failed,
            "noRoom": self.no_room,
            "noRoomWhy": self.no_room_why,
            "retired": self.retired,
            "returning": self.returning,
            "recycled": self.recycled,
            "notKept": self.not_kept,
            "startSecondsP50": self.start_p50_s(),
            "followsDemand": demand is not None,
            "shrunk": self.shrunk,
            "floor": demand.floor if demand else None,
            "ceiling": demand.ceiling if demand else None,
            "peakWakesPerMinute": peak_wakes_per_bucket(self._wakes, self.clock()),
        }

    # ---- following demand ------------------------------------------------------------------------
    def _demand_target(self, demand: Demand) -> int:
        now = self.clock()
        while self._wakes and now - self._wakes[0] >= SPARE_DEMAND_WINDOW_S:
            self._wakes.popleft()  # the record stays the size of the window
        return demand_spare_target(self._wakes, now, demand.floor, demand.ceiling)

    def follow_demand(self) -> None:
        """Size the pool for the wakes seen recently; ready spares beyond it are killed (the
        newest first: the oldest have shown they start and answer)."""
        if self.demand is None:
            return
        self.size = self._demand_target(self.demand)
        now = self.clock()
        kept_back = sum(self._kept_back(spare, now) for spare in self._ready)
        excess = len(self._ready) - self.size - kept_back
        for spare in reversed(list(self._ready)):  # the newest first
            if excess <= 0:
                break
            if self._kept_back(spare, now):
                continue  # a wake is likely to come for it
            self._ready.remove(spare)
            self._kill(spare.handle)
            self.shrunk += 1
            excess -= 1

    def spares_per_node(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for spare in self._ready:
            if spare.node_id is not None:
                counts[spare.node_id] = counts.get(spare.node_id, 0) + 1
        return counts

    def ready_nodes(self) -> dict[str, str | None]:
        """Ready spares: name -> node."""
        return {spare.name: spare.node_id for spare in self._ready}

    def ready_handles(self) -> dict[str, Handle]:
        """Ready spares: name -> actor handle, the oldest (the next handed out) first."""
        return {spare.name: spare.handle for spare in self._ready}

    def retire(self, names: list[str]) -> int:
        """Kill these ready spares (the pool refills, placing the replacements afresh)."""
        doomed = [spare for spare in self._ready if spare.name in set(names)]
        for spare in doomed:
            self._ready.remove(spare)
            self._kill(spare.handle)
        self.retired += len(doomed)
        if doomed:
            self.refill()
        return len(doomed)

    def resize(self, size: int) -> None:
        """A fixed size from now on (an operator's or a test's choice wins over demand)."""
        self.demand = None
        self.size = max(0, int(size))
        while len(self._ready) > self.size:
            self._kill(self._ready.pop().handle)
        self.refill()

    # ---- refilling -------------------------------------------------------------------------------
    def refill(self) -> None:
        """Make sure the background refiller runs (cheap; call after every change)."""
        if self._refiller is None or self._refiller.done():
            self._refiller = asyncio.get_running_loop().create_task(self._refill_forever())
        self._wake.set()

    async def _refill_forever(self) -> None:
        while True:
            await asyncio.sleep(REFILL_DELAY_S)
            self._wake.clear()
            self.follow_demand()
            missing = self.size - len(self._ready) - self._starting - self.returning
            if self.demand is not None:
                missing = min(missing, self.demand.starts_at_once - self._starting)
            for _ in range(max(0, missing)):
                self._starting += 1
                asyncio.get_running_loop().create_task(self._start_one())
            if self.demand is None:
                await self._wake.wait()
            else:  # demand also falls with no event: look again now and then
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), DEMAND_REVIEW_S)

    async def _start_one(self) -> None:
        started = time.monotonic()
        try:
            spare = await asyncio.wait_for(
                self._start_spare(self.spares_per_node()), SPARE_READY_TIMEOUT_S
            )
        except NoRoomForSpare as why:
            self.no_room += 1
            self.no_room_why = str(why)
            self._starting -= 1
            await asyncio.sleep(NO_ROOM_RETRY_S)
            self._wake.set()
            return
        except Exception as exc:  # noqa: BLE001 - keep refilling; report it
            self.failed += 1
            log.warning("a spare workspace actor failed to start: %r", exc)
            self._starting -= 1
            await asyncio.sleep(REFILL_RETRY_PAUSE_S)
            self._wake.set()
            return
        self._starting -= 1
        self.started += 1
        self.start_seconds.append(time.monotonic() - started)
        if len(self._ready) >= self.size:  # shrunk meanwhile
            self._kill(spare.handle)
        else:
            self._ready.append(spare)
        self._wake.set()
