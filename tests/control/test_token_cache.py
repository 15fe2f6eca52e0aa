"""The ingress's token cache, in front of a real control plane: bad tokens never evict
good cached grants, a refused token is refused again without asking, and failed
authentications are budgeted per client address (429 with the seconds to wait). The admin
routes' check budgets wrong admin tokens per address in a bucket of their own."""

import asyncio
import time

import pytest

from minisphere import errors as E
from minisphere.control import token_cache
from minisphere.control.auth import token_hash
from minisphere.control.blueprints import Blueprint
from minisphere.control.plane import ControlPlane
from minisphere.control.token_cache import (
    ADMIN_GUESS_BURST,
    FAILED_AUTH_BURST,
    FAILED_AUTH_PER_S,
    AdminCheck,
    FailedAuthBudget,
    TokenCache,
)

ADMIN = "msa_the-admin-token-of-these-tests-0123456789"


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


def directory_of(plane, answer_s: float = 0.0):
    """The directory's `authenticate`, answered by the real control plane; counts asks.
    `answer_s`: each answer waits this long, so requests sent at once are all in flight before
    any is answered."""
    asked = []

    async def ask(method, *args):
        asked.append(method)
        if answer_s:
            await asyncio.sleep(answer_s)
        return getattr(plane.tokens, method)(*args)  # authenticate, whoami

    return ask, asked


def run(coro):
    return asyncio.run(coro)


def test_bad_token_does_not_evict_the_good_cached_entry(plane):
    _, good = plane.create(Blueprint(), [], "ws-a")
    ask, asked = directory_of(plane)
    cache = TokenCache(ask, ttl_s=30)
    run(cache.grant_of("ws-a", token_hash(good), "10.0.0.1"))
    with pytest.raises(E.Unauthenticated):
        run(cache.grant_of("ws-a", token_hash("wrong"), "10.0.0.2"))
    asked.clear()
    assert run(cache.grant_of("ws-a", token_hash(good), "10.0.0.1")).scope == "write"
    assert asked == []  # still cached: no round trip


def test_refused_token_is_refused_again_without_asking(plane):
    plane.create(Blueprint(), [], "ws-a")
    _, other = plane.create(Blueprint(), [], "ws-b")
    ask, asked = directory_of(plane)
    cache = TokenCache(ask, ttl_s=30)
    for _ in range(5):
        with pytest.raises(E.Forbidden):
            run(cache.grant_of("ws-a", token_hash(other), "10.0.0.3"))
    assert asked == ["authenticate"]


def test_failed_authentications_are_budgeted_per_client_address(plane):
    _, good = plane.create(Blueprint(), [], "ws-a")
    ask, asked = directory_of(plane)
    clock = Clock()
    cache = TokenCache(ask, ttl_s=30, budget=FailedAuthBudget(clock=clock), clock=clock)
    run(cache.grant_of("ws-a", token_hash(good), "10.0.0.9"))  # cached before the flood
    for i in range(FAILED_AUTH_BURST):
        with pytest.raises(E.Unauthenticated):
            run(cache.grant_of("ws-a", token_hash(f"bad-{i}"), "10.0.0.9"))
    with pytest.raises(E.RateLimited) as limited:
        run(cache.grant_of("ws-a", token_hash("bad-more"), "10.0.0.9"))
    assert 0 < limited.value.retry_after_s <= 1.0
    assert asked.count("authenticate") == FAILED_AUTH_BURST + 1  # the last one never asked
    assert run(cache.grant_of("ws-a", token_hash(good), "10.0.0.9")).scope == "write"
    with pytest.raises(E.Unauthenticated):  # another address is fine
        run(cache.grant_of("ws-a", token_hash("bad-x"), "10.0.0.10"))
    clock.now += 1.0  # refilled: may try again
    with pytest.raises(E.Unauthenticated):
        run(cache.grant_of("ws-a", token_hash("bad-later"), "10.0.0.9"))


def test_cached_grant_that_expires_is_refused_from_the_cache(plane):
    plane.create(Blueprint(), [], "ws-a")
    issued = plane.tokens.issue("ws-a", "read", expires_at=1)  # expired long ago
    ask, _ = directory_of(plane)
    cache = TokenCache(ask, ttl_s=30)
    with pytest.raises(E.Unauthenticated, match="expired"):
        run(cache.grant_of("ws-a", token_hash(issued["token"]), "10.0.0.4"))


