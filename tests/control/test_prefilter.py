"""The ingress's token pre-filter, in front of a real control plane: bad tokens never evict
good cached grants, a refused token is refused again without asking, and failed
authentications are budgeted per client address (429 with the seconds to wait)."""
import asyncio

import pytest

from minisphere import errors as E
from minisphere.control.auth import token_hash
from minisphere.control.blueprints import Blueprint
from minisphere.control.plane import ControlPlane
from minisphere.control.prefilter import FAILED_AUTH_BURST, FailedAuthBudget, TokenPrefilter


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def plane(tmp_path):
    cp = ControlPlane(tmp_path / "control.db", synchronous="NORMAL")
    yield cp
    cp.close()


def directory_of(plane):
    """The directory's `authenticate`, answered by the real control plane; counts asks."""
    asked = []

    async def ask(method, *args):
        asked.append(method)
        return getattr(plane, method)(*args)
    return ask, asked


def run(coro):
    return asyncio.run(coro)


def test_bad_token_does_not_evict_the_good_cached_entry(plane):
    _, good = plane.create(Blueprint(), [], "ws-a")
    ask, asked = directory_of(plane)
    prefilter = TokenPrefilter(ask, ttl_s=30)
    run(prefilter.grant_of("ws-a", token_hash(good), "10.0.0.1"))
    with pytest.raises(E.Unauthenticated):
        run(prefilter.grant_of("ws-a", token_hash("wrong"), "10.0.0.2"))
    asked.clear()
    assert run(prefilter.grant_of("ws-a", token_hash(good), "10.0.0.1")).scope == "write"
    assert asked == []                        # still cached: no round trip


def test_refused_token_is_refused_again_without_asking(plane):
    plane.create(Blueprint(), [], "ws-a")
    _, other = plane.create(Blueprint(), [], "ws-b")
    ask, asked = directory_of(plane)
    prefilter = TokenPrefilter(ask, ttl_s=30)
    for _ in range(5):
        with pytest.raises(E.Forbidden):
            run(prefilter.grant_of("ws-a", token_hash(other), "10.0.0.3"))
    assert asked == ["authenticate"]


def test_failed_authentications_are_budgeted_per_client_address(plane):
    _, good = plane.create(Blueprint(), [], "ws-a")
    ask, asked = directory_of(plane)
    clock = Clock()
    prefilter = TokenPrefilter(ask, ttl_s=30, budget=FailedAuthBudget(clock=clock), clock=clock)
    run(prefilter.grant_of("ws-a", token_hash(good), "10.0.0.9"))     # cached before the flood
    for i in range(FAILED_AUTH_BURST):
        with pytest.raises(E.Unauthenticated):
            run(prefilter.grant_of("ws-a", token_hash(f"bad-{i}"), "10.0.0.9"))
    with pytest.raises(E.RateLimited) as limited:
        run(prefilter.grant_of("ws-a", token_hash("bad-more"), "10.0.0.9"))
    assert 0 < limited.value.retry_after_s <= 1.0
    assert asked.count("authenticate") == FAILED_AUTH_BURST + 1      # the last one never asked
    assert run(prefilter.grant_of("ws-a", token_hash(good), "10.0.0.9")).scope == "write"
    with pytest.raises(E.Unauthenticated):                            # another address is fine
        run(prefilter.grant_of("ws-a", token_hash("bad-x"), "10.0.0.10"))
    clock.now += 1.0                                                  # refilled: may try again
    with pytest.raises(E.Unauthenticated):
        run(prefilter.grant_of("ws-a", token_hash("bad-later"), "10.0.0.9"))


def test_cached_grant_that_expires_is_refused_from_the_cache(plane):
    plane.create(Blueprint(), [], "ws-a")
    issued = plane.issue_token("ws-a", "read", expires_at=1)          # expired long ago
    ask, _ = directory_of(plane)
    prefilter = TokenPrefilter(ask, ttl_s=30)
    with pytest.raises(E.Unauthenticated, match="expired"):
        run(prefilter.grant_of("ws-a", token_hash(issued["token"]), "10.0.0.4"))
