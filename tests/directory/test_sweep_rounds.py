"""The directory's background round, over its parts without Ray: a node that joins (or comes
back) is swept at the next round, not at the ten-minute sweep of every node, and the round ends
an actor that stopped answering."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

from minisphere.directory.sweep_rounds import SweepRounds
from tests.directory.test_adopted_actors import restarted_with_a_spare_named
from tests.directory.test_directory_state import created, directory_parts

HUNG_AFTER_S = 0.3  # the liveness bound under test (30 s in the service)
SILENT_S = 3600.0  # an ask that would be answered in an hour is never answered


async def _swept(parts) -> None:
    """Until the background sweep the lifecycle started (if any) is done."""
    sweep = parts.workspaces._sweep
    if sweep is not None:
        await sweep


def test_a_node_back_with_a_deleted_workspaces_copy_has_it_swept_at_the_next_round(tmp_path):
    parts, _, _ = directory_parts(tmp_path)
    nodes = {"node-a"}

    async def drive() -> tuple[bool, bool]:
        (ws,) = created(parts, "gone")
        await parts.activator.activate(ws)
        await parts.hibernation.hibernate(ws)
        away, copy = tmp_path / "copy-away", Path(parts.workspaces.workspace_path(ws))
        shutil.copytree(copy.parent, away)  # a node away while the workspace is deleted
        rounds = SweepRounds(parts, lambda: nodes)
        await parts.workspaces.delete(ws)
        await _swept(parts)
        shutil.copytree(away, copy.parent)  # ... and back with its copy
        await rounds.run_once()  # nothing joined: nothing swept
        await _swept(parts)
        kept = copy.exists()
        nodes.add("node-b")  # a node joins: the round sweeps at once
        await rounds.run_once()
        await _swept(parts)
        return kept, copy.exists()

    kept_without_a_join, left_after_the_join = asyncio.run(drive())
    assert kept_without_a_join and not left_after_the_join


def test_a_round_ends_an_actor_that_stopped_answering(tmp_path, monkeypatch):
    monkeypatch.setattr("minisphere.directory.residents.ACTIVITY_TIMEOUT_S", 0.05)
    monkeypatch.setattr("minisphere.directory.residents.REFRESH_INTERVAL_S", 0.0)
    parts, _, _ = directory_parts(tmp_path)
    parts.liveness.hung_after_s = HUNG_AFTER_S

    async def drive() -> list[str]:
        (ws,) = created(parts, "hangs")
        actor = await parts.activator.activate(ws)
        actor.activity_delay_s = SILENT_S
        rounds = SweepRounds(parts, lambda: {"node-a"})
        deadline = time.monotonic() + 30
        while parts.residents.get(ws) is not None and time.monotonic() < deadline:
            await rounds.run_once()
            await asyncio.sleep(HUNG_AFTER_S / 3)
        return parts.residents.ids()

    assert asyncio.run(drive()) == [] and parts.liveness.ended == 1


def test_a_round_ends_an_adopted_actor_that_serves_nothing(tmp_path):
    """A directory that died between naming a wake's actor and sending its bind left a spare
    named as resident: the next directory's first round lets it go, before any call needs to."""
    restarted, _, ws, orphan = restarted_with_a_spare_named(tmp_path, "named-before-its-bind")
    asyncio.run(SweepRounds(restarted, lambda: {"node-a"}).run_once())
    assert orphan.killed and restarted.residents.get(ws) is None
