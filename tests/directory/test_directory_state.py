"""The directory's parts, wired exactly as the directory actor wires them, driven through
many wakes and hibernations over real workspace files (an in-process runtime instead of Ray's,
so a thousand wakes take seconds, not a thousand process starts).

What a long-running cluster needs: the directory's per-workspace state is bounded by the
workspaces resident now, never by every workspace it has woken."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from minisphere.control.auth import token_hash
from minisphere.control.plane import ControlPlane
from minisphere.directory import binding as binding_module
from minisphere.directory import hibernation as hibernation_module
from minisphere.directory.assembly import assemble
from minisphere.directory.deleted_replicas import QUIET_RECHECKS
from minisphere.errors import NoWorkspaceSlots, WorkspaceUnavailable
from minisphere.settings import WORKSPACE_SLOT_RESOURCE, load_settings
from tests.support.in_process_actors import InProcessActors

ADMIN = "test-admin-token-for-the-directory-parts"
RESIDENT_CAP = 8
WORKSPACES = 1000
CLEAN_EXITS_KEPT = 50


def directory_parts(tmp_path, node_resources=None, control=None, runtime=None, **env):
    """The parts of a directory; given the `control` plane and `runtime` of an earlier one,
    those of the directory Ray restarts after it died."""
    settings = load_settings(
        {
            "MINISPHERE_DATA_DIR": str(tmp_path),
            "MINISPHERE_ADMIN_TOKEN": ADMIN,
            "MINISPHERE_SYNCHRONOUS": "OFF",
            "MINISPHERE_MAX_RESIDENT": str(RESIDENT_CAP),
            "MINISPHERE_SPARE_ACTORS": "0",
            # wakes here take microseconds: their admission is tested apart
            "MINISPHERE_WAKE_DEADLINE_S": "0",
            **env,
        }
    )
    control = control or ControlPlane(settings.control_db)
    runtime = runtime or InProcessActors(node_resources)
    parts = assemble(
        settings, control, runtime, token_hash(ADMIN), cluster_cpus=2, cluster_memory_bytes=2**34
    )
    return parts, control, runtime


def cap_of_two(tmp_path, monkeypatch):
    """Directory parts under a cap of two residents, each evictable as soon as it is bound and
    asked for its last use at every look."""
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.hibernation.IN_SESSION_S", 0.0)
    monkeypatch.setattr("minisphere.directory.residents.REFRESH_INTERVAL_S", 0.0)
    parts, _, runtime = directory_parts(tmp_path, MINISPHERE_MAX_RESIDENT="2")
    return parts, runtime


def created(parts, *names: str) -> list[str]:
    return [parts.workspaces.create(name, None, None)["workspace"]["id"] for name in names]


def test_a_thousand_wakes_leave_only_the_residents_in_the_directorys_state(tmp_path, monkeypatch):
    monkeypatch.setattr(hibernation_module, "CLEAN_EXITS_KEPT", CLEAN_EXITS_KEPT)
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.hibernation.IN_SESSION_S", 0.0)
    parts, control, runtime = directory_parts(tmp_path)

    async def drive() -> None:
        ids = [
            parts.workspaces.create(f"ws-{i:04d}", None, None)["workspace"]["id"]
            for i in range(WORKSPACES)
        ]
        for i, workspace_id in enumerate(ids):
            await parts.activator.activate(workspace_id)
            if i % 3 == 0:  # a third hibernate by hand; the rest by the cap
                await parts.hibernation.hibernate(workspace_id)
        for workspace_id in ids[:: WORKSPACES // 10]:  # some wake again and are deleted
            await parts.activator.activate(workspace_id)
            await parts.workspaces.delete(workspace_id)

    asyncio.run(drive())
    residents = parts.residents.ids()
    assert 0 < len(residents) <= RESIDENT_CAP
    assert parts.residents.state_sizes() == {
        "residents": len(residents),
        "activations": 0,
        "hibernations": 0,
        "reserved": 0,
    }
    assert sorted(runtime.live) == sorted(parts.residents.get(ws).actor_name for ws in residents)
    assert len(parts.hibernation._clean_exits) <= CLEAN_EXITS_KEPT
    assert parts.placement._claims == {}
    # the control plane names an actor for the residents and for no one else
    named = {ws for ws, _ in control.bound_actors()}
    assert named == set(residents)


def test_concurrent_activations_of_one_workspace_bind_one_actor(tmp_path):
    parts, _, runtime = directory_parts(tmp_path)

    async def drive():
        workspace_id = parts.workspaces.create("shared", None, None)["workspace"]["id"]
        return await asyncio.gather(*(parts.activator.activate(workspace_id) for _ in range(20)))

    handles = asyncio.run(drive())
    assert len({id(h) for h in handles}) == 1
    assert runtime.started == 1


def test_a_workspace_hibernated_under_the_cap_keeps_its_writes_when_woken_again(
    tmp_path, monkeypatch
):
    monkeypatch.setattr("minisphere.directory.hibernation.IN_SESSION_S", 0.0)
    parts, _, _ = directory_parts(tmp_path, MINISPHERE_MAX_RESIDENT="1")

    async def drive():
        first = parts.workspaces.create("first", None, None)["workspace"]["id"]
        second = parts.workspaces.create("second", None, None)["workspace"]["id"]
        actor = await parts.activator.activate(first)
        actor.host.workspace.capture("written before the eviction")
        await parts.activator.activate(second)  # the cap of one evicts the first
        assert first not in parts.residents
        woken = await parts.activator.activate(first)
        return woken.host.workspace.get_count()

    assert asyncio.run(drive()) == {"count": 1}


def test_a_wake_with_no_node_advertising_slots_is_refused_by_name_not_left_hanging(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(binding_module, "NO_SLOTS_WAIT_S", 0.2)
    parts, control, runtime = directory_parts(tmp_path, MINISPHERE_WORKSPACE_SLOTS="on")

    async def wake_twice():
        workspace_id = parts.workspaces.create("no-room", None, None)["workspace"]["id"]
        refusals = []
        for _ in range(2):
            with pytest.raises(NoWorkspaceSlots) as refused:
                await asyncio.wait_for(parts.activator.activate(workspace_id), 30)
            refusals.append(refused.value)
        return workspace_id, refusals

    _workspace_id, refusals = asyncio.run(wake_twice())
    assert all("minisphere_workspace_slots" in r.message and r.retry_after_s > 0 for r in refusals)
    assert "minisphere_workspace_slots" not in refusals[0].message_for("tenant")
    assert runtime.live == {}  # the actors that could not start are gone
    assert dict(control.bound_actors()) == {}
    assert parts.residents.state_sizes()["reserved"] == 0
    told = [r for r in caplog.records if "workspaces cannot start" in r.getMessage()]
    assert len(told) == 1  # logged once, not per wake


def test_a_wake_waits_for_a_slot_node_and_binds_once_one_advertises_slots(tmp_path):
    parts, _, _runtime = directory_parts(
        tmp_path, node_resources={WORKSPACE_SLOT_RESOURCE: 4}, MINISPHERE_WORKSPACE_SLOTS="on"
    )

    async def wake():
        workspace_id = parts.workspaces.create("room", None, None)["workspace"]["id"]
        return await asyncio.wait_for(parts.activator.activate(workspace_id), 30)

    assert asyncio.run(wake()).host is not None


def test_stopping_hibernates_every_resident_and_keeps_their_writes(tmp_path):
    """What Ctrl-C on the embedded service does before Ray stops: every resident drains and
    snapshots, so the next start finds nothing resident and nothing unsnapshotted."""
    parts, control, runtime = directory_parts(tmp_path)

    async def drive():
        ids = [
            parts.workspaces.create(f"stop-{i}", None, None)["workspace"]["id"] for i in range(3)
        ]
        for workspace_id in ids:
            actor = await parts.activator.activate(workspace_id)
            actor.host.workspace.capture(f"written in {workspace_id}")
        return ids, await parts.hibernation.hibernate_all("shutdown")

    ids, hibernated = asyncio.run(drive())
    assert hibernated == 3 and len(parts.residents) == 0 and runtime.live == {}
    for workspace_id in ids:
        assert control.durability(workspace_id)["snapshotPending"] is False
        assert control.durability(workspace_id)["lastSnapshotVersion"]


def test_wakes_are_counted_by_where_their_process_came_from(tmp_path):
    """The benchmarks judge wakes by these counts (a wake served by a new actor waited for a
    process start): a concurrent second activation of one workspace is not a second wake."""
    parts, _, _ = directory_parts(tmp_path, MINISPHERE_SPARE_ACTORS="1")

    async def drive():
        parts.pool.resize(1)
        while not parts.pool.status()["ready"]:
            await asyncio.sleep(0.01)
        first, second = (
            parts.workspaces.create(name, None, None)["workspace"]["id"]
            for name in ("first", "second")
        )
        await asyncio.gather(parts.activator.activate(first), parts.activator.activate(first))
        parts.pool.resize(0)
        await parts.activator.activate(second)
        return parts.residents.get(first).wake, parts.residents.get(second).wake

    first_wake, second_wake = asyncio.run(drive())
    assert (first_wake["actor"], second_wake["actor"]) == ("spare", "new")
    assert parts.activator.wakes == {"recycled": 0, "spare": 1, "new": 1}


def test_a_wake_whose_new_actor_waits_for_a_process_takes_a_spare_that_became_ready(
    tmp_path, monkeypatch
):
    """Seen on a loaded autoscaling cluster: the wakes of a burst came before the spares were
    ready and started actors of their own; the spares then held the slots the last wake's
    actor waited for, and it timed out after two minutes beside two idle spares."""
    monkeypatch.setattr(binding_module, "SPARE_WATCH_S", 0.02)
    parts, control, runtime = directory_parts(tmp_path)

    async def drive():
        workspace_id = created(parts, "waits")[0]
        runtime.held_starts = 1  # its own actor never gets a process
        wake = asyncio.ensure_future(parts.activator.activate(workspace_id))
        while not runtime.live:
            await asyncio.sleep(0.01)
        pending = next(iter(runtime.live.values()))
        parts.pool.resize(1)  # a spare starts, and is ready
        bound = await asyncio.wait_for(wake, 30)
        return workspace_id, pending, bound

    workspace_id, pending, bound = asyncio.run(drive())
    assert bound is not pending and bound.host is not None
    assert pending.killed and pending.name not in runtime.live
    assert parts.residents.get(workspace_id).wake["actor"] == "spare"
    assert dict(control.bound_actors()) == {workspace_id: bound.name}


@pytest.mark.parametrize("restore_advances", [True, False])
def test_a_bind_whose_restore_keeps_staging_bytes_outlasts_the_bind_timeout(
    tmp_path, monkeypatch, restore_advances
):
    """A restore of a large file from the store can take longer than the bind's timeout; given
    up then, every later wake would start it over and none would ever finish. One that keeps
    staging bytes goes on; one that stalls is given up (a 503)."""
    monkeypatch.setattr(binding_module, "BIND_TIMEOUT_S", 0.2)
    monkeypatch.setattr(binding_module, "BIND_PROGRESS_WINDOW_S", 0.2)
    parts, _control, runtime = directory_parts(tmp_path)
    runtime.bind_gate = asyncio.Event()

    async def drive():
        workspace_id = created(parts, "large")[0]
        wake = asyncio.ensure_future(parts.activator.activate(workspace_id))
        while not runtime.live:
            await asyncio.sleep(0.01)
        actor = next(iter(runtime.live.values()))
        for _ in range(12):  # 1.2 s: six bind timeouts' worth
            await asyncio.sleep(0.1)
            actor.staged_bytes += 1 << 20 if restore_advances else 0
        runtime.bind_gate.set()
        return await asyncio.wait_for(wake, 30)

    if restore_advances:
        assert asyncio.run(drive()).host is not None
    else:
        with pytest.raises(WorkspaceUnavailable) as refused:
            asyncio.run(drive())
        assert "could not be opened" in refused.value.message  # answered 503, retryable


def test_a_resident_too_busy_to_say_when_it_was_last_used_is_not_evicted_before_an_idle_one(
    tmp_path, monkeypatch
):
    """On a loaded node the actors in use are the ones slow to answer the directory: taking
    their silence for idleness evicted the workspaces callers were using, each eviction
    answered by a wake that evicted another."""
    monkeypatch.setattr("minisphere.directory.residents.ACTIVITY_TIMEOUT_S", 0.05)
    parts, _runtime = cap_of_two(tmp_path, monkeypatch)

    async def drive():
        busy, idle, incoming = created(parts, "busy", "idle", "incoming")
        busy_actor = await parts.activator.activate(busy)  # bound first: the older bind
        idle_actor = await parts.activator.activate(idle)
        busy_actor.activity_delay_s = 0.5  # too busy to answer in time
        idle_actor.last_call_at = 1.0  # answers: idle for ages
        await parts.activator.activate(incoming)
        return set(parts.residents.ids())

    assert asyncio.run(drive()) == {"busy", "incoming"}
    assert parts.hibernation.counts == {"lru": 1}


def test_a_wake_whose_caller_went_away_still_binds_and_the_retry_finds_it_resident(tmp_path):
    """An HTTP client that times out makes Ray cancel the directory's activate: the bind it
    started must go on, or every retry under load starts (and wastes) another process."""
    parts, _, runtime = directory_parts(tmp_path)

    async def drive():
        workspace_id = parts.workspaces.create("slow", None, None)["workspace"]["id"]
        runtime.bind_gate = gate = asyncio.Event()
        caller = asyncio.ensure_future(parts.activator.activate(workspace_id))
        while not runtime.started:
            await asyncio.sleep(0.01)
        caller.cancel()  # the caller goes away mid-bind
        with pytest.raises(asyncio.CancelledError):
            await caller
        gate.set()
        retry = await parts.activator.activate(workspace_id)
        return retry, parts.residents.get(workspace_id)

    retry, resident = asyncio.run(drive())
    assert resident is not None and resident.handle is retry
    assert runtime.started == 1


@pytest.mark.parametrize("source", ["spare", "new"])
def test_a_bind_failing_with_an_unnamed_error_kills_the_actor_instead_of_leaving_it_nobodys(
    tmp_path, source
):
    """A Ray error that is neither the actor dying nor a timeout left the actor (a spare
    already taken from the pool, or a new one) alive, named by no one: under load the sessions
    benchmark ended with 142 such processes beside 68 residents, each holding a slot and idle
    CPU that no hibernation would ever free."""
    parts, control, runtime = directory_parts(tmp_path, MINISPHERE_SPARE_ACTORS="1")

    async def drive():
        parts.pool.resize(1 if source == "spare" else 0)
        while source == "spare" and not parts.pool.status()["ready"]:
            await asyncio.sleep(0.01)
        workspace_id = parts.workspaces.create("unlucky", None, None)["workspace"]["id"]
        runtime.bind_failure = RuntimeError("the raylet could not be reached")
        with pytest.raises(RuntimeError):
            await parts.activator.activate(workspace_id)
        parts.pool.resize(0)  # no refill: what is left alive is a leak
        woken = await parts.activator.activate(workspace_id)  # and the next wake works
        return workspace_id, woken

    workspace_id, woken = asyncio.run(drive())
    assert list(runtime.live) == [parts.residents.get(workspace_id).actor_name]
    assert runtime.live[parts.residents.get(workspace_id).actor_name] is woken
    assert [ws for ws, _ in control.bound_actors()] == [workspace_id]


def test_a_wake_under_the_cap_does_not_wait_for_the_snapshot_of_the_workspace_it_evicts(
    tmp_path, monkeypatch
):
    """On a busy node every wake evicts someone: waiting for the victim to drain, snapshot and
    close put that hibernation on the wake's own path. The victim still counts against the cap
    beyond the allowance (one per CPU here: two), so the cap cannot be outrun."""
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.hibernation.IN_SESSION_S", 0.0)
    parts, _, runtime = directory_parts(tmp_path, MINISPHERE_MAX_RESIDENT="1")

    async def drive():
        ids = [parts.workspaces.create(f"ws-{n}", None, None)["workspace"]["id"] for n in range(4)]
        gate = asyncio.Event()
        woken = []
        for workspace_id in ids:
            for actor in list(runtime.live.values()):
                actor.hibernate_gate = gate  # every victim's snapshot hangs
            try:
                await asyncio.wait_for(parts.activator.activate(workspace_id), 2.0)
                woken.append(workspace_id)
            except TimeoutError:
                break
        held = len(parts.residents.hibernations)
        gate.set()
        await parts.residents.hibernations.any_settled()
        last = await asyncio.wait_for(parts.activator.activate(ids[3]), 5.0)
        return woken, held, last

    woken, held, last = asyncio.run(drive())
    assert woken == ["ws-0", "ws-1", "ws-2"]  # two evictions did not hold their wakes
    assert held == 3  # the third did: the cap held
    assert last is parts.residents.get("ws-3").handle


def test_a_workspace_whose_wake_took_long_is_not_the_first_evicted_once_bound(
    tmp_path, monkeypatch
):
    """Ranked by when its bind began, a slow wake made the workspace the least recently used
    the moment it was bound: evicted before the call that asked for it got there, then woken
    again by that call, on and on under load."""
    parts, runtime = cap_of_two(tmp_path, monkeypatch)

    async def drive():
        used, slow, incoming = created(parts, "used", "slow", "incoming")
        used_actor = await parts.activator.activate(used)
        runtime.bind_gate = gate = asyncio.Event()
        waking = asyncio.ensure_future(parts.activator.activate(slow))
        while len(runtime.live) < 2:  # the slow one's actor has started
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        used_actor.last_call_at = time.time()  # called while the other wake is slow
        await asyncio.sleep(0.05)
        gate.set()
        await waking
        runtime.bind_gate = None
        await parts.activator.activate(incoming)
        return set(parts.residents.ids())

    assert asyncio.run(drive()) == {"slow", "incoming"}


def test_a_hibernation_failing_with_an_unnamed_error_still_kills_the_actor(tmp_path):
    """Only a timeout or the actor dying were expected: any other failure of the hibernate
    call (Ray's own, under load) skipped the kill, and the actor, no longer resident, lived on
    as nobody's."""
    parts, _control, runtime = directory_parts(tmp_path)

    async def drive():
        workspace_id = created(parts, "failing")[0]
        actor = await parts.activator.activate(workspace_id)
        actor.host.workspace.capture("kept however the hibernation ends")
        actor.hibernate_failure = RuntimeError("the raylet could not be reached")
        answer = await parts.hibernation.hibernate(workspace_id, "idle")
        woken = await parts.activator.activate(workspace_id)
        return answer, actor, woken

    answer, actor, woken = asyncio.run(drive())
    assert "RuntimeError" in answer["error"]
    assert actor.killed and actor.name not in runtime.live
    assert woken.host.workspace.get_count() == {"count": 1}


def test_a_restarted_directory_ends_the_processes_only_the_dead_one_knew(tmp_path):
    """The spare pool and a hibernation under way live in the directory's memory (the
    hibernating workspace's actor name is cleared first): after a crash their processes
    belonged to no one, each holding a workspace slot until the node went."""
    parts, control, runtime = directory_parts(tmp_path)

    async def before_the_crash():
        kept, leaving = created(parts, "kept", "leaving")
        (await parts.activator.activate(kept)).host.workspace.capture("served after it")
        hibernating = await parts.activator.activate(leaving)
        parts.residents.forget(leaving)  # its hibernation began, then the crash
        return kept, hibernating, runtime.start("workspace-actor:of-the-lost-pool", {})

    kept, hibernating, spare = asyncio.run(before_the_crash())
    restarted, _, _ = directory_parts(tmp_path, control=control, runtime=runtime)
    assert restarted.residents.adopt() == 2
    assert hibernating.killed and spare.killed
    assert set(runtime.live) == {restarted.residents.get(kept).actor_name}
    woken = asyncio.run(restarted.activator.activate(kept))
    assert woken.host.workspace.get_count() == {"count": 1}


def test_a_wake_restored_from_a_snapshot_is_recorded_from_the_binds_answer(tmp_path):
    # the actor no longer reports its placement back after a bind the directory asked for:
    # the directory itself records where it opened, and a restore as an event
    parts, control, _ = directory_parts(tmp_path)

    async def drive():
        (ws,) = created(parts, "restored")
        actor = await parts.activator.activate(ws)
        actor.host.workspace.capture("kept in the snapshot")
        await parts.hibernation.hibernate(ws, "manual")
        path = Path(parts.workspaces.workspace_path(ws))
        for leftover in path.parent.glob(path.name + "*"):
            leftover.unlink()  # the node lost its copy
        woken = await parts.activator.activate(ws)
        return ws, woken.host.activation, woken.host.workspace.get_count()

    ws, activation, count = asyncio.run(drive())
    assert activation["source"] == "snapshot" and count == {"count": 1}
    actions = [event["action"] for event in control.audit_log(ws)]
    assert "restore-on-activation" in actions
    assert control.get(ws)["nodeId"] == "in-process-node"


@pytest.mark.parametrize("failure", ["died", "timed out"])
def test_a_wake_whose_process_died_or_timed_out_is_a_503_with_retry_after(tmp_path, failure):
    """Nothing of the call ran: a client must be told to ask again (a 400 said it never may)."""
    from minisphere.directory.actor_runtime import ActorGone
    from minisphere.http.handling import error_json

    parts, _, runtime = directory_parts(tmp_path)

    async def drive():
        workspace_id = parts.workspaces.create("unlucky", None, None)["workspace"]["id"]
        runtime.bind_failure = ActorGone("died") if failure == "died" else TimeoutError()
        with pytest.raises(Exception) as refused:
            await parts.activator.activate(workspace_id)
        await parts.activator.activate(workspace_id)  # and the next wake works
        return refused.value

    answer = error_json(asyncio.run(drive()))
    assert answer.status_code == 503 and int(answer.headers["Retry-After"]) >= 1


def test_a_deleted_workspaces_replica_is_deleted_again_only_after_a_sweep_reached_its_node(
    tmp_path,
):
    """The node's daemon may ship a killed actor's file until that node's sweep unregisters
    it: a sweep whose node failed or timed out must not count as that, or the replica shipped
    meanwhile is kept for good."""
    from minisphere.durability.replication.locations import replica_prefix

    parts, control, runtime = directory_parts(tmp_path)

    async def drive():
        workspace_id = parts.workspaces.create("gone", None, None)["workspace"]["id"]
        await parts.activator.activate(workspace_id)
        generation = control.get(workspace_id)["generation"]
        runtime.node_task_failure = "failed: GetTimeoutError"
        await parts.workspaces.delete(workspace_id)
        await parts.workspaces._sweep
        shipped = replica_prefix(workspace_id, generation) + "0000/late.ltx"
        parts.workspaces.snapshots.put_bytes(shipped, b"shipped after the deletion")
        runtime.node_task_failure = None
        await parts.workspaces.sweep_nodes()  # reaches the node this time
        return parts.workspaces.snapshots.list_keys(replica_prefix(workspace_id, generation))

    assert asyncio.run(drive()) == []


def test_an_upload_landing_after_the_deleted_replica_was_deleted_again_goes_too(tmp_path):
    """An upload under way when the node's sweep let the daemon go of the file (or retried
    after the store was away) lands after the replica was deleted again: a later sweep deletes
    it once more, and they go on until deletes in a row find nothing."""
    from minisphere.durability.replication.locations import replica_prefix

    parts, control, _ = directory_parts(tmp_path)

    async def drive():
        workspace_id = parts.workspaces.create("gone", None, None)["workspace"]["id"]
        await parts.activator.activate(workspace_id)
        generation = control.get(workspace_id)["generation"]
        await parts.workspaces.delete(workspace_id)
        await parts.workspaces._sweep  # reached the node: the replica deleted once more
        late = replica_prefix(workspace_id, generation) + "0000/landed-late.ltx"
        parts.workspaces.snapshots.put_bytes(late, b"an upload that was under way")
        owed = parts.workspaces._retry_at is not None  # the next sweep is asked for
        for _ in range(QUIET_RECHECKS + 1):
            await parts.workspaces.sweep_nodes()
        left = parts.workspaces.snapshots.list_keys(replica_prefix(workspace_id, generation))
        return owed, left, bool(parts.workspaces._replicas_to_recheck)

    owed, left, still_pending = asyncio.run(drive())
    assert owed and left == [] and not still_pending