def test_concurrent_bad_tokens_cannot_multiply_the_failed_auth_budget(plane):
    """A thousand bad tokens sent at once from one address get no more directory round trips
    than the budget allows one at a time: each reserves its attempt before awaiting the
    directory, so the others find it spent."""
    plane.create(Blueprint(), [], "ws-a")
    slow_directory, asked = directory_of(plane, answer_s=0.01)
    cache = TokenCache(slow_directory, ttl_s=30)

    async def flood():
        return await asyncio.gather(
            *(cache.grant_of("ws-a", token_hash(f"bad-{i}"), "10.0.0.66") for i in range(1000)),
            return_exceptions=True,
        )

    started = time.monotonic()
    outcomes = run(flood())
    # the burst, plus what the budget refills while the flood itself lasts (on a busy machine
    # a thousand coroutines take long enough for one more attempt): sent one at a time over
    # the same span, the requests would have had no more
    allowed = FAILED_AUTH_BURST + int(FAILED_AUTH_PER_S * (time.monotonic() - started))
    assert len(asked) <= allowed
    assert len(asked) < 1000 // 10  # nowhere near one round trip per request
    assert sum(isinstance(o, E.RateLimited) for o in outcomes) >= 1000 - allowed
    assert all(isinstance(o, (E.RateLimited, E.Unauthenticated)) for o in outcomes)


def test_a_good_token_asked_about_gives_its_reserved_attempt_back(plane):
    _, good = plane.create(Blueprint(), [], "ws-a")
    ask, asked = directory_of(plane)
    cache = TokenCache(ask, ttl_s=0)  # never cached: every call asks the directory
    for _ in range(FAILED_AUTH_BURST * 3):
        assert run(cache.grant_of("ws-a", token_hash(good), "10.0.0.7")).scope == "write"
    assert len(asked) == FAILED_AUTH_BURST * 3


def test_an_authoritative_lookup_refuses_a_token_revoked_since_it_was_cached(plane):
    """Another replica revoked the token: this replica's cache still holds the grant, so a
    route no workspace actor checks again (the snapshot listing) must ask the directory."""
    plane.create(Blueprint(), [], "ws-a")
    issued = plane.tokens.issue("ws-a", "read")
    ask, _asked = directory_of(plane)
    cache = TokenCache(ask, ttl_s=300)
    candidate = token_hash(issued["token"])
    assert run(cache.grant_of("ws-a", candidate, "10.0.0.5")).scope == "read"
    plane.tokens.revoke("ws-a", issued["tokenId"])  # elsewhere: this cache never hears
    assert run(cache.grant_of("ws-a", candidate, "10.0.0.5")).scope == "read"  # cached
    with pytest.raises(E.Unauthenticated):
        run(cache.grant_of("ws-a", candidate, "10.0.0.5", authoritative=True))


def admin_check_of(plane, clock=None):
    """The admin routes' check over the real control plane's `whoami`; counts the asks."""
    asked = []

    async def whoami(candidate):
        asked.append(candidate)
        await asyncio.sleep(0.001)
        return plane.tokens.whoami(candidate)

    clock = clock or Clock()
    check = AdminCheck(
        token_hash(ADMIN),
        whoami,
        budget=FailedAuthBudget(ADMIN_GUESS_BURST, 1.0, clock=clock),
        clock=clock,
    )
    return check, asked


def test_wrong_admin_tokens_are_budgeted_per_address_and_never_lock_out_the_admin(plane):
    clock = Clock()
    check, asked = admin_check_of(plane, clock)
    for i in range(ADMIN_GUESS_BURST):
        with pytest.raises(E.Unauthenticated, match="admin token"):
            run(check.require(f"msa_guess-{i}", "10.0.0.20"))
    with pytest.raises(E.RateLimited) as limited:
        run(check.require("msa_guess-more", "10.0.0.20"))
    assert 0 < limited.value.retry_after_s <= 1.0
    assert len(asked) == ADMIN_GUESS_BURST  # the refused guess asked nobody
    run(check.require(ADMIN, "10.0.0.20"))  # the admin, same address: let in
    with pytest.raises(E.Unauthenticated):  # another address still may guess
        run(check.require("msa_guess-elsewhere", "10.0.0.21"))
    clock.now += 1.0
    with pytest.raises(E.Unauthenticated):  # refilled
        run(check.require("msa_guess-later", "10.0.0.20"))


