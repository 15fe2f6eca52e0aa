"""Maintenance through the real service (session Ray + Serve): the scheduled-tasks singleton,
its jobs surviving a restart without duplicates, audited runs (ok / skipped without waking a
hibernated workspace / error), the manual pass for the admin token only, and the runs listing."""

import time

import pytest
import ray

from actors.directory.actor import get_directory
from actors.scheduler.actor import get_scheduled_tasks
from tests.e2e.helpers import workspace_actor


def call(http, ws, headers, method, body=None):
    return http.post(f"/v1/w/{ws}/{method}", json=body or {}, headers=headers)


def runs(http, admin_headers, **params):
    response = http.get("/v1/maintenance/runs", params=params, headers=admin_headers)
    assert response.status_code == 200, response.text
    return response.json()["items"]


def wait_gone(service, ws, timeout_s=20):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if workspace_actor(service, ws) is None:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def scheduler(service):
    handle = get_scheduled_tasks(service["config"])
    ray.get(handle.status.remote(), timeout=60)
    return handle


def test_manual_pass_is_admin_only_and_audited(http, new_workspace, admin_headers):
    ws, h = new_workspace()
    assert call(http, ws, h, "capture", {"content": "price is $4 today"}).status_code == 200
    refused = call(http, ws, h, "runStalenessPass", {"limit": 5})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    passed = call(http, ws, admin_headers, "runStalenessPass", {"limit": 5})
    assert passed.status_code == 200, passed.text
    assert set(passed.json()) == {"scanned", "marked", "cleared", "remaining", "nextDueAt"}
    rows = runs(http, admin_headers, workspace=ws)
    assert [(r["trigger"], r["outcome"], r["calls"]) for r in rows] == [("manual", "ok", 1)]
    assert rows[0]["nextDueAt"] == passed.json()["nextDueAt"]
    # the listing itself is admin-only and validates its arguments
    assert http.get("/v1/maintenance/runs", headers=h).status_code == 401
    assert (
        http.get("/v1/maintenance/runs", params={"limit": "0"}, headers=admin_headers).status_code
        == 400
    )
    assert (
        http.get(
            "/v1/maintenance/runs", params={"workspace": "../x"}, headers=admin_headers
        ).status_code
        == 400
    )


def test_runs_listing_filters_by_workspace_newest_first(http, new_workspace, admin_headers):
    a, _ = new_workspace()
    b, _ = new_workspace()
    for ws in (a, b, a):
        assert call(http, ws, admin_headers, "runStalenessPass").status_code == 200
    assert [r["workspaceId"] for r in runs(http, admin_headers, workspace=a)] == [a, a]
    newest = runs(http, admin_headers, limit=3)
    assert [r["workspaceId"] for r in newest] == [a, b, a]
    assert newest[0]["startedAt"] >= newest[1]["startedAt"] >= newest[2]["startedAt"]


def test_scheduler_is_a_singleton_and_restarts_without_duplicate_jobs(
    service, scheduler, new_workspace
):
    ws, _ = new_workspace()
    again = get_scheduled_tasks(service["config"])
    assert again._actor_id == scheduler._actor_id
    ray.get(scheduler.refresh.remote(), timeout=60)
    before = sorted(j["id"] for j in ray.get(scheduler.jobs.remote(), timeout=60))
    assert ws in before and len(before) == len(set(before))
    ray.kill(scheduler, no_restart=False)  # crash: Ray restarts it
    deadline = time.time() + 60
    while True:  # the kill is asynchronous: wait for the restarted one
        try:
            if ray.get(scheduler.status.remote(), timeout=30)["restarted"]:
                break
        except ray.exceptions.RayActorError:
            pass
        assert time.time() < deadline
        time.sleep(0.2)
    after = sorted(j["id"] for j in ray.get(scheduler.jobs.remote(), timeout=60))
    assert after == before


def test_scheduled_runs_ok_then_skipped_without_waking_the_workspace(
    service, scheduler, http, new_workspace, admin_headers
):
    ws, h = new_workspace()
    assert call(http, ws, h, "capture", {"content": "we store times in UTC"}).status_code == 200
    first = ray.get(scheduler.run_scheduled.remote(ws), timeout=60)
    assert first["outcome"] == "ok" and first["trigger"] == "cron" and first["remaining"] == 0
    # a capture after the pass is noted (before it is queued) for the skip rule
    assert call(http, ws, h, "capture", {"content": "the CI runs on v2.1"}).status_code == 200
    directory = get_directory(service["config"])
    # the note is sent without waiting for it, before the write is queued: it lands promptly
    deadline = time.time() + 10
    while True:
        state = ray.get(directory.maintenance.remote("due_state", ws), timeout=30)
        if state["dirtySince"] is not None or time.time() > deadline:
            break
        time.sleep(0.05)
    assert state["dirtySince"] is not None
    # hibernate the workspace: a run with nothing due must not wake it
    assert ray.get(directory.hibernate.remote(ws), timeout=120)["hibernated"] is True
    assert wait_gone(service, ws)
    skipped = ray.get(scheduler.run_scheduled.remote(ws), timeout=60)
    assert skipped["outcome"] == "skipped" and skipped["error"].startswith("not due until")
    assert workspace_actor(service, ws) is None
    outcomes = [r["outcome"] for r in runs(http, admin_headers, workspace=ws)]
    assert outcomes == ["skipped", "ok"]


def test_a_failing_workspace_is_audited_as_error(
    service, scheduler, http, new_workspace, admin_headers
):
    ws, _ = new_workspace()
    ray.get(scheduler.refresh.remote(), timeout=60)
    assert http.delete(f"/v1/workspaces/{ws}", headers=admin_headers).status_code == 200
    row = ray.get(scheduler.run_scheduled.remote(ws), timeout=60)  # its job not yet refreshed
    assert row["outcome"] == "error" and row["error"].startswith("not_found")
    assert runs(http, admin_headers, workspace=ws)[0]["runId"] == row["runId"]


def test_client_lists_runs(service, http, new_workspace, admin_headers):
    from minisphere.client.client import Client

    ws, _ = new_workspace()
    assert call(http, ws, admin_headers, "runStalenessPass", {"limit": 3}).status_code == 200
    with Client(service["url"], admin_token=service["admin"]) as client:
        rows = client.maintenance_runs(ws, limit=5)
    assert [(r["workspaceId"], r["trigger"], r["outcome"]) for r in rows] == [(ws, "manual", "ok")]


def test_a_restore_resets_the_recorded_due_state(service, http, new_workspace, admin_headers):
    ws, h = new_workspace()
    assert call(http, ws, h, "capture", {"content": "the lab opens at nine"}).status_code == 200
    snap = http.post(f"/v1/workspaces/{ws}/snapshot", headers=admin_headers)
    assert snap.status_code == 200, snap.text
    assert call(http, ws, admin_headers, "runStalenessPass").status_code == 200
    directory = get_directory(service["config"])
    assert ray.get(directory.maintenance.remote("due_state", ws), timeout=30) is not None
    restored = http.post(
        f"/v1/workspaces/{ws}/restore",
        json={"version": snap.json()["version"]},
        headers=admin_headers,
    )
    assert restored.status_code == 200, restored.text
    deadline = time.time() + 20  # the reset is fire-and-forget from the actor
    while ray.get(directory.maintenance.remote("due_state", ws), timeout=30) is not None:
        assert time.time() < deadline
        time.sleep(0.1)
