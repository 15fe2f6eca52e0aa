"""What one ingress replica keeps so that bad tokens are refused cheaply: `TokenCache`.

It only filters ahead of the actor. The workspace actor holds the authoritative grants of its
workspace and checks every call (so a revoked or expired token is refused by the next call
whichever replica sends it); this cache exists so that unauthenticated requests never wake an
actor and rarely reach the directory:

- the grants of each workspace are cached for `ttl_s` after the directory answered; a bad
  token never evicts them. Past `ttl_s` (and up to STALE_GRANTS_USABLE_S more) a cached grant
  still lets its token's call through while the directory's fresh answer is fetched behind
  it: most calls to a workspace come after a pause (every wake does: a workspace hibernates
  once idle), and asking first would add a directory round trip to each of them. The
  actor's own check refuses a token revoked meanwhile, so a stale grant can cost at most one
  call per token and replica that its actor refuses;
- a rejected (workspace, token hash) is remembered for REJECTED_TOKEN_TTL_S, so the same bad
  token sent again costs no directory round trip;
- copies of one token sent at once share one question to the directory (`SharedAsks`);
- failed authentications are budgeted per client address (a token bucket of
  FAILED_AUTH_BURST, refilled at FAILED_AUTH_PER_S): once a client has spent it, tokens the
  cache does not already know are answered `429 rate_limited` with the seconds to wait,
  without asking the directory. A client using a known good token is never slowed.

`AdminCheck` guards the admin routes the same way: a token there that is not the admin token
is a guess at it, paid for from a budget of its own per client address (ADMIN_GUESS_BURST,
refilled at ADMIN_GUESSES_PER_S). It is a separate bucket so that failed workspace
authentications and admin guesses never drain each other, and so that one kind of test or
tenant traffic cannot change the answers the other gets.

Plain Python; `ask(method, *args)` is how it reaches the directory (an async callable).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

from minisphere.control.auth import TokenGrant, same_hash, token_hash
from minisphere.engine.clock import epoch_ms
from minisphere.errors import Forbidden, RateLimited, Unauthenticated

REJECTED_TOKEN_TTL_S = 10.0  # a refused token hash is refused again without asking
REJECTED_TOKENS_MAX = 10_000  # remembered refusals, at most (oldest forgotten first)
FAILED_AUTH_BURST = 20  # failed authentications a client may make at once
FAILED_AUTH_PER_S = 2.0  # ...and then per second
CLIENTS_TRACKED_MAX = 10_000  # client addresses with a budget, at most
RESERVE_WAIT_S = 30.0  # longest wait for a client's unanswered asks to end
ADMIN_GUESS_BURST = 20  # wrong tokens at admin routes a client may send at once
ADMIN_GUESSES_PER_S = 1.0  # ...and then per second
STALE_GRANTS_USABLE_S = 600.0  # past its TTL a cached grant is used (and refreshed) this long
KNOWN_WORKSPACE_TOKENS_TTL_S = 30.0  # a token the directory called a workspace token, trusted so
KNOWN_WORKSPACE_TOKENS_MAX = 10_000  # ...for at most this many token hashes (oldest forgotten)
ADMIN_ONLY_MESSAGE = "this route needs the admin token"

log = logging.getLogger("minisphere.auth")
# `ask(method, *args)`: a call of the directory actor, whose answers are untyped
Ask = Callable[..., Awaitable[Any]]
# the directory's `authenticate` answer: (verdict, the workspace's grants when "ok")
Authentication = tuple[str, list[TokenGrant]]
T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class FailedAuthBudget:
    """A token bucket per client address, spent by failed authentications only."""

    def __init__(
        self,
        burst: float = FAILED_AUTH_BURST,
        per_s: float = FAILED_AUTH_PER_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.burst, self.per_s, self._clock = float(burst), float(per_s), clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        # per client: attempts reserved and not yet answered, and who waits for one to end
        self._pending: dict[str, int] = {}
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}

    def _level(self, client: str) -> float:
        level, at = self._buckets.get(client, (self.burst, self._clock()))
        return min(self.burst, level + (self._clock() - at) * self.per_s)

    def check(self, client: str) -> None:
        """RateLimited when the client has no failed attempt left right now."""
        level = self._level(client)
        if level < 1.0:
            raise RateLimited(
                "too many failed authentications from this address; slow down",
                retry_after_s=(1.0 - level) / self.per_s,
            )

    def charge(self, client: str) -> None:
        self._set(client, max(0.0, self._level(client) - 1.0))

    async def attempt(
        self, client: str, ask: Callable[[], Awaitable[T]], good: Callable[[T], bool]
    ) -> T:
        """`await ask()`, the question whether a token is good, paid for by one attempt of the
        client's budget. The attempt is reserved before the await, so concurrent requests each
        find the attempts the others took: sending many at once buys no more asks than sending
        them one by one. It is given back when `good(answer)`, or when no answer came (not the
        client's fault). A client whose attempts are all reserved by asks still unanswered
        waits for them (good tokens give theirs back: a burst of new, valid tokens from one
        address, an agent fleet behind one NAT, is served, at most `burst` asks at a time);
        RateLimited only when failures spent them."""
        await self._reserve(client)
        give_back = True
        try:
            answer = await ask()
            give_back = good(answer)
            return answer
        finally:
            if give_back:
                self.refund(client)
            self._release(client)

    async def _reserve(self, client: str) -> None:
        # a waiter enqueues its future with no await between the check and the append, so no
        # release can slip in between and leave it waiting for a wake-up that already passed
        deadline = self._clock() + RESERVE_WAIT_S
        while self._level(client) < 1.0 and self._pending.get(client):
            answered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(client, []).append(answered)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(answered, max(0.0, deadline - self._clock()))
            if self._clock() >= deadline:
                break
        self.check(client)
        self.charge(client)
        self._pending[client] = self._pending.get(client, 0) + 1

    def _release(self, client: str) -> None:
        left = self._pending.get(client, 1) - 1
        if left > 0:
            self._pending[client] = left
        else:
            self._pending.pop(client, None)
        for waiter in self._waiting.pop(client, ()):
            if not waiter.done():
                waiter.set_result(None)

    def refund(self, client: str) -> None:
        """Give back one attempt spent on what turned out not to be a failure."""
        self._set(client, min(self.burst, self._level(client) + 1.0))

    def _set(self, client: str, level: float) -> None:
        self._buckets[client] = (level, self._clock())
        self._buckets.move_to_end(client)
        while len(self._buckets) > CLIENTS_TRACKED_MAX:
            self._buckets.popitem(last=False)


class SharedAsks(Generic[K, T]):
    """Concurrent questions with the same key share one answer: the first asker's question runs
    once, in a task of its own (a caller that gives up does not cancel it for the others), and
    everyone asking meanwhile awaits the same result. So a token sent many times at once costs
    one directory round trip and one attempt of its sender's budget, not one per copy; distinct
    tokens share nothing and each spends its own attempt."""

    def __init__(self) -> None:
        self._running: dict[K, asyncio.Future[T]] = {}

    async def ask(self, key: K, question: Callable[[], Awaitable[T]]) -> T:
        task = self._running.get(key)
        if task is None:
            task = asyncio.ensure_future(question())
            self._running[key] = task
            task.add_done_callback(lambda done: self._finished(key, done))
        return await asyncio.shield(task)

    def _finished(self, key: K, task: asyncio.Future[T]) -> None:
        if self._running.get(key) is task:
            del self._running[key]
        if not task.cancelled():
            task.exception()  # retrieved, so a task whose askers all gave up logs nothing


def token_refusal(verdict: str) -> Exception:
    """The error for a token the directory's `authenticate` did not accept ("expired",
    "other": another workspace's token, anything else: invalid). The ingress and the
    in-cluster client both answer with it."""
    if verdict == "other":
        return Forbidden("this token belongs to another workspace")
    if verdict == "expired":
        return Unauthenticated("the token has expired")
    return Unauthenticated("invalid token")


class TokenCache:
    def __init__(
        self,
        ask: Ask,
        ttl_s: float,
        budget: FailedAuthBudget | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._ask, self.ttl_s, self._clock = ask, float(ttl_s), clock
        self.budget = budget or FailedAuthBudget(clock=clock)
        self._grants: dict[str, tuple[dict[str, TokenGrant], float]] = {}
        self._rejected: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()
        self._asks: SharedAsks[tuple[str, str], Authentication] = SharedAsks()
        self.directory_asks = 0
        self._refreshing: dict[str, asyncio.Task[None]] = {}  # workspace -> its grants' refresh

    async def grant_of(
        self, workspace_id: str, candidate_hash: str, client: str, authoritative: bool = False
    ) -> TokenGrant:
        """The grant of this token on this workspace, or the refusal (Unauthenticated,
        Forbidden for another workspace's token, RateLimited). `authoritative`: never from the
        cached grants, always the directory's current word — for a route whose answer no
        workspace actor checks again (a revocation clears the cache only on the replica that
        handled it, so another replica's cache may still hold the revoked grant)."""
        now = self._clock()
        cached = None if authoritative else self._grants.get(workspace_id)
        if (
            cached is not None
            and candidate_hash in cached[0]
            and (
                cached[1] > now or self._usable_stale(workspace_id, candidate_hash, cached[1], now)
            )
        ):
            grant = cached[0][candidate_hash]
            if grant.expired(epoch_ms()):
                raise token_refusal("expired")
            return grant
        rejected = self._rejected.get((workspace_id, candidate_hash))
        if rejected is not None and rejected[1] > now:
            self.budget.charge(client)
            raise token_refusal(rejected[0])
        verdict, grants = await self._asks.ask(
            (workspace_id, candidate_hash),
            lambda: self.budget.attempt(
                client,
                lambda: self._ask_directory(workspace_id, candidate_hash),
                lambda answer: answer[0] == "ok",
            ),
        )
        if verdict != "ok":
            self._remember_refusal(workspace_id, candidate_hash, verdict)
            raise token_refusal(verdict)
        return self._remember_grants(workspace_id, grants)[candidate_hash]

    def _remember_grants(
        self, workspace_id: str, grants: Iterable[TokenGrant]
    ) -> dict[str, TokenGrant]:
        """Cache the directory's grants of the workspace for ttl_s; returns them by hash."""
        by_hash = {grant.token_hash: grant for grant in grants}
        self._grants[workspace_id] = (by_hash, self._clock() + self.ttl_s)
        return by_hash

    async def _ask_directory(self, workspace_id: str, candidate_hash: str) -> Authentication:
        self.directory_asks += 1
        answer: Authentication = await self._ask("authenticate", workspace_id, candidate_hash)
        return answer

    def _usable_stale(
        self, workspace_id: str, candidate_hash: str, fresh_until: float, now: float
    ) -> bool:
        """Whether grants past their TTL may still pass this token's call (see the module
        docstring); if so, their refresh is started (once per workspace at a time)."""
        if self.ttl_s <= 0 or now >= fresh_until + STALE_GRANTS_USABLE_S:
            return False
        if workspace_id not in self._refreshing:
            task = asyncio.get_running_loop().create_task(
                self._refresh(workspace_id, candidate_hash)
            )
            self._refreshing[workspace_id] = task
            task.add_done_callback(lambda _: self._refreshing.pop(workspace_id, None))
        return True

    async def _refresh(self, workspace_id: str, candidate_hash: str) -> None:
        try:
            verdict, grants = await self._ask_directory(workspace_id, candidate_hash)
        except Exception as exc:  # noqa: BLE001 - the next call past the TTL tries again
            log.info("refreshing the grants of %s failed: %r", workspace_id, exc)
            return
        if verdict == "ok":
            self._remember_grants(workspace_id, grants)
        else:  # revoked or expired meanwhile: the next call asks, and is refused
            self._grants.pop(workspace_id, None)

    def _remember_refusal(self, workspace_id: str, candidate_hash: str, verdict: str) -> None:
        self._rejected[(workspace_id, candidate_hash)] = (
            verdict,
            self._clock() + REJECTED_TOKEN_TTL_S,
        )
        self._rejected.move_to_end((workspace_id, candidate_hash))
        while len(self._rejected) > REJECTED_TOKENS_MAX:
            self._rejected.popitem(last=False)

    def forget(self, workspace_id: str) -> None:
        """Drop the workspace's cached grants (deleted, or its actor refused a cached token)."""
        self._grants.pop(workspace_id, None)


class AdminCheck:
    """The check of the admin routes: the admin token passes, anything else is refused
    (`Unauthenticated`), and a refused token that is a guess spends one attempt of the client
    address's budget of admin guesses (`RateLimited`, without asking anyone, once it is spent).

    The admin token is compared before any budget is looked at, so its holder is never slowed
    by someone else's guesses from the same address: the lock-out is of the address, not of
    the admin. A workspace token the directory knows is not a guess -- a caller holding a valid
    token without the rights for the route -- so it spends nothing; the directory is asked
    once per such token per KNOWN_WORKSPACE_TOKENS_TTL_S (copies of one token sent at once
    share that question). The attempt is spent before the directory is awaited (concurrent
    guesses cannot multiply the budget) and stays spent when the directory gives no answer:
    the admin token is checked here, not there, so a directory outage must not make guessing
    it free.

    `whoami(token_hash)` is the directory's answer (an async callable): the token's workspace
    grant, or None."""

    def __init__(
        self,
        admin_hash: str,
        whoami: Callable[[str], Awaitable[Any]],
        budget: FailedAuthBudget | None = None,
        known_ttl_s: float = KNOWN_WORKSPACE_TOKENS_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._admin_hash, self._whoami, self._clock = admin_hash, whoami, clock
        self.budget = budget or FailedAuthBudget(
            ADMIN_GUESS_BURST, ADMIN_GUESSES_PER_S, clock=clock
        )
        self.known_ttl_s = float(known_ttl_s)
        self._known: OrderedDict[str, float] = OrderedDict()  # workspace token hash -> until
        self._asks: SharedAsks[str, None] = SharedAsks()
        self.directory_asks = 0

    def is_admin(self, token: str) -> bool:
        return bool(self._admin_hash) and same_hash(token_hash(token), self._admin_hash)

    async def require(self, token: str, client: str) -> None:
        """Return when `token` is the admin token; else raise (see the class)."""
        if self.is_admin(token):
            return
        candidate = token_hash(token)
        if not self._known_workspace_token(candidate):
            await self._asks.ask(
                candidate, lambda: self._spend_unless_workspace_token(candidate, client)
            )
        raise Unauthenticated(ADMIN_ONLY_MESSAGE)

    async def _spend_unless_workspace_token(self, candidate: str, client: str) -> None:
        self.budget.check(client)
        self.budget.charge(client)
        if await self._is_workspace_token(candidate):
            self.budget.refund(client)

    def _known_workspace_token(self, candidate: str) -> bool:
        until = self._known.get(candidate)
        return until is not None and until > self._clock()

    async def _is_workspace_token(self, candidate: str) -> bool:
        self.directory_asks += 1
        try:
            found = await self._whoami(candidate)
        except Exception:  # no answer: the attempt stays a guess (see the class)
            log.warning(
                "could not ask the directory about a token sent to an admin route", exc_info=True
            )
            return False
        if found is None:
            return False
        self._known[candidate] = self._clock() + self.known_ttl_s
        self._known.move_to_end(candidate)
        while len(self._known) > KNOWN_WORKSPACE_TOKENS_MAX:
            self._known.popitem(last=False)
        return True
