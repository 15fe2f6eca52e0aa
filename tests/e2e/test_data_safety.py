"""Data-safety drills through the running service: a restore survives hibernation and the loss
of the file, a forgotten text is in no file of the data folder (nor in the store once pruned),
a re-created id sees none of the deleted workspace's snapshots, and imports go through the
workspace's admission like any write."""

import gzip
import json
import time

import boto3
import ray

from tests.e2e.helpers import capture, count, directory_of, snapshot, workspace_actor

SECRET = "ocelot-lantern-77310"


def hibernate(http, ws, admin):
    r = http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin)
    assert r.status_code == 200 and r.json()["hibernated"], r.text
    return r.json()


def workspace_files(service, ws):
    return [p for p in (service["data_dir"] / "workspaces" / ws).iterdir() if p.is_file()]


def stored_objects(service, ws):
    """(key, bytes decompressed) of every object the store holds for the workspace id."""
    s3 = service["snapshots"]
    client = boto3.client("s3", endpoint_url=s3["endpoint"], region_name="us-east-1")
    listed = client.list_objects_v2(Bucket=s3["bucket"], Prefix=f"{s3['prefix']}{ws}/")
    found = []
    for item in listed.get("Contents", []):
        body = client.get_object(Bucket=s3["bucket"], Key=item["Key"])["Body"].read()
        found.append((item["Key"], gzip.decompress(body) if item["Key"].endswith(".gz") else body))
    return found


def test_restore_then_hibernate_then_lost_file_comes_back_restored(
    http, admin_headers, new_workspace, service
):
    ws, h = new_workspace()
    capture(http, ws, h, "the good state")
    v1 = snapshot(http, ws, admin_headers)["version"]
    capture(http, ws, h, "a bad write to undo")
    snapshot(http, ws, admin_headers)
    r = http.post(f"/v1/workspaces/{ws}/restore", headers=admin_headers, json={"version": v1})
    assert r.status_code == 200, r.text
    assert r.json()["newestVersion"] != v1
    hibernated = hibernate(http, ws, admin_headers)
    assert hibernated["snapshot"] is None  # nothing changed since the restore
    for path in workspace_files(service, ws):  # the node's disk is gone
        path.unlink()
    assert count(http, ws, h) == 1
    versions = http.get(f"/v1/workspaces/{ws}/snapshots", headers=admin_headers).json()["items"]
    assert versions[-1]["reason"] == "restore" and versions[-1]["restoredFrom"] == v1


def test_forget_snapshot_restore_leaves_the_text_in_no_file_of_the_data_folder(
    http, admin_headers, new_workspace, service
):
    ws, h = new_workspace()
    for i in range(20):
        capture(http, ws, h, f"a harmless note {i}")
    secret = capture(http, ws, h, f"the alarm code is {SECRET}")
    early = snapshot(http, ws, admin_headers)["version"]  # before the forget: holds the text
    assert http.post(f"/v1/w/{ws}/forget", headers=h, json={"id": secret}).status_code == 200
    later = snapshot(http, ws, admin_headers)["version"]
    r = http.post(f"/v1/workspaces/{ws}/restore", headers=admin_headers, json={"version": later})
    assert r.status_code == 200, r.text
    assert count(http, ws, h) == 20
    hibernate(http, ws, admin_headers)  # every connection closed, WAL folded
    for path in service["data_dir"].rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    holding = [key for key, data in stored_objects(service, ws) if SECRET.encode() in data]
    assert holding == []  # the version from before the forget went with it
    pruned = http.post(
        f"/v1/workspaces/{ws}/snapshots/prune", headers=admin_headers, json={"keep": 1}
    )
    assert pruned.status_code == 200, pruned.text
    listed = http.get(f"/v1/workspaces/{ws}/snapshots", headers=admin_headers)
    assert listed.status_code == 200 and early not in listed.text
    assert [key for key, data in stored_objects(service, ws) if SECRET.encode() in data] == []
    assert count(http, ws, h) == 20


def test_prune_needs_admin_and_a_sane_keep(http, admin_headers, new_workspace):
    ws, h = new_workspace()
    capture(http, ws, h, "x")
    url = f"/v1/workspaces/{ws}/snapshots/prune"
    assert http.post(url, headers=h, json={"keep": 1}).status_code == 401
    for bad in ({"keep": 0}, {"keep": "1"}, {"keep": 1, "more": True}):
        r = http.post(url, headers=admin_headers, json=bad)
        assert r.status_code == 400, (bad, r.text)


def test_recreated_id_never_sees_snapshots_a_failed_delete_left(http, admin_headers, service):
    ws = "ws-reborn-" + str(int(time.time() * 1000) % 10**8)
    created = http.post("/v1/workspaces", headers=admin_headers, json={"id": ws})
    assert created.status_code == 201, created.text
    h = {"Authorization": f"Bearer {created.json()['token']}"}
    capture(http, ws, h, "the previous tenant's private fact")
    snapshot(http, ws, admin_headers)
    relay = service["s3_relay"]
    relay.stop()
    try:
        deleted = http.delete(f"/v1/workspaces/{ws}", headers=admin_headers)
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["snapshotsDeleted"] is False
    finally:
        relay.start()
    again = http.post("/v1/workspaces", headers=admin_headers, json={"id": ws})
    assert again.status_code == 201, again.text
    h2 = {"Authorization": f"Bearer {again.json()['token']}"}
    try:
        listed = http.get(f"/v1/workspaces/{ws}/snapshots", headers=h2)
        assert listed.status_code == 200 and listed.json()["items"] == []
        assert count(http, ws, h2) == 0
        left = ray.get(directory_of(service).settle_snapshot_debts.remote(), timeout=60)
        assert left == 0
        old = [
            key
            for key, _ in stored_objects(service, ws)
            if again.json()["workspace"]["generation"] not in key
        ]
        assert old == []
    finally:
        http.delete(f"/v1/workspaces/{ws}", headers=admin_headers)


def test_import_runs_through_the_workspaces_admission_and_notes_the_scheduler(
    http, admin_headers, new_workspace, service
):
    source, source_headers = new_workspace()
    capture(http, source, source_headers, "imported through the gate", volatility="volatile")
    export = http.get(f"/v1/workspaces/{source}/export", headers=admin_headers).text
    target, _target_headers = new_workspace()
    passed = http.post(f"/v1/w/{target}/runStalenessPass", headers=admin_headers, json={})
    assert passed.status_code == 200, passed.text  # a recorded, clean due state
    directory = directory_of(service)
    assert (
        ray.get(directory.maintenance.remote("due_state", target), timeout=30)["dirtySince"] is None
    )
    lines = export.splitlines()
    r = http.post(
        f"/v1/workspaces/{target}/import",
        params={"key": "a" * 64, "first": 1, "final": "true"},
        content=("\n".join(lines) + "\n").encode(),
        headers=admin_headers,
    )
    assert r.status_code == 200, r.text
    assert json.loads(r.text)["entries"] == 1
    deadline = time.time() + 10
    while True:  # the note is fire-and-forget
        state = ray.get(directory.maintenance.remote("due_state", target), timeout=30)
        if state["dirtySince"] is not None or time.time() > deadline:
            break
        time.sleep(0.05)
    assert state["dirtySince"] is not None
    stats = ray.get(workspace_actor(service, target).stats.remote(), timeout=30)
    assert stats["durability"]["snapshots"]["pendingWrites"] >= 1
