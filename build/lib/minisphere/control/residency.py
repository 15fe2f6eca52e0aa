"""Which workspace actors stay resident, and where a workspace is re-activated.

Pure functions over plain data, so the policy is tested without Ray:
- `lru_victims`: above the cap, the least recently used residents hibernate first;
- `idle_residents`: residents with no call for `idle_s` seconds;
- `placement`: the node recorded as holding the file, while it is alive, else any node (the
  file is then restored from the snapshot store there).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

IDLE_SWEEP_S = 5.0                     # how often the directory looks for idle workspaces


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
