"""Fixtures of the engine tests (helpers live in helpers.py)."""

import pytest

from tests.engine.helpers import Api


@pytest.fixture(params=["call", "wrapper"])
def api(request, ws):
    return Api(ws, request.param)


@pytest.fixture
def make_entry(api):
    """Capture a fresh entry and return its id (kwargs go to capture)."""
    counter = iter(range(10**9))

    def make(content: str | None = None, **opts) -> str:
        text = content if content is not None else f"entry number {next(counter)} of the fixture"
        result = api.capture(text, **opts)
        assert result["outcome"] == "stored", result
        return result["id"]

    return make
