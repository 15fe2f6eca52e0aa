"""Hibernation: an idle or least-recently-used workspace actor snapshots, closes and exits; the
next call re-activates it transparently (from its local file, or from the snapshot store when
the file is missing or its node is gone); the resident cap holds."""

import asyncio
import time
from pathlib import Path

import httpx
import pytest
import ray

from actors.directory.actor import DIRECTORY_NAME
from tests.e2e.helpers import post_answered, workspace_actor


@pytest.fixture
def directory(service):
    return ray.get_actor(DIRECTORY_NAME, namespace=service["config"].namespace)


def alive(service, ws) -> bool:
    return workspace_actor(service, ws) is not None


def capture(http, ws, h, text):
    r = http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": text})
    assert r.status_code == 200, r.text
    return r.json()["id"]


def test_hibernate_and_reactivate_round_trip(
    http, admin_headers, new_workspace, service, directory
):
    ws, h = new_workspace()
    ids = [capture(http, ws, h, f"remember {i}") for i in range(3)]
    out = ray.get(directory.hibernate.remote(ws))
    assert out["snapshot"]["entryCount"] == 3 and not out["pendingSnapshot"]
    assert not alive(service, ws)
    record = http.get(f"/v1/workspaces/{ws}", headers=admin_headers).json()
    assert record["state"] == "hibernated" and record["durability"]["resident"] is False
    assert record["durability"]["lastSnapshotVersion"] == out["snapshot"]["version"]
    assert record["nodeId"]

    # the ingress still caches the dead actor's handle: reads and writes re-activate it
    r = http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": ids[2]})
    assert r.status_code == 200 and r.json()["content"] == "remember 2"
    ray.get(directory.hibernate.remote(ws))
    capture(http, ws, h, "written to a hibernated workspace")
    assert alive(service, ws)
    record = http.get(f"/v1/workspaces/{ws}", headers=admin_headers).json()
    assert record["state"] == "active" and record["durability"]["resident"] is True
    assert record["durability"]["activation"]["source"] == "local"


def test_missing_file_is_restored_from_its_replica_first(
    http, admin_headers, new_workspace, service, directory
):
    """The session replicates (the embedded default, async): a workspace whose node lost its
    disk comes back from its replica, the newest state the store holds (the snapshot path
    without replication: tests/hosting and the multinode scenario)."""
    ws, h = new_workspace()
    capture(http, ws, h, "survives the loss of the node's disk")
    ray.get(directory.hibernate.remote(ws))
    path = Path(ray.get(directory.workspace_path.remote(ws)))
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    ray.get(directory.set_placement.remote(ws, "f" * 56))  # "its node is gone"
    r = http.post(f"/v1/w/{ws}/getCount", headers=h, json={})
    assert r.status_code == 200 and r.json()["count"] == 1
    shown = http.get(f"/v1/workspaces/{ws}", headers=admin_headers).json()["durability"]
    assert shown["activation"]["source"] == "replica"
    assert "gone" in shown["placement"]


def test_idle_workspace_hibernates_on_its_own(
    http, admin_headers, new_workspace, service, directory
):
    ws, h = new_workspace()
    capture(http, ws, h, "idle soon")
    previous = ray.get(directory.set_residency.remote(idle_s=1.0))
    try:
        time.sleep(1.5)
        ray.get(directory.sweep.remote())
        assert not alive(service, ws)
    finally:
        ray.get(directory.set_residency.remote(idle_s=previous["idle_s"]))
    assert http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"] == 1


# ten times the cap: every wake past the fifth evicts (the directory's own parts are driven
# through a thousand wakes in process, tests/directory/test_directory_state.py)
CAP = 5
WORKSPACES = 10 * CAP


async def touch_many(url, admin, n, concurrency, sample):
    sem = asyncio.Semaphore(concurrency)
    made, peaks = {}, []
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:

        async def one(i):
            async with sem:
                r = await client.post("/v1/workspaces", headers=admin, json={"id": f"cap-{i:04d}"})
                assert r.status_code == 201, r.text
                token = {"Authorization": f"Bearer {r.json()['token']}"}
                r = await post_answered(
                    client,
                    f"/v1/w/cap-{i:04d}/capture",
                    headers=token,
                    json={"content": f"workspace {i} knows one thing"},
                )
                assert r.status_code == 200, r.text
                made[f"cap-{i:04d}"] = token
                if i % 10 == 0:
                    peaks.append(await asyncio.to_thread(sample))

        await asyncio.gather(*(one(i) for i in range(n)))
    return made, peaks


def test_resident_cap_holds_while_ten_times_as_many_workspaces_wake(
    http, admin_headers, service, directory
):
    # the cap under test, without the rule that keeps workspaces in session (each one here is
    # called once, just before the next wakes: all would be in session)
    previous = ray.get(directory.set_residency.remote(max_resident=CAP, in_session_s=0))
    made = {}
    try:

        def sample():
            return len(ray.get(directory.resident.remote()))

        made, peaks = asyncio.run(touch_many(service["url"], admin_headers, WORKSPACES, 4, sample))
        resident = ray.get(directory.resident.remote())
        print(f"\nresident samples: max {max(peaks)}; at the end {len(resident)}")
        assert max(peaks) <= CAP and len(resident) <= CAP
        for ws in ("cap-0000", f"cap-{WORKSPACES // 2:04d}", f"cap-{WORKSPACES - 1:04d}"):
            r = http.post(f"/v1/w/{ws}/getCount", headers=made[ws], json={})
            assert r.status_code == 200 and r.json()["count"] == 1
        assert len(ray.get(directory.resident.remote())) <= CAP
    finally:
        ray.get(
            directory.set_residency.remote(
                max_resident=previous["max_resident"], in_session_s=previous["in_session_s"]
            )
        )
        for ws in made:
            http.delete(f"/v1/workspaces/{ws}", headers=admin_headers)
