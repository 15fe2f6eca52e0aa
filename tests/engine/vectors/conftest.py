"""Fixtures of the vector-binding tests (helpers live in helpers.py)."""

import pytest

from minisphere.engine.embedding import make_provider
from minisphere.engine.workspace import Workspace


@pytest.fixture
def hash_provider():
    return make_provider({"provider": "hash"})


@pytest.fixture
def vws(tmp_path, clock, hash_provider):
    """A workspace bound to the deterministic hash provider."""
    workspace = Workspace(
        tmp_path / "vws.db", clock=clock, synchronous="NORMAL", embedder=hash_provider
    )
    yield workspace
    workspace.close()