def test_admin_guesses_and_failed_workspace_authentications_do_not_drain_each_other(plane):
    plane.create(Blueprint(), [], "ws-a")
    check, _ = admin_check_of(plane)
    ask, _ = directory_of(plane)
    cache = TokenCache(ask, ttl_s=30)
    for i in range(FAILED_AUTH_BURST):
        with pytest.raises(E.Unauthenticated):
            run(cache.grant_of("ws-a", token_hash(f"bad-{i}"), "10.0.0.22"))
    with pytest.raises(E.Unauthenticated):  # not a 429: its own bucket
        run(check.require("msa_guess", "10.0.0.22"))


def test_a_workspace_token_at_an_admin_route_is_refused_without_spending_the_guess_budget(plane):
    """A valid workspace token at an admin route lacks the rights; it is no guess at the admin
    token, so however often it is sent the guesses of the same address stay untouched (and
    the directory is asked about it once)."""
    _, tenant = plane.create(Blueprint(), [], "ws-a")
    check, asked = admin_check_of(plane)
    for _ in range(ADMIN_GUESS_BURST * 5):
        with pytest.raises(E.Unauthenticated, match="admin token"):
            run(check.require(tenant, "10.0.0.23"))
    assert len(asked) == 1
    for i in range(ADMIN_GUESS_BURST):
        with pytest.raises(E.Unauthenticated):
            run(check.require(f"msa_guess-{i}", "10.0.0.23"))
    with pytest.raises(E.RateLimited):
        run(check.require("msa_guess-more", "10.0.0.23"))


def test_concurrent_admin_guesses_cannot_multiply_the_guess_budget(plane):
    check, asked = admin_check_of(plane)

    async def flood():
        return await asyncio.gather(
            *(check.require(f"msa_guess-{i}", "10.0.0.24") for i in range(500)),
            return_exceptions=True,
        )

    outcomes = run(flood())
    assert len(asked) <= ADMIN_GUESS_BURST
    assert sum(isinstance(o, E.RateLimited) for o in outcomes) >= 500 - ADMIN_GUESS_BURST
    assert all(isinstance(o, E.RateLimited | E.Unauthenticated) for o in outcomes)


def test_admin_guesses_stay_budgeted_while_the_directory_cannot_answer():
    """The admin token is compared here, not by the directory: an outage of the directory
    must not make guessing it free."""

    async def gone(_candidate):
        raise ConnectionError("directory unreachable")

    clock = Clock()  # no refill between guesses however slow the machine
    check = AdminCheck(token_hash(ADMIN), gone, clock=clock)
    for i in range(ADMIN_GUESS_BURST):
        with pytest.raises(E.Unauthenticated):
            run(check.require(f"msa_guess-{i}", "10.0.0.25"))
    with pytest.raises(E.RateLimited):
        run(check.require("msa_guess-more", "10.0.0.25"))


def test_copies_of_one_good_token_sent_at_once_are_one_ask_and_never_rate_limited(plane):
    """A client's first burst with a token not yet cached: each copy used to reserve its own
    attempt, so past the budget a valid token was answered 429. The copies now share one
    question to the directory."""
    _, good = plane.create(Blueprint(), [], "ws-a")
    slow_directory, asked = directory_of(plane, answer_s=0.01)
    cache = TokenCache(slow_directory, ttl_s=30)

    async def burst():
        return await asyncio.gather(
            *(
                cache.grant_of("ws-a", token_hash(good), "10.0.0.26")
                for _ in range(FAILED_AUTH_BURST * 10)
            ),
            return_exceptions=True,
        )

    assert {grant.scope for grant in run(burst())} == {"write"}
    assert asked == ["authenticate"]


