"""Which workspace actors stay resident, and where a workspace is re-activated.

Pure functions over plain data, so the policy is tested without Ray:
- `lru_victims`: above the cap, the least recently used residents hibernate first;
- `idle_residents`: residents with no call for `idle_s` seconds;
- `placement`: the node recorded as holding the file, while it is alive, else any node (the
  file is then restored from the snapshot store there);
- `derived_resident_cap` / `derived_spare_actors`: the defaults, from what the cluster has;
- `spare_budget` / `demand_spare_target`: how many warm spares the pool keeps when it follows
  demand (the busiest minute of recent wakes, within a budget of memory and idle CPU).

A resident workspace is a whole process: it costs memory and a little CPU even when idle
(`RESIDENT_ACTOR_PSS_BYTES`, `RESIDENT_ACTOR_IDLE_CPUS`, measured by bench/bench_serverless.py).
The cap keeps the sum of both within a share of the cluster, so idle workspaces never crowd
out the ones working; everything beyond the cap hibernates and wakes from a warm spare.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from minisphere.settings import SPARE_IDLE_CPU_SHARE, SPARE_MEMORY_SHARE

IDLE_SWEEP_S = 5.0  # how often the directory looks for idle workspaces
MIB = 1024 * 1024
# one idle bound workspace actor's proportional set size (nearly all of it is Ray's own worker)
RESIDENT_ACTOR_PSS_BYTES = 57 * MIB
# one idle actor's share of a core: Ray's own upkeep, nearly all a 10 ms signal-check timer Ray
# hard-codes in every worker's task loop (0.38-0.51% measured, 0.40% with its event statistics
# off, which the launcher does; bench/results/tuning-notes.md)
RESIDENT_ACTOR_IDLE_CPUS = 0.0045
RESIDENT_MEMORY_SHARE = 0.25  # of the cluster's memory resident actors may take
RESIDENT_IDLE_CPU_SHARE = 0.25  # of the cluster's CPUs idle resident actors may take
MIN_RESIDENT = 8
SPARES_PER_CPU = 2  # warm spares kept per CPU of the cluster...
MIN_SPARES, MAX_SPARES = 2, 32  # ...within these bounds
# A resident called within this long is in a session (agents call many times a minute): the
# cap evicts it for nobody, and near the cap idle time shrinks to no less than twice it.
IN_SESSION_S = 5.0
PRESSURE_FILL = 0.75  # the share of the cap from which idle time shrinks


def derived_resident_cap(memory_bytes: float, cpus: float) -> int:
    """How many workspace actors may stay resident on a cluster of this size."""
    by_memory = memory_bytes * RESIDENT_MEMORY_SHARE / RESIDENT_ACTOR_PSS_BYTES
    by_cpu = cpus * RESIDENT_IDLE_CPU_SHARE / RESIDENT_ACTOR_IDLE_CPUS
    return max(MIN_RESIDENT, int(min(by_memory, by_cpu)))


def derived_spare_actors(cpus: float) -> int:
    return max(MIN_SPARES, min(MAX_SPARES, int(cpus * SPARES_PER_CPU)))


# A pool that follows demand. Every wake spends a spare and a replacement is a process start
# (most of a core while it runs): a burst larger than the pool waits for starts. The pool keeps
# as many spares as the busiest minute of the last three saw wakes, so a load that came once is
# met from spares when it comes again, and it shrinks back as that minute leaves the window. An
# idle spare is a whole process, so the size stays within a budget of memory and idle CPU.
# wakes older than this no longer count: past warm-up, hibernations hand back a process for
# nearly every wake, so pre-started spares (each costing idle upkeep) need only meet recent bursts
SPARE_DEMAND_WINDOW_S = 180.0
SPARE_DEMAND_BUCKET_S = 60.0  # wakes are counted per minute; the busiest one counts
SPARE_ACTOR_PSS_BYTES = 50 * MIB  # one idle spare's proportional set size (no file open)
SPARE_ACTOR_IDLE_CPUS = 0.0045  # one idle spare's share of a core: the same process and upkeep


def spare_budget(
    memory_bytes: float,
    cpus: float,
    memory_share: float = SPARE_MEMORY_SHARE,
    idle_cpu_share: float = SPARE_IDLE_CPU_SHARE,
) -> int:
    """The most spares the pool may keep on a cluster of this size, by memory and idle CPU."""
    by_memory = memory_bytes * max(0.0, memory_share) / SPARE_ACTOR_PSS_BYTES
    by_cpu = cpus * max(0.0, idle_cpu_share) / SPARE_ACTOR_IDLE_CPUS
    return max(0, int(min(by_memory, by_cpu)))


def peak_wakes_per_bucket(
    wake_times: Iterable[float],
    now: float,
    window_s: float = SPARE_DEMAND_WINDOW_S,
    bucket_s: float = SPARE_DEMAND_BUCKET_S,
) -> int:
    """The most wakes any `bucket_s` of the last `window_s` saw (buckets counted back from
    `now`; a wake in the future counts in the current bucket)."""
    counts: dict[int, int] = {}
    for at in wake_times:
        age = max(0.0, now - at)
        if age < window_s:
            bucket = math.floor(age / bucket_s)
            counts[bucket] = counts.get(bucket, 0) + 1
    return max(counts.values(), default=0)


def demand_spare_target(
    wake_times: Iterable[float],
    now: float,
    floor: int,
    ceiling: int,
    window_s: float = SPARE_DEMAND_WINDOW_S,
    bucket_s: float = SPARE_DEMAND_BUCKET_S,
) -> int:
    """Spares to keep: the busiest bucket's wakes, at least `floor`, never above `ceiling`
    (the budget wins over the floor)."""
    peak = peak_wakes_per_bucket(wake_times, now, window_s, bucket_s)
    return max(0, min(max(0, ceiling), max(max(0, floor), peak)))


def lru_victims(last_used: Mapping[str, float], cap: int, protect: Iterable[str] = ()) -> list[str]:
    """Ids to hibernate so at most `cap` stay, least recently used first; `protect` stays."""
    keep = set(protect)
    excess = len(last_used) - max(0, cap)
    if excess <= 0:
        return []
    candidates = sorted((t, ws) for ws, t in last_used.items() if ws not in keep)
    return [ws for _, ws in candidates[:excess]]


def idle_residents(last_used: Mapping[str, float], now: float, idle_s: float) -> list[str]:
    if idle_s <= 0:
        return []
    return sorted(ws for ws, t in last_used.items() if now - t >= idle_s)


def placement(recorded_node: str | None, alive_nodes: Iterable[str]) -> tuple[str | None, str]:
    """(node to prefer or None, why): prefer the node holding the file while it is alive."""
    alive = set(alive_nodes)
    if not recorded_node:
        return None, "no placement recorded"
    if recorded_node in alive:
        return recorded_node, "node holding the file"
    return None, f"node {recorded_node[:12]} is gone; restoring from the snapshot store"


def node_with_room(preferred: str | None, free: dict[str, float], need: float) -> str | None:
    """The preferred node if it has `need` free, else the node with the most free (ties: the
    first in id order, so the choice is stable), else None: no node has room."""
    if preferred is not None and free.get(preferred, 0) >= need:
        return preferred
    roomiest = max(sorted(free), key=lambda node: free[node], default=None)
    return roomiest if roomiest is not None and free[roomiest] >= need else None


# Warm spares and the autoscaler. A spare holds a slot, so a node with a spare is never idle and
# never removed: spares live only on nodes that hold bound workspaces (where the wakes they
# serve come from), or, while no node does, all on one node.
def spare_home(
    turn: int, free: dict[str, float], busy: set[str], spares_on: dict[str, int], need: float
) -> str | None:
    """The node for a new spare: the busy nodes with room in turn; with none, the node already
    holding the most spares if it has room; else the roomiest node; None: no room anywhere."""
    eligible = sorted(node for node in busy if free.get(node, 0) >= need)
    if eligible:
        return eligible[turn % len(eligible)]
    holding = [
        node
        for node in sorted(spares_on, key=lambda n: (-spares_on[n], n))
        if free.get(node, 0) >= need
    ]
    return holding[0] if holding else node_with_room(None, free, need)


def misplaced_spares(
    spare_nodes: dict[str, str | None], free: dict[str, float], busy: set[str], need: float
) -> list[str]:
    """Spares (name -> node) to retire so idle nodes can go: those on idle nodes while a busy
    node has room for their replacements; with no busy node, all but those on the node holding
    the most, if that node has room for the rest. A replacement goes where `spare_home` says,
    which these rules never retire again."""
    if any(free.get(node, 0) >= need for node in busy):
        return [name for name, node in spare_nodes.items() if node not in busy]
    if busy or not spare_nodes:
        return []
    counts: dict[str, int] = {}
    for node in spare_nodes.values():
        if node is not None:
            counts[node] = counts.get(node, 0) + 1
    if not counts:
        return []
    keep = min(counts, key=lambda n: (-counts[n], n))
    if free.get(keep, 0) < need:
        return []
    return [name for name, node in spare_nodes.items() if node != keep]


def retirement_reason(
    binds: int, rss_bytes: int, fresh_rss_bytes: int, max_binds: int, max_growth_bytes: float
) -> str | None:
    """Why a hibernated workspace process must end rather than go back to the spare pool
    (None: it may be recycled). `max_binds` 0 recycles nothing; a process whose memory is not
    known (no /proc) is recycled on its bind count alone."""
    if max_binds <= 0:
        return "recycling is off"
    if binds >= max_binds:
        return f"served {binds} workspaces"
    if rss_bytes and fresh_rss_bytes and rss_bytes - fresh_rss_bytes > max_growth_bytes:
        return f"grew {(rss_bytes - fresh_rss_bytes) / MIB:.0f} MiB"
    return None


def idle_before_hibernation_s(idle_s: float, resident: int, cap: int) -> float:
    """The idle time after which a resident hibernates: `idle_s` while the cap has room, then
    shrinking linearly to 2 x IN_SESSION_S as the residents fill the last quarter of the cap (a
    wake into a recycled process needs no process start, so an idle workspace is cheap to let
    go)."""
    if idle_s <= 0 or cap <= 0:
        return idle_s
    floor_s = min(idle_s, 2 * IN_SESSION_S)
    fill = resident / cap
    if fill <= PRESSURE_FILL:
        return idle_s
    squeeze = min(1.0, (fill - PRESSURE_FILL) / (1 - PRESSURE_FILL))
    return idle_s - (idle_s - floor_s) * squeeze
