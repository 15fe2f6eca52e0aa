"""A hibernated workspace's process goes back to the spare pool and serves the next wake, and
holds nothing of the workspace it served: tenant isolation across a recycled process, on the
real local cluster (Ray actors, Litestream, the S3 store on moto).

The check runs inside the process (the actor's `audit_retained`): after workspace A, with a
canary in its text, hibernated and B was bound in the same process, no live object holds A's
canary, id or path, the engine's text caches are empty, no open file is A's, the node's
replication daemon has no registration of A's file, and B's answers are B's."""

from __future__ import annotations

import contextlib

import ray

from actors.workspace_call import WorkspaceCall
from minisphere.control.auth import token_hash
from minisphere.durability.replication.daemon import LitestreamDaemon
from tests.e2e.helpers import directory_of, workspace_actor

TIMEOUT_S = 60
RESIDENT_CAP_OFF = 100_000  # a cap no test session reaches


def call(http, ws, headers, method, body=None):
    response = http.post(f"/v1/w/{ws}/{method}", json=body or {}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def serve(handle, ws, method, *args):
    return ray.get(handle.serve.remote(ws, method, *args), timeout=TIMEOUT_S)


def hibernated(service, ws) -> dict:
    return ray.get(directory_of(service).hibernate.remote(ws, "manual"), timeout=TIMEOUT_S)


def start_transfers(http, admin_headers, handle, ws, admin, donor) -> None:
    """An export of `ws` and an import into it, both left unfinished."""
    page = serve(handle, ws, "export_page", "recycling-export", 0, 1, admin)
    assert page.ok and not page.value["done"], page
    lines = http.get(f"/v1/workspaces/{donor}/export", headers=admin_headers).text.splitlines()
    chunk = serve(
        handle, ws, "import_chunk", "recycling-import", lines[0], lines[1:2], 0, False, admin
    )
    assert chunk.ok, chunk


def a_then_b_in_one_process(http, admin_headers, new_workspace, service, blueprint=None):
    """Bind A, use it (canary text), hibernate it, bind B: (A, A's canary, B, B's headers, the
    process's handle)."""
    admin = token_hash(service["admin"])
    a, ha = new_workspace_with(http, admin_headers, new_workspace, blueprint)
    donor, hd = new_workspace()
    canary = f"canary-{a}-quokka-zephyr"
    call(http, donor, hd, "capture", {"content": f"donor text {canary}-donated"})
    entry = call(
        http,
        a,
        ha,
        "capture",
        {"content": f"the launch code is {canary}", "tags": [f"tag-{canary}"]},
    )
    assert call(http, a, ha, "recall", {"query": canary})["items"][0]["id"] == entry["id"]
    handle = workspace_actor(service, a)
    start_transfers(http, admin_headers, handle, a, admin, donor)
    with no_other_hibernation(service):
        answer = hibernated(service, a)
        assert answer["hibernated"] and answer["recycled"], answer
        # a spare again: it holds nothing of A, and its text caches are empty
        assert audit(service, handle, a, canary) == {"objects": {}, "files": [], "cacheEntries": 0}
        b, hb = new_workspace()
        call(http, b, hb, "capture", {"content": "bravo's own note"})
    assert (
        ray.get(directory_of(service).actor_name_of.remote(b), timeout=TIMEOUT_S)
        == ray.get(handle.ready.remote(), timeout=TIMEOUT_S)["name"]
    ), "B was not bound in A's process"
    return a, canary, b, hb, handle


@contextlib.contextmanager
def no_other_hibernation(service):
    """Neither the idle sweep nor the resident cap hibernates another workspace meanwhile: a
    process given back goes first in the spare pool's line, so on a slow machine another
    workspace's, given back between A's hibernation and B's wake, would be the one B gets."""
    directory = directory_of(service)
    previous = ray.get(
        directory.set_residency.remote(max_resident=RESIDENT_CAP_OFF, idle_s=0), timeout=TIMEOUT_S
    )
    try:
        yield
    finally:
        ray.get(
            directory.set_residency.remote(
                max_resident=previous["max_resident"], idle_s=previous["idle_s"]
            ),
            timeout=TIMEOUT_S,
        )


def new_workspace_with(http, admin_headers, new_workspace, blueprint):
    if blueprint is None:
        return new_workspace()
    created = http.post("/v1/workspaces", json={"blueprint": blueprint}, headers=admin_headers)
    assert created.status_code == 201, created.text
    ws = created.json()["workspace"]["id"]
    return ws, {"Authorization": f"Bearer {created.json()['token']}"}


def audit(service, handle, a, canary) -> dict:
    path = ray.get(directory_of(service).workspace_path.remote(a), timeout=TIMEOUT_S)
    needles = [canary, a, path]
    return ray.get(
        handle.audit_retained.remote([n.encode().hex() for n in needles]), timeout=TIMEOUT_S
    )


def assert_nothing_of(service, handle, a, canary) -> None:
    """Checked while B is bound (the caches hold B's words by now, so only objects/files)."""
    found = audit(service, handle, a, canary)
    assert found["objects"] == {}, f"objects of A alive in B's process: {found['objects']}"
    assert found["files"] == [], f"files of A open in B's process: {found['files']}"
    path = ray.get(directory_of(service).workspace_path.remote(a), timeout=TIMEOUT_S)
    daemon = LitestreamDaemon(service["config"].replication.daemon_dir)
    try:
        registered = [d.get("path") for d in daemon.control.databases()]
    finally:
        daemon.control.close()
    assert path not in registered


def test_a_recycled_process_holds_nothing_of_the_workspace_it_served(
    http, admin_headers, new_workspace, service
):
    a, canary, b, hb, handle = a_then_b_in_one_process(http, admin_headers, new_workspace, service)
    assert_nothing_of(service, handle, a, canary)
    assert call(http, b, hb, "getCount") == {"count": 1}
    assert call(http, b, hb, "recall", {"query": canary})["items"] == []


def test_a_recycled_vector_bound_process_holds_nothing_of_its_workspace(
    http, admin_headers, new_workspace, service
):
    blueprint = {"bindings": {"vector": {"provider": "hash", "dimensions": 64}}}
    a, canary, b, hb, handle = a_then_b_in_one_process(
        http, admin_headers, new_workspace, service, blueprint
    )
    assert_nothing_of(service, handle, a, canary)
    assert call(http, b, hb, "recall", {"query": canary})["items"] == []


def test_a_stale_handle_of_a_hibernated_workspace_is_refused_by_its_recycled_process(
    http, admin_headers, new_workspace, service
):
    a, _canary, b, _hb, handle = a_then_b_in_one_process(
        http, admin_headers, new_workspace, service
    )
    admin = token_hash(service["admin"])
    # the gate names the workspace meant: a call for A reaching B's process ran nowhere
    stale = serve(handle, a, "call", WorkspaceCall("getCount", {}, admin))
    assert stale.ok is False and stale.error.code == "hibernating"
    # and A, called again, wakes into a process of its own with all of its memory
    assert call(http, a, ha_token(http, admin_headers, a), "getCount") == {"count": 1}
    assert ray.get(directory_of(service).actor_name_of.remote(a), timeout=TIMEOUT_S) != ray.get(
        directory_of(service).actor_name_of.remote(b), timeout=TIMEOUT_S
    )


def ha_token(http, admin_headers, ws) -> dict:
    made = http.post(f"/v1/workspaces/{ws}/tokens", json={"scope": "read"}, headers=admin_headers)
    assert made.status_code in (200, 201), made.text
    return {"Authorization": f"Bearer {made.json()['token']}"}
