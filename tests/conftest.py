"""Shared fixtures. Engine fixtures open real SQLite files under pytest's tmp_path.

The tests are a package (`tests.engine.helpers`, ...): pytest puts the project folder on
sys.path, so `minisphere`, `actors` and `serve_app` import from the checkout.

Two tiers: a test that starts a local Ray cluster (and Serve) or runs a service in a process of
its own is marked `e2e` here; the rest, the unit tier, runs alone with
`python -m pytest -m "not e2e"`, without Ray.
"""

from pathlib import Path

import pytest

from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace

# `s3_endpoint` / `fresh_bucket`: one moto S3 server on loopback per session; snapshot stores;
# `contracts_copy`: a private copy of contracts/
pytest_plugins = ["tests.support.s3", "tests.support.stores", "tests.support.contracts"]

TESTS = Path(__file__).resolve().parent
# the service over Ray Serve, the launcher, several nodes, the console in a browser
E2E_FOLDERS = ("e2e",)
# modules (or folders of them) elsewhere whose tests start Ray or a service process, and which one
E2E_MODULES = {
    "actors/test_embedder_actor.py": "a local Ray cluster for the embedder actors",
    "durability/replication": "the Litestream binary as a daemon",
    "durability/test_daemon_lifetime.py": "the Litestream binary as a daemon",
    "cli/test_mcp_stdio.py": "`minisphere mcp` as a stdio server process",
    "docs/test_site_in_browser.py": "chromium through chromedriver",
}


def pytest_collection_modifyitems(items):
    for item in items:
        if not item.path.is_relative_to(TESTS):
            continue
        where = item.path.relative_to(TESTS)
        if where.parts[0] in E2E_FOLDERS or any(map(where.is_relative_to, E2E_MODULES)):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def ws(tmp_path, clock):
    # NORMAL keeps the suite fast; durability under FULL is exercised by its own tests.
    workspace = Workspace(tmp_path / "ws.db", clock=clock, synchronous="NORMAL")
    yield workspace
    workspace.close()
