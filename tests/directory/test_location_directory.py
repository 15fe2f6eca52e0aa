"""The location record in the directory: a delete fences the activations racing it and
reaches every copy, a wake gets a fresh fencing epoch and the newest acknowledged position,
and a resident with a call running is never taken for idle. The directory's own parts over
real workspace files (the in-process runtime of tests/support)."""

from __future__ import annotations

import asyncio

import pytest

from minisphere.errors import NotFound
from minisphere.settings import WORKSPACE_SLOT_RESOURCE
from tests.directory.test_directory_state import directory_parts
from tests.support.in_process_actors import NODE

SECRET = "the old tenant's launch code is 0000-7731"


def test_a_delete_racing_a_wake_wins_and_the_recreated_id_starts_empty(tmp_path):
    parts, control, runtime = directory_parts(tmp_path)

    async def drive():
        old = parts.workspaces.create("raced", None, None)
        actor = await parts.activator.activate("raced")
        actor.host.workspace.capture(SECRET)
        await parts.hibernation.hibernate("raced")  # its snapshot holds the secret
        runtime.bind_gate = asyncio.Event()  # the next wake waits to bind
        wake = asyncio.ensure_future(parts.activator.activate("raced"))
        await asyncio.sleep(0.05)
        deletion = asyncio.ensure_future(parts.workspaces.delete("raced"))
        await asyncio.sleep(0.05)
        runtime.bind_gate.set()  # the wake binds mid-delete
        with pytest.raises(NotFound):
            await wake
        await deletion
        runtime.bind_gate = None
        assert runtime.live == {}  # no actor of it survives
        new = parts.workspaces.create("raced", None, None)
        assert new["workspace"]["generation"] != old["workspace"]["generation"]
        fresh = await parts.activator.activate("raced")
        return fresh.host.workspace.get_count(), new

    count, _new = asyncio.run(drive())
    assert count == {"count": 0}
    assert control.get("raced")["state"] == "active"
    leftovers = [
        p for p in tmp_path.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()
    ]
    assert leftovers == []


def test_every_wake_gets_a_higher_epoch_and_the_acknowledged_position(tmp_path):
    parts, control, _ = directory_parts(tmp_path)

    async def drive():
        parts.workspaces.create("moving", None, None)
        epochs = []
        for round_ in range(3):
            actor = await parts.activator.activate("moving")
            epochs.append(actor.host.epoch)
            actor.host.workspace.capture(f"fact {round_}")
            await parts.hibernation.hibernate("moving")
        return epochs

    epochs = asyncio.run(drive())
    assert epochs == sorted(set(epochs)) and len(epochs) == 3
    location = control.locations.location("moving")
    assert location["position"] == location["storedPosition"] == 3


def test_a_resident_with_a_call_running_is_not_hibernated_as_idle(tmp_path, monkeypatch):
    monkeypatch.setattr("minisphere.directory.residents.REFRESH_INTERVAL_S", 0.0)
    parts, _, _runtime = directory_parts(tmp_path, MINISPHERE_HIBERNATE_IDLE_S="1")

    async def drive():
        parts.workspaces.create("busy", None, None)
        parts.workspaces.create("quiet", None, None)
        busy = await parts.activator.activate("busy")
        await parts.activator.activate("quiet")
        busy.inflight = 1  # a long write, started long ago
        for ws in ("busy", "quiet"):
            parts.residents.get(ws).last_used -= 3600
        return await parts.hibernation.sweep()

    assert asyncio.run(drive()) == ["quiet"]


async def copy_set_aside(parts, workspace_id: str):
    """A hibernated workspace holding SECRET, its folder moved aside (what another node's disk
    keeps, out of the directory's reach): (the folder, where it is now)."""
    parts.workspaces.create(workspace_id, None, None)
    actor = await parts.activator.activate(workspace_id)
    actor.host.workspace.capture(SECRET)
    await parts.hibernation.hibernate(workspace_id)
    folder = parts.workspaces.folder(workspace_id)
    left = folder.with_name(f"{workspace_id}-copy-on-a-worker")
    folder.rename(left)
    return folder, left


def test_the_node_sweep_removes_a_deleted_workspaces_copy_left_on_a_node(tmp_path):
    parts, _control, _ = directory_parts(tmp_path)

    async def drive():
        folder, left = await copy_set_aside(parts, "gone")
        await parts.workspaces.delete("gone")
        left.rename(folder)  # the worker's folder is there
        swept = await parts.workspaces.sweep_nodes()
        if parts.workspaces._sweep is not None:  # the delete's own, in the background
            await parts.workspaces._sweep
        return swept, folder

    swept, folder = asyncio.run(drive())
    # this sweep removed it, or the delete's own background sweep got there first
    assert list(swept.values()) in ([["gone"]], [[]])
    assert not folder.exists()


