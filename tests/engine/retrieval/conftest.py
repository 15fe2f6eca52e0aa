"""Fixtures of the retrieval tests (plain helpers live in helpers.py)."""

import pytest

from tests.engine.retrieval.helpers import FILLER, NOW


@pytest.fixture
def now_clock(clock):
    """The workspace clock, set to NOW (Monday 2026-11-30 15:00 UTC)."""
    clock.set(NOW)
    return clock


@pytest.fixture
def add(ws):
    """Capture an entry at the clock's current time, assert it was stored, return its id."""

    def capture(content: str, **options) -> str:
        result = ws.capture(content, **options)
        assert result["outcome"] == "stored", result
        return result["id"]

    return capture


@pytest.fixture
def filler(add):
    """Capture the FILLER entries; returns their ids."""

    def make() -> list[str]:
        return [add(text) for text in FILLER]

    return make


@pytest.fixture
def no_brevity(monkeypatch):
    """The brevity factor off: for tests of the other rerank factors on short entries, whose
    figures would otherwise carry each entry's length too (brevity has its own tests)."""
    from minisphere.engine.retrieval import tuning

    monkeypatch.setattr(tuning, "BREVITY_FULL_CHARS", 0)
