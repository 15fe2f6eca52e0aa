"""Derandomized Hypothesis runs that draw the same values wherever they run.

Hypothesis now and then draws from the constants of every project module imported so far (this
checkout's code and its tests), so a derandomized run still changes with whatever the suite had
imported before it: a lifecycle walk that revoked tokens alone revoked none after other HTTP test
modules had run. Runs whose verdict counts what the draws reached wrap themselves in
`without_local_constants()`.
"""

from __future__ import annotations

import contextlib

from hypothesis.internal.conjecture import providers as hypothesis_providers


@contextlib.contextmanager
def without_local_constants():
    """Inside, the project's constants pool is empty (and the cache built from it cleared, on
    the way in and out). Hypothesis is pinned (constraints.txt): these are its internals as of
    that pin, and a change to them fails here, loudly."""
    saved = hypothesis_providers._get_local_constants
    hypothesis_providers.CONSTANTS_CACHE.cache.clear()
    hypothesis_providers._get_local_constants = hypothesis_providers.Constants
    try:
        yield
    finally:
        hypothesis_providers._get_local_constants = saved
        hypothesis_providers.CONSTANTS_CACHE.cache.clear()
