"""What tenants and operators are told when something of the deployment fails: a workspace-token
caller never reads a bucket, an endpoint or a local path; the admin token still gets the
details; the details are always logged."""

from __future__ import annotations

import logging
import uuid
from urllib.parse import urlparse

import pytest

from minisphere import errors as E
from minisphere.durability.stores import LocalDirSnapshotStore, S3SnapshotStore
from minisphere.http.statuses import ADMIN, TENANT, error_response
from tests.http.standin import ADMIN as ADMIN_HEADERS
from tests.http.standin import TENANT as TENANT_HEADERS
from tests.http.standin import StandInGateway, make_api, one


def missing_bucket_store(s3_endpoint) -> tuple[S3SnapshotStore, list[str]]:
    """A real S3 store whose bucket does not exist: listing fails with the store's own error."""
    bucket = f"secret-bucket-{uuid.uuid4().hex[:12]}"
    store = S3SnapshotStore(
        bucket, "tenant-data/", endpoint_url=s3_endpoint, region="us-east-1", max_attempts=1
    )
    host = urlparse(s3_endpoint)
    return store, [bucket, "s3://", f"{host.hostname}:{host.port}", "tenant-data"]


def test_tenant_listing_snapshots_is_not_told_the_bucket_or_endpoint(s3_endpoint, caplog):
    store, secrets = missing_bucket_store(s3_endpoint)
    api = make_api(StandInGateway(snapshot_store=store))
    with caplog.at_level(logging.WARNING, logger="minisphere.http"):
        tenant = one(api, "GET", "/v1/workspaces/notes/snapshots", headers=TENANT_HEADERS)
        admin = one(api, "GET", "/v1/workspaces/notes/snapshots", headers=ADMIN_HEADERS)
    assert tenant.status_code == admin.status_code == 503
    assert (
        tenant.json()["error"]["code"]
        == admin.json()["error"]["code"]
        == "snapshot_store_unavailable"
    )
    for secret in secrets:
        assert secret not in tenant.text
    assert tenant.json()["error"]["message"] == E.SnapshotStoreUnavailable.public_message
    # the operator keeps the message as it always was, and the log has it for both answers
    assert secrets[0] in admin.json()["error"]["message"] and "s3://" in admin.text
    logged = [r.getMessage() for r in caplog.records if r.name == "minisphere.http"]
    assert len(logged) == 2 and all(secrets[0] in line for line in logged)


def test_tenant_calling_a_method_is_not_told_the_local_snapshot_path(tmp_path):
    blocked = tmp_path / "private-snapshot-root"
    blocked.write_text("a file where the store's folder should be")
    store = LocalDirSnapshotStore(blocked)
    source = tmp_path / "blob"
    source.write_bytes(b"x")
    with pytest.raises(E.SnapshotStoreUnavailable) as caught:  # the store's real failure
        store.put_file("notes/v.db.gz", source)
    api = make_api(StandInGateway(failure=caught.value))
    tenant = one(api, "POST", "/v1/w/notes/capture", json={"content": "x"}, headers=TENANT_HEADERS)
    admin = one(api, "POST", "/v1/w/notes/capture", json={"content": "x"}, headers=ADMIN_HEADERS)
    assert tenant.status_code == admin.status_code == 503
    assert str(tmp_path) not in tenant.text and "private-snapshot-root" not in tenant.text
    assert str(blocked) in admin.json()["error"]["message"]


def test_unauthenticated_caller_is_answered_as_a_tenant():
    failure = E.SnapshotError("cannot copy /srv/minisphere/data/workspaces/notes/workspace.db")
    api = make_api(StandInGateway(failure=failure))
    wrong = one(
        api,
        "GET",
        "/v1/workspaces/notes/snapshots",
        headers={"Authorization": "Bearer msw_not-a-token-at-all-0000000000"},
    )
    assert wrong.status_code == 401 and "/srv" not in wrong.text
    tenant = one(api, "GET", "/v1/workspaces/notes/snapshots", headers=TENANT_HEADERS)
    assert tenant.status_code == 503 and "/srv" not in tenant.text


@pytest.mark.parametrize(
    "error",
    [
        E.SnapshotError("cannot copy workspace notes at /data/workspaces/notes/workspace.db"),
        E.SnapshotStoreUnavailable("cannot reach s3://bucket/prefix/ at http://10.0.0.7:9000"),
        E.SnapshotNotFound("no snapshot object notes/v.json in local directory /data/snapshots"),
        E.ConfigError("MINISPHERE_S3_BUCKET is unset for s3://"),
        E.EvidenceUnreachable("cannot reach the S3 endpoint http://10.0.0.7:9000"),
    ],
)
def test_infrastructure_errors_hide_their_details_from_tenants_by_default(error):
    for audience in (TENANT, "anything else", None):
        _, body = error_response(error, audience) if audience else error_response(error)
        message = body["error"]["message"]
        assert message == error.public_message and "/data" not in message
        assert "10.0.0.7" not in message and "s3://" not in message
    _, body = error_response(error, ADMIN)
    assert body["error"] == {"code": error.code, "message": error.message}


def test_storage_errors_hide_the_sqlite_text_from_tenants():
    from minisphere.engine import db

    status, body = error_response(db.OperationalError("unable to open /data/x/workspace.db"))
    assert status == 503 and body["error"]["code"] == "unavailable"
    assert "/data" not in body["error"]["message"]
    status, body = error_response(db.OperationalError("unable to open /data/x/workspace.db"), ADMIN)
    assert "/data/x" in body["error"]["message"]


def test_a_wake_with_no_workspace_slots_is_a_503_that_says_when_to_retry_and_what_is_missing():
    api = make_api(
        StandInGateway(
            failure=E.NoWorkspaceSlots(
                "no node advertises the minisphere_workspace_slots resource", retry_after_s=20
            )
        )
    )
    tenant = one(api, "POST", "/v1/w/notes/getCount", json={}, headers=TENANT_HEADERS)
    admin = one(api, "POST", "/v1/w/notes/getCount", json={}, headers=ADMIN_HEADERS)
    assert tenant.status_code == admin.status_code == 503
    assert tenant.headers["retry-after"] == admin.headers["retry-after"] == "20"
    assert tenant.json()["error"]["code"] == "no_workspace_slots"
    assert "minisphere_workspace_slots" not in tenant.text  # deployment detail: admin's
    assert "minisphere_workspace_slots" in admin.json()["error"]["message"]