def test_a_wake_on_a_full_node_makes_room_there_instead_of_moving(tmp_path, monkeypatch):
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.hibernation.IN_SESSION_S", 0.0)
    parts, _, runtime = directory_parts(
        tmp_path, node_resources={WORKSPACE_SLOT_RESOURCE: 2}, MINISPHERE_WORKSPACE_SLOTS="on"
    )

    async def drive():
        for ws in ("home", "older", "newer"):
            parts.workspaces.create(ws, None, None)
        home = await parts.activator.activate("home")
        home.host.workspace.capture("written before it hibernated")
        await parts.hibernation.hibernate("home")  # its file stays on the node
        await parts.activator.activate("older")
        await parts.activator.activate("newer")  # the node's two slots are taken
        parts.residents.get("older").last_used -= 60
        woken = await parts.activator.activate("home")
        return woken.host.workspace.get_count()

    assert asyncio.run(drive()) == {"count": 1}
    assert sorted(parts.residents.ids()) == ["home", "newer"]  # the least recent made room
    assert len(runtime.live) == 2


def test_a_wake_on_a_full_node_with_a_spare_there_binds_it_and_evicts_no_one(tmp_path, monkeypatch):
    # the spare holds one of the node's slots already: the wake needs no other
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.hibernation.IN_SESSION_S", 0.0)
    monkeypatch.setattr("minisphere.directory.spares.REFILL_DELAY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.spares.NO_ROOM_RETRY_S", 0.01)
    parts, _, runtime = directory_parts(
        tmp_path,
        node_resources={WORKSPACE_SLOT_RESOURCE: 2},
        MINISPHERE_WORKSPACE_SLOTS="on",
        MINISPHERE_SPARE_ACTORS="1",
    )

    async def spare_ready() -> None:
        parts.pool.refill()
        for _ in range(300):
            if parts.pool.status()["ready"]:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(parts.pool.status())

    async def drive():
        for ws in ("home", "older"):
            parts.workspaces.create(ws, None, None)
        await spare_ready()
        await parts.activator.activate("home")
        await parts.hibernation.hibernate("home")  # its file stays on the node
        await parts.activator.activate("older")
        await spare_ready()  # the node's two slots: "older" and the spare
        assert runtime.free_slots() == {NODE: 0}
        parts.residents.get("older").last_used -= 60
        await parts.activator.activate("home")
        return parts.hibernation.counts

    assert asyncio.run(drive()) == {"manual": 1}  # no eviction for room
    assert sorted(parts.residents.ids()) == ["home", "older"]


def test_a_wake_that_evicted_waits_for_the_freed_slot_to_show_instead_of_placing_elsewhere(
    tmp_path, monkeypatch
):
    """Ray's resource view shows a killed actor's slot free only a moment later: placing at once
    found the node still full and sent the workspace elsewhere after evicting for it."""
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.hibernation.IN_SESSION_S", 0.0)
    parts, _, runtime = directory_parts(
        tmp_path, node_resources={WORKSPACE_SLOT_RESOURCE: 2}, MINISPHERE_WORKSPACE_SLOTS="on"
    )
    runtime.slot_release_delay_s = 0.5

    async def drive():
        for ws in ("home", "older", "newer"):
            parts.workspaces.create(ws, None, None)
        await parts.activator.activate("home")
        await parts.hibernation.hibernate("home")
        await asyncio.sleep(0.6)  # its own slot shows free again
        await parts.activator.activate("older")
        await parts.activator.activate("newer")
        parts.residents.get("older").last_used -= 60
        await parts.activator.activate("home")
        return parts.residents.get("home").placement

    why = asyncio.run(drive())
    assert "no node has a free slot" not in why, why


def test_a_wake_that_moves_a_workspace_sweeps_for_the_copy_it_left(tmp_path):
    """The copy left on the node a workspace lived on holds what it held, forgotten text
    included: the fault soak found one still there when the test ended, the periodic sweep
    being ten minutes away. A move now starts a sweep."""
    parts, control, _ = directory_parts(tmp_path)

    async def drive():
        parts.workspaces.create("mover", None, None)
        await parts.activator.activate("mover")
        await parts.hibernation.hibernate("mover")
        swept_before = parts.workspaces._sweep
        control.touch("mover", "a-node-that-went-away")  # where it lived last
        await parts.activator.activate("mover")  # opens on this node instead
        return swept_before, parts.workspaces._sweep

    before, after = asyncio.run(drive())
    assert before is None and after is not None


