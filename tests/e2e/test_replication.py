"""Continuous replication through the running service (the session's service replicates to its
S3-protocol store with the embedded default, `async`): a restore to a moment over HTTP and
through the client, the replication status in a workspace's record, and the refusal of a
moment before anything was written."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from minisphere.client import Client, ServiceError
from tests.e2e.helpers import capture

MOMENT_GAP_S = 1.2  # the replica's moments are to the second: stand well clear of one
SHIPPED_WITHIN_S = 30.0


def moment_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def shipped(http, admin_headers, ws) -> None:
    """Until the replica has the writes so far: a moment counts a write from when it was
    shipped (async: within about a second of its commit)."""
    before = dt.datetime.now(dt.UTC).isoformat()
    deadline = time.monotonic() + SHIPPED_WITHIN_S
    while time.monotonic() < deadline:
        record = http.get(f"/v1/workspaces/{ws}", headers=admin_headers).json()
        last = (record["durability"].get("replication") or {}).get("lastSyncAt") or ""
        if last[:26] >= before[:26]:
            return
        time.sleep(0.2)
    raise AssertionError(f"{ws}: not shipped within {SHIPPED_WITHIN_S} s")


def contents(http, ws, h) -> list[str]:
    answer = http.post(f"/v1/w/{ws}/listRecent", headers=h, json={})
    return [item["content"] for item in answer.json()["items"]]


def test_a_restore_to_a_moment_over_http_brings_back_exactly_the_writes_before_it(
    http, admin_headers, new_workspace
):
    ws, h = new_workspace()
    capture(http, ws, h, "kept: written before the moment")
    shipped(http, admin_headers, ws)
    time.sleep(MOMENT_GAP_S)
    moment = moment_now()
    time.sleep(MOMENT_GAP_S)
    capture(http, ws, h, "undone: written after the moment")
    restored = http.post(
        f"/v1/workspaces/{ws}/restore-to-moment", headers=admin_headers, json={"timestamp": moment}
    )
    assert restored.status_code == 200, restored.text
    assert restored.json()["moment"] == moment
    assert contents(http, ws, h) == ["kept: written before the moment"]
    capture(http, ws, h, "written after the restore")  # writable again
    record = http.get(f"/v1/workspaces/{ws}", headers=admin_headers).json()
    assert record["location"]["position"] >= restored.json()["position"]


def test_the_client_restores_a_moment_and_refuses_one_before_any_write(
    http, admin_headers, new_workspace, service
):
    ws, h = new_workspace()
    with Client(service["url"], admin_token=service["admin"]) as admin:
        too_early = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
        capture(http, ws, h, "the only write")
        shipped(http, admin_headers, ws)
        time.sleep(MOMENT_GAP_S)
        moment = moment_now()
        time.sleep(MOMENT_GAP_S)
        assert admin.restore(ws, timestamp=moment)["moment"] == moment
        with pytest.raises(ServiceError) as refused:
            admin.restore(ws, timestamp=too_early)
        assert refused.value.status == 404
    assert contents(http, ws, h) == ["the only write"]


def test_a_moment_that_is_not_a_past_utc_second_is_a_400_that_changes_nothing(
    http, admin_headers, new_workspace
):
    ws, h = new_workspace()
    capture(http, ws, h, "untouched")
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for bad in (
        "yesterday",
        "2026-12-02 06:00:00",
        "2026-12-02T06:00:00+01:00",
        17,
        "0000-00-00T00:00:00Z",
        "2026-13-45T25:61:61Z",
        future,
    ):
        answer = http.post(
            f"/v1/workspaces/{ws}/restore-to-moment", headers=admin_headers, json={"timestamp": bad}
        )
        assert answer.status_code == 400, (bad, answer.text)
        assert set(answer.json()["error"]) == {"code", "message"}
    assert contents(http, ws, h) == ["untouched"]


def test_a_workspace_record_shows_its_replication_and_when_it_last_shipped(
    http, admin_headers, new_workspace
):
    ws, h = new_workspace()
    capture(http, ws, h, "shipped within a second")
    deadline = time.monotonic() + 15
    while True:
        record = http.get(f"/v1/workspaces/{ws}", headers=admin_headers).json()
        replication = record["durability"].get("replication") or {}
        if replication.get("lastSyncAt") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert replication.get("mode") == "async", record["durability"]
    assert replication.get("lastSyncAt"), replication
