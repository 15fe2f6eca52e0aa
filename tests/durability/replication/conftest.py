"""The Litestream daemon each replication test drives (its own, in the test's folder)."""

from __future__ import annotations

import pytest

from minisphere.durability.replication.daemon import LitestreamDaemon


@pytest.fixture
def daemon(tmp_path):
    running = LitestreamDaemon(tmp_path / "litestream")
    yield running
    running.stop()
