"""Shared fixtures. Engine fixtures open real SQLite files under pytest's tmp_path.

The tests are a package (`tests.engine.helpers`, ...): pytest puts the project folder on
sys.path, so `minisphere`, `actors` and `serve_app` import from the checkout.
"""
import pytest

from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace

# `s3_endpoint` / `fresh_bucket`: one moto S3 server on loopback per session; snapshot stores;
# `contracts_copy`: a private copy of contracts/
pytest_plugins = ["tests.support.s3", "tests.support.stores", "tests.support.contracts"]


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def ws(tmp_path, clock):
    # NORMAL keeps the suite fast; durability under FULL is exercised by its own tests.
    workspace = Workspace(tmp_path / "ws.db", clock=clock, synchronous="NORMAL")
    yield workspace
    workspace.close()
