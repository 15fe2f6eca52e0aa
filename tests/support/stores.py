"""Snapshot-store fixtures (a local directory, and S3 on the moto server), for every layer."""

import pytest

from minisphere.durability.stores import LocalDirSnapshotStore, S3SnapshotStore


@pytest.fixture
def local_store(tmp_path):
    return LocalDirSnapshotStore(tmp_path / "snapshots")


@pytest.fixture
def s3_store(s3_endpoint, fresh_bucket):
    return S3SnapshotStore(fresh_bucket, "snaps/", endpoint_url=s3_endpoint, region="us-east-1")


@pytest.fixture(params=["local", "s3"])
def store(request):
    return request.getfixturevalue(f"{request.param}_store")
