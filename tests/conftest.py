"""Shared fixtures. Engine fixtures open real SQLite files under pytest's tmp_path."""
import pytest

pytest_plugins = ["s3_fixtures"]  # `s3_endpoint`: one moto S3 server on loopback per session

from minisphere import ManualClock, Workspace


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def ws(tmp_path, clock):
    # NORMAL keeps the suite fast; durability under FULL is exercised by its own tests.
    workspace = Workspace(tmp_path / "ws.db", clock=clock, synchronous="NORMAL")
    yield workspace
    workspace.close()
