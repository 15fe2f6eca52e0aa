"""Snapshots over HTTP: on demand, listed, restored to an earlier version; a corrupted
snapshot is refused with the workspace untouched; S3 down then back."""

import time

import boto3
import pytest

from tests.e2e.helpers import capture, count, snapshot


def test_restore_to_an_earlier_version_over_http(http, admin_headers, new_workspace):
    ws, h = new_workspace()
    kept = [capture(http, ws, h, f"early fact {i}") for i in range(2)]
    first = snapshot(http, ws, admin_headers)
    assert first["entryCount"] == 2 and first["workspace"] == ws
    later = capture(http, ws, h, "a later fact")
    second = snapshot(http, ws, admin_headers)
    listed = http.get(f"/v1/workspaces/{ws}/snapshots", headers=admin_headers)
    assert listed.status_code == 200, listed.text
    versions = [s["version"] for s in listed.json()["items"]]
    assert versions[-2:] == [first["version"], second["version"]]
    assert http.get(f"/v1/workspaces/{ws}/snapshots", headers=h).status_code == 200  # own token

    r = http.post(
        f"/v1/workspaces/{ws}/restore", headers=admin_headers, json={"version": first["version"]}
    )
    assert r.status_code == 200, r.text
    assert r.json()["version"] == first["version"]
    assert count(http, ws, h) == 2
    assert http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": kept[1]}).status_code == 200
    assert http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": later}).status_code == 404
    capture(http, ws, h, "written after the restore")  # the workspace is writable
    assert count(http, ws, h) == 3


def test_restore_needs_admin_and_a_known_version(http, admin_headers, new_workspace):
    ws, h = new_workspace()
    capture(http, ws, h, "x")
    assert (
        http.post(
            f"/v1/workspaces/{ws}/restore",
            headers=h,
            json={"version": "20200101T000000000Z-000001"},
        ).status_code
        == 401
    )
    assert http.post(f"/v1/workspaces/{ws}/snapshot", headers=h).status_code == 401
    r = http.post(
        f"/v1/workspaces/{ws}/restore",
        headers=admin_headers,
        json={"version": "20200101T000000000Z-000001"},
    )
    assert r.status_code == 404 and r.json()["error"]["code"] == "snapshot_not_found"
    r = http.post(f"/v1/workspaces/{ws}/restore", headers=admin_headers, json={})
    assert r.status_code == 400
    assert count(http, ws, h) == 1


def test_corrupted_snapshot_is_refused_over_http(http, admin_headers, new_workspace, service):
    ws, h = new_workspace()
    for i in range(5):
        capture(http, ws, h, f"precious fact {i}")
    manifest = snapshot(http, ws, admin_headers)
    capture(http, ws, h, "after the snapshot")
    settings = service["snapshots"]
    s3 = boto3.client("s3", endpoint_url=settings["endpoint"], region_name="us-east-1")
    key = settings["prefix"] + manifest["blobKey"]
    blob = s3.get_object(Bucket=settings["bucket"], Key=key)["Body"].read()
    s3.put_object(Bucket=settings["bucket"], Key=key, Body=blob[: len(blob) // 2])
    r = http.post(
        f"/v1/workspaces/{ws}/restore", headers=admin_headers, json={"version": manifest["version"]}
    )
    assert r.status_code == 422, r.text
    body = r.json()["error"]
    assert body["code"] == "snapshot_corrupt" and "was not changed" in body["message"]
    assert count(http, ws, h) == 6


def test_s3_down_then_back(http, admin_headers, new_workspace, service):
    ws, h = new_workspace()
    capture(http, ws, h, "before the outage")
    relay = service["s3_relay"]
    relay.stop()
    try:
        capture(http, ws, h, "acknowledged while S3 is down")  # writes go on
        r = http.post(f"/v1/workspaces/{ws}/snapshot", headers=admin_headers)
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "snapshot_store_unavailable"
        shown = http.get(f"/v1/workspaces/{ws}", headers=admin_headers).json()["durability"]
        status = shown["snapshots"]
        assert status["consecutiveFailures"] >= 1 and status["lastFailureAt"]
        assert "cannot reach" in status["lastFailure"]
    finally:
        relay.start()
    deadline = time.monotonic() + 60  # the background retry after its backoff
    while time.monotonic() < deadline:
        status = http.get(f"/v1/workspaces/{ws}", headers=admin_headers).json()["durability"][
            "snapshots"
        ]
        if status["consecutiveFailures"] == 0 and status["lastVersion"]:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"snapshot was not retried after S3 came back: {status}")
    assert status["pendingWrites"] == 0
    items = http.get(f"/v1/workspaces/{ws}/snapshots", headers=admin_headers).json()["items"]
    assert items[-1]["entryCount"] == 2