def test_a_wake_on_the_node_it_lived_on_starts_no_sweep(tmp_path):
    parts, _, _ = directory_parts(tmp_path)

    async def drive():
        parts.workspaces.create("stayer", None, None)
        await parts.activator.activate("stayer")
        await parts.hibernation.hibernate("stayer")
        await parts.activator.activate("stayer")
        return parts.workspaces._sweep

    assert asyncio.run(drive()) is None


def test_a_forget_sweeps_the_nodes_soon_and_forgets_in_a_row_share_one_sweep(tmp_path, monkeypatch):
    """A copy left on a node the workspace moved from holds the text a forget removes: the
    fault soak found one there when it ended (the periodic sweep ten minutes away). A forget
    now starts a sweep; the forgets that follow within the gap share the next one."""
    import time

    import minisphere.directory.workspaces as lifecycle

    monkeypatch.setattr(lifecycle, "FORGET_SWEEP_GAP_S", 0.3)
    parts, _, _ = directory_parts(tmp_path)
    started: list[float] = []

    async def drive():
        sweep = parts.workspaces.sweep_nodes

        async def counted():
            started.append(time.monotonic())
            return await sweep()

        parts.workspaces.sweep_nodes = counted
        parts.workspaces.sweep_after_forget()  # the first: at once
        deadline = time.monotonic() + 30
        while not started and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for _ in range(5):  # these share one sweep
            parts.workspaces.sweep_after_forget()
        while len(started) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        while not (parts.workspaces._forget_sweep.done() and parts.workspaces._sweep.done()):
            await asyncio.sleep(0.01)

    asyncio.run(drive())
    assert len(started) == 2
    assert started[1] - started[0] >= 0.3


def test_a_sweep_a_node_missed_goes_again_without_waiting_for_the_periodic_one(
    tmp_path, monkeypatch
):
    """A deleted workspace's copy sat on a node that was restarting when the delete's sweep
    reached it; the next sweep was ten minutes away, and the fault soak ended with the
    deleted text still on that disk. A sweep a node missed is sent again after a short gap."""
    import minisphere.directory.workspaces as lifecycle

    parts, _control, runtime = directory_parts(tmp_path)

    async def drive():
        folder, left = await copy_set_aside(parts, "gone")
        runtime.node_task_failure = "failed: NodeDiedError"  # the node is away
        await parts.workspaces.delete("gone")
        await parts.workspaces._sweep
        left.rename(folder)
        kept = folder.exists()
        runtime.node_task_failure = None  # back
        monkeypatch.setattr(lifecycle.time, "monotonic", lambda: float("inf"))  # gap is up
        parts.workspaces.sweep_if_owed()
        await parts.workspaces._sweep
        return kept, folder

    kept, folder = asyncio.run(drive())
    assert kept and not folder.exists()


def test_a_copy_left_behind_is_swept_once_the_store_holds_it(tmp_path):
    """A workspace moved to another node; the copy it left here is deleted only once the store
    holds its position, and the sweep that found the store behind was the last one for ten
    minutes (the fault soak found forgotten text in such a copy). When the store catches up,
    the next round of the directory's loop sweeps again."""
    parts, control, _ = directory_parts(tmp_path)

    def holding_secret():
        return [p for p in tmp_path.rglob("workspace.db*") if SECRET.encode() in p.read_bytes()]

    async def drive():
        made = parts.workspaces.create("mover", None, None)
        actor = await parts.activator.activate("mover")
        actor.host.workspace.capture(SECRET)
        actor.host.workspace.capture("a second write")
        await parts.hibernation.hibernate("mover")
        # it lives on another node now, further on; the store holds less than this copy
        control.conn.execute(
            "UPDATE workspaces SET node_id = 'another-node', position = 5, stored_position = 1 "
            "WHERE id = 'mover'"
        )
        await parts.workspaces.sweep_nodes()
        kept = bool(holding_secret())
        parts.workspaces.sweep_if_owed()  # nothing changed: no sweep
        idle = parts.workspaces._sweep
        generation = made["workspace"]["generation"]
        control.locations.record_position("mover", generation, 5, stored=5)  # a snapshot
        parts.workspaces.sweep_if_owed()
        await parts.workspaces._sweep
        return kept, idle

    kept, idle = asyncio.run(drive())
    assert kept and idle is None
    assert holding_secret() == []
