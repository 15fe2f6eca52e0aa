"""Supersession: which entries a `supersedes` edge (src replaces dst) has made out of date.

An entry is superseded when a *live* entry (not deprecated; a forgotten one is gone, edges and
all) replaces it, directly or through a chain of replacements, whatever the status of the
members in between. It resolves to its *head*: the live replacement that nothing live replaces
in turn (the newest by creation among several, ties by id). `link` refuses an edge that would
close a cycle; a cycle stored before that rule has no head, so its members rank as usual.

Everything is read in one recursive query over the edges reachable from the entries asked
about: an entry nothing replaces costs one index probe.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from minisphere.engine.db import Connection
from minisphere.engine.rows import id_chunks
from minisphere.errors import SupersessionCycle
from minisphere.wire.answers import SupersessionChain

LIVE_STATUS_EXCLUDED = "deprecated"  # a deprecated replacement is history, not the current truth


@dataclass
class Supersession:
    """The `supersedes` edges reachable (towards newer entries) from a set of entries."""

    newer: dict[str, list[str]] = field(default_factory=dict)  # entry -> entries replacing it
    live: dict[str, bool] = field(default_factory=dict)  # replacing entry -> not deprecated
    created: dict[str, int] = field(default_factory=dict)  # replacing entry -> created_at
    _reach: dict[str, frozenset[str]] = field(default_factory=dict)
    _heads: dict[str, str | None] = field(default_factory=dict)

    def live_successors(self, entry_id: str) -> frozenset[str]:
        """Every live entry replacing this one, directly or through others."""
        if entry_id not in self.newer:  # most entries: nothing replaces them
            return frozenset()
        if entry_id not in self._reach:
            seen: set[str] = set()
            stack = list(self.newer.get(entry_id, ()))
            while stack:  # iterative: a long chain must not reach the recursion limit
                node = stack.pop()
                if node not in seen:
                    seen.add(node)
                    stack.extend(self.newer.get(node, ()))
            seen.discard(entry_id)  # a stored cycle leads back to itself
            self._reach[entry_id] = frozenset(n for n in seen if self.live.get(n, False))
        return self._reach[entry_id]

    def replacements(self, entry_id: str) -> frozenset[str]:
        """The live entries replacing this one, when it has a head (none in a stored cycle)."""
        return self.live_successors(entry_id) if self.head(entry_id) else frozenset()

    def head(self, entry_id: str) -> str | None:
        """The newest live member of the entry's chain, or None when nothing live replaces it."""
        if entry_id not in self._heads:
            heads = [s for s in self.live_successors(entry_id) if not self.live_successors(s)]
            self._heads[entry_id] = (
                max(heads, key=lambda s: (self.created.get(s, 0), s)) if heads else None
            )
        return self._heads[entry_id]

    def path(self, entry_id: str) -> list[str]:
        """The entry, then each replacement in turn up to its head (one shortest way there)."""
        target = self.head(entry_id)
        if target is None:
            return [entry_id]
        came_from: dict[str, str] = {}
        frontier, seen = [entry_id], {entry_id}
        while frontier and target not in seen:
            nxt: list[str] = []
            for node in frontier:
                for newer in sorted(self.newer.get(node, ())):
                    if newer not in seen:
                        seen.add(newer)
                        came_from[newer] = node
                        nxt.append(newer)
            frontier = nxt
        walk = [target]
        while walk[-1] != entry_id:
            walk.append(came_from[walk[-1]])
        return walk[::-1]


def read_supersession(
    conn: Connection, ids: Iterable[str], found: Supersession | None = None
) -> Supersession:
    """The replacements of `ids`, transitively, with the state of each replacing entry (added to
    `found` when given: recall reads its candidates a page at a time)."""
    found = Supersession() if found is None else found
    for chunk, marks in id_chunks(list(ids)):
        if not any_replaced(conn, chunk):  # most pages: half the cost of the walk
            continue
        rows = conn.execute(
            "WITH RECURSIVE reach(id) AS ("
            f"SELECT value FROM json_each(json_array({marks})) UNION "
            "SELECT e.src FROM edges e JOIN reach r ON e.dst = r.id WHERE e.type = 'supersedes') "
            # CROSS JOIN keeps reach outside: one index probe per entry, never a scan of edges
            "SELECT e.src, e.dst, n.status, n.created_at FROM reach r "
            "CROSS JOIN edges e ON e.dst = r.id AND e.type = 'supersedes' "
            "JOIN entries n ON n.id = e.src",
            chunk,
        ).fetchall()
        for src, dst, status, created_at in rows:
            newer = found.newer.setdefault(dst, [])
            if src not in newer:
                newer.append(src)
            found.live[src] = status != LIVE_STATUS_EXCLUDED
            found.created[src] = created_at
    # no cache is stale now: every edge into an entry already reached was read with it
    return found


def any_replaced(conn: Connection, ids: list[str]) -> bool:
    """Whether a `supersedes` edge points at any of `ids` (one index probe each)."""
    for chunk, marks in id_chunks(ids):
        if conn.execute(
            f"SELECT 1 FROM edges WHERE dst IN ({marks}) AND type = 'supersedes' LIMIT 1", chunk
        ).fetchone():
            return True
    return False


def refuse_cycle(conn: Connection, src: str, dst: str) -> None:
    """`src supersedes dst` is refused when dst already replaces src, directly or not: a cycle
    has no newest member."""
    closes = conn.execute(
        "WITH RECURSIVE older(id) AS (SELECT ? UNION "
        "SELECT e.dst FROM edges e JOIN older o ON e.src = o.id WHERE e.type = 'supersedes') "
        "SELECT 1 FROM older WHERE id = ? LIMIT 1",
        (dst, src),
    ).fetchone()
    if closes is not None:
        raise SupersessionCycle(
            f"{src} cannot supersede {dst}: {dst} already supersedes {src} (directly or through "
            "a chain), and a chain of replacements must have a newest member"
        )


def chain_of(conn: Connection, entry_id: str) -> SupersessionChain:
    """What getEntry and connections tell of one entry's supersession."""
    found = read_supersession(conn, [entry_id])
    replaced = conn.execute(
        "SELECT e.dst FROM edges e JOIN entries n ON n.id = e.dst "
        "WHERE e.src = ? AND e.type = 'supersedes' ORDER BY n.created_at, n.seq",
        (entry_id,),
    ).fetchall()
    return {
        "supersededBy": found.head(entry_id),
        "chain": found.path(entry_id),
        "supersedes": [r[0] for r in replaced],
    }
