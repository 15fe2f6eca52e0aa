"""Killing a workspace actor in the middle of a stream of writes loses no acknowledged write.

A write is acknowledged (HTTP 200) only after its group commit returned. Writes in flight when
the process dies are answered 503 `unavailable` (their outcome is unknown); everything else
must be in the file after the actor restarts on its own.
"""

import asyncio
import contextlib
import os
import signal
import time

import httpx
import pytest
import ray

from tests.e2e.helpers import directory_of, workspace_actor
from tests.support.patient_http import PatientAsyncTransport

WRITES = 240
CONCURRENCY = 16


async def stream_with_kill(url, ws, headers, kill):
    acked, unknown, others = {}, [], []
    sem = asyncio.Semaphore(CONCURRENCY)
    # a capture refused `overloaded` (a busy node) was not run: sent again after its pause
    transport = PatientAsyncTransport()
    async with httpx.AsyncClient(base_url=url, timeout=120, transport=transport) as client:

        async def one(i):
            async with sem:
                r = await client.post(
                    f"/v1/w/{ws}/capture",
                    headers=headers,
                    json={"content": f"fact number {i} in the stream"},
                )
            if r.status_code == 200:
                acked[i] = r.json()["id"]
            elif r.status_code == 503 and r.json()["error"]["code"] == "unavailable":
                unknown.append(i)
            else:
                others.append((i, r.status_code, r.text))

        tasks = [asyncio.create_task(one(i)) for i in range(WRITES)]
        while len(acked) < WRITES // 4:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(kill)
        await asyncio.gather(*tasks)
    return acked, unknown, others


def sigkill_process(service, ws):
    pid = ray.get(workspace_actor(service, ws).stats.remote())["pid"]
    os.kill(pid, signal.SIGKILL)


def ray_kill_with_restart(service, ws):
    ray.kill(workspace_actor(service, ws), no_restart=False)


@pytest.mark.parametrize("how", [sigkill_process, ray_kill_with_restart])
def test_no_acknowledged_write_is_lost(http, new_workspace, service, how):
    ws, h = new_workspace()
    acked, unknown, others = asyncio.run(
        stream_with_kill(service["url"], ws, h, lambda: how(service, ws))
    )
    print(f"\n{how.__name__}: acked={len(acked)} unknown={len(unknown)}")
    assert others == []
    assert len(acked) >= WRITES // 4
    for i, entry_id in acked.items():
        r = http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": entry_id})
        assert r.status_code == 200, (i, r.text)
        assert r.json()["content"] == f"fact number {i} in the stream"
    count = http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"]
    assert len(acked) <= count <= len(acked) + len(unknown)
    stats = ray.get(workspace_actor(service, ws).stats.remote())
    assert stats["restarted"] is True
    # writes whose outcome was unknown can simply be repeated: stored or blocked, never twice
    for i in unknown:
        r = http.post(
            f"/v1/w/{ws}/capture", headers=h, json={"content": f"fact number {i} in the stream"}
        )
        assert r.json()["outcome"] in ("stored", "blocked")
    assert http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"] == len(
        acked
    ) + len(unknown)


def test_a_bind_reaching_an_actor_that_rebound_itself_after_a_restart_is_answered_not_a_500(
    http, new_workspace, service
):
    """Ray restarts a killed actor and it binds itself to its workspace again; the directory's
    own bind, sent when the kill came mid-bind, then found it bound and answered 500 (seen in
    the fault soak). It now answers the activation the actor already has."""
    ws, h = new_workspace()
    assert (
        http.post(
            f"/v1/w/{ws}/capture", headers=h, json={"content": "written before the restart"}
        ).status_code
        == 200
    )
    actor = workspace_actor(service, ws)
    before = ray.get(actor.stats.remote())
    os.kill(before["pid"], signal.SIGKILL)
    restarted = None
    for _ in range(600):  # Ray restarts it; it binds itself on the way
        try:
            restarted = ray.get(actor.stats.remote(), timeout=60)
            break
        except ray.exceptions.RayActorError:
            time.sleep(0.1)
    assert restarted is not None and restarted["pid"] != before["pid"]
    launch, grants = ray.get(
        directory_of(service).binding_of_actor.remote(before["name"]), timeout=60
    )
    answer = ray.get(actor.bind.remote(launch, grants), timeout=120)
    assert answer.ok, answer.error
    assert ray.get(actor.stats.remote())["restarted"] is True
    assert http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"] == 1


HUNG_AFTER_S = 3.0  # the liveness bound for this test (30 s in the service)
REPLACED_WITHIN_S = 120.0  # a generous wait for the condition on a busy machine


def test_a_stopped_actor_is_ended_within_the_liveness_bound_and_its_workspace_answers_again(
    http, new_workspace, service
):
    """A workspace actor that stops answering (SIGSTOP: a wedged process) was never replaced:
    the workspace stayed unusable. The directory ends it once it has been silent past the
    bound, and the next call wakes the workspace with every acknowledged write."""
    ws, h = new_workspace()
    acked = [
        http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": f"kept {i}"}).json()["id"]
        for i in range(3)
    ]
    directory = directory_of(service)
    stopped_pid = ray.get(workspace_actor(service, ws).stats.remote(), timeout=30)["pid"]
    ended_before = ray.get(directory.residency_status.remote(), timeout=30)["hungEnded"]
    previous = ray.get(directory.set_residency.remote(hung_after_s=HUNG_AFTER_S), timeout=30)
    os.kill(stopped_pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + REPLACED_WITHIN_S
        while time.monotonic() < deadline:
            status = ray.get(directory.residency_status.remote(), timeout=30)
            if status["hungEnded"] > ended_before:
                break
            time.sleep(0.5)
        assert status["hungEnded"] == ended_before + 1, status
        count = http.post(f"/v1/w/{ws}/getCount", headers=h, json={})
        assert count.status_code == 200 and count.json() == {"count": 3}, count.text
        for entry_id in acked:
            assert http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": entry_id}).is_success
        woken_pid = ray.get(workspace_actor(service, ws).stats.remote(), timeout=30)["pid"]
        assert woken_pid != stopped_pid
    finally:
        ray.get(directory.set_residency.remote(hung_after_s=previous["hung_after_s"]), timeout=30)
        with contextlib.suppress(ProcessLookupError):  # ended by then: nothing to resume
            os.kill(stopped_pid, signal.SIGCONT)
