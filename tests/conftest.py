"""Shared fixtures. Engine fixtures open real SQLite files under pytest's tmp_path.

The tests are a package (`tests.engine.helpers`, ...): pytest puts the project folder on
sys.path, so `minisphere`, `actors` and `serve_app` import from the checkout.

Two tiers: a test that starts a local Ray cluster (and Serve) or runs a service in a process of
its own is marked `e2e` here; the rest, the unit tier, runs alone with
`python -m pytest -m "not e2e"`, without Ray.

The suite runs in two worker processes (pytest-xdist, `-n 2 --dist loadgroup` in
pyproject.toml): every test that needs the session's local Ray is in one group, so one worker
starts that one cluster and runs them in order, while the other runs the operator's clusters in
network namespaces (a group of their own), then the tests that need no Ray. Ray tests spend much
of their time waiting on processes; the rest fills that time.
"""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace

# Hypothesis's per-example deadline (200 ms) and its too-slow health check are timings: on a
# busy shared machine they fail properties that hold. Each property's max_examples bounds it.
settings.register_profile(
    "shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("shared-machine")

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


# ... and of those, the ones that start Ray: one worker runs them all (one cluster at a time)
RAY_MODULES = {"actors/test_embedder_actor.py"}
RAY_GROUP = "ray"
# ... except those that run clusters of their own, in network namespaces (no use of the
# session's cluster): a group beside the Ray one, so they run while it does
NAMESPACE_MODULES = {"e2e/test_operator_deploy.py", "e2e/test_fault_soak.py"}
NAMESPACE_GROUP = "namespaces"


# first: xdist reads the group marks in a hook of its own, which would otherwise run before this
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        if not item.path.is_relative_to(TESTS):
            continue
        where = item.path.relative_to(TESTS)
        in_e2e_folder = where.parts[0] in E2E_FOLDERS
        if in_e2e_folder or any(map(where.is_relative_to, E2E_MODULES)):
            item.add_marker(pytest.mark.e2e)
        if where.as_posix() in NAMESPACE_MODULES:
            item.add_marker(pytest.mark.xdist_group(NAMESPACE_GROUP))
        elif in_e2e_folder or where.as_posix() in RAY_MODULES:
            item.add_marker(pytest.mark.xdist_group(RAY_GROUP))


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def ws(tmp_path, clock):
    # NORMAL keeps the suite fast; durability under FULL is exercised by its own tests.
    workspace = Workspace(tmp_path / "ws.db", clock=clock, synchronous="NORMAL")
    yield workspace
    workspace.close()