def test_a_burst_of_new_valid_tokens_from_one_address_is_served_not_rate_limited(plane):
    """A hundred agents behind one address (a NAT, or the benchmark's burst of wakes) each
    presenting its own valid token for the first time: each ask reserves an attempt, so the
    burst would find the budget spent by asks still unanswered; they wait for them instead,
    and every good answer gives its attempt back."""
    tokens = {}
    for i in range(100):
        _, tokens[f"ws-{i}"] = plane.create(Blueprint(), [], f"ws-{i}")
    slow_directory, asked = directory_of(plane, answer_s=0.01)
    cache = TokenCache(slow_directory, ttl_s=30)

    async def burst():
        return await asyncio.gather(
            *(cache.grant_of(ws, token_hash(token), "10.0.0.8") for ws, token in tokens.items()),
            return_exceptions=True,
        )

    outcomes = run(burst())
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    assert len(asked) == 100
    assert cache.budget._level("10.0.0.8") == FAILED_AUTH_BURST  # nothing spent


def test_no_waiter_misses_the_answer_it_waits_for_in_repeated_bursts(monkeypatch):
    """Waiters for a client's unanswered asks used to wait on a condition that the last answer
    could drop between a waiter taking it and waiting on it: about one burst in twenty left a
    few waiters to their deadline, then answered them 429 while the next asks were in flight.
    The deadline is shortened so that a missed wake-up shows as a refusal within seconds."""
    monkeypatch.setattr(token_cache, "RESERVE_WAIT_S", 5.0)

    async def good_after_a_moment():
        await asyncio.sleep(0.01)
        return "ok"

    async def burst(budget):
        return await asyncio.gather(
            *(
                budget.attempt("10.0.0.30", good_after_a_moment, lambda answer: True)
                for _ in range(FAILED_AUTH_BURST * 5)
            ),
            return_exceptions=True,
        )

    for _ in range(60):
        budget = FailedAuthBudget()
        outcomes = run(burst(budget))
        assert [o for o in outcomes if isinstance(o, Exception)] == []
        assert budget._waiting == {} and budget._pending == {}


def test_a_call_after_a_pause_is_let_through_on_its_cached_grant_and_the_grant_refreshed_behind_it(
    plane,
):
    # every wake comes after a pause longer than the TTL: asking the directory first put a
    # round trip in front of each of them
    _, good = plane.create(Blueprint(), [], "ws-a")
    ask, asked = directory_of(plane, answer_s=0.2)
    clock = Clock()
    cache = TokenCache(ask, ttl_s=30, clock=clock)
    candidate = token_hash(good)

    async def scenario():
        await cache.grant_of("ws-a", candidate, "10.0.0.9")  # asks: nothing cached
        clock.now += 31  # past the TTL
        grant = await cache.grant_of("ws-a", candidate, "10.0.0.9")
        refresh = cache._refreshing["ws-a"]
        answered_before_the_directory = not refresh.done()
        await refresh  # the refresh behind it
        await cache.grant_of("ws-a", candidate, "10.0.0.9")  # fresh again
        return grant, answered_before_the_directory

    grant, answered_before_the_directory = run(scenario())
    assert grant.scope == "write" and answered_before_the_directory
    assert len(asked) == 2  # the first call and one refresh


def test_a_token_revoked_elsewhere_passes_its_stale_grant_once_then_is_refused(plane):
    plane.create(Blueprint(), [], "ws-a")
    issued = plane.tokens.issue("ws-a", "read")
    ask, _ = directory_of(plane)
    clock = Clock()
    cache = TokenCache(ask, ttl_s=30, clock=clock)
    candidate = token_hash(issued["token"])

    async def scenario():
        await cache.grant_of("ws-a", candidate, "10.0.0.9")
        plane.tokens.revoke("ws-a", issued["tokenId"])  # on another replica
        clock.now += 31
        await cache.grant_of("ws-a", candidate, "10.0.0.9")  # the actor refuses this one
        await cache._refreshing["ws-a"]
        with pytest.raises(E.Unauthenticated):
            await cache.grant_of("ws-a", candidate, "10.0.0.9")

    run(scenario())


def test_grants_long_past_their_ttl_are_not_used_stale(plane):
    _, good = plane.create(Blueprint(), [], "ws-a")
    ask, asked = directory_of(plane)
    clock = Clock()
    cache = TokenCache(ask, ttl_s=30, clock=clock)
    from minisphere.control.token_cache import STALE_GRANTS_USABLE_S

    run(cache.grant_of("ws-a", token_hash(good), "10.0.0.9"))
    clock.now += 30 + STALE_GRANTS_USABLE_S
    run(cache.grant_of("ws-a", token_hash(good), "10.0.0.9"))
    assert len(asked) == 2 and not cache._refreshing  # asked first, nothing behind
