"""The checks a workspace actor makes of the token on every call, against the authoritative
token set the directory hands it (so a revoked token is refused from the very next call,
whichever ingress sent it), and the record of when each token was last used."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable

from minisphere.control.auth import TokenGrant, same_hash
from minisphere.engine.clock import epoch_ms
from minisphere.engine.methods import Method
from minisphere.errors import Unauthenticated

TOKEN_USE_REPORT_S = 60.0  # how often token use reaches the directory, at most
# A report goes out this long after the call that owed it, never inside it: it can be the first
# message of a woken actor's process to the directory, which Ray submits only after looking the
# actor up and connecting to it, so inside the call it would lengthen every wake.
TOKEN_USE_REPORT_DELAY_S = 1.0


class TokenChecks:
    def __init__(self, admin_token_hash: str, report_use: Callable[[dict[str, int]], None]):
        self.admin_token_hash = admin_token_hash
        self._report_use = report_use  # token id -> last use, to the directory
        self.grants: dict[str, TokenGrant] = {}  # token hash -> what that token may do
        self._used: dict[str, int] = {}  # token id -> last use (epoch ms)
        self._used_reported_at = float("-inf")
        self._report_pending = False

    def set_grants(self, grants: Iterable[TokenGrant]) -> None:
        self.grants = {grant.token_hash: grant for grant in grants}

    def forget_workspace(self) -> None:
        """The workspace was let go (its use already reported): its grants go with it, so a
        report still scheduled finds nothing to send and the next tenant's start from none."""
        self.grants, self._used = {}, {}

    def _is_admin(self, token_hash: str) -> bool:
        return bool(self.admin_token_hash) and same_hash(token_hash, self.admin_token_hash)

    def authorize(self, method: Method, token_hash: str) -> None:
        """Refuse the call unless the token may call `method` (a contract method) now."""
        if self._is_admin(token_hash):
            return
        grant = self.grants.get(token_hash)
        if grant is None:
            raise Unauthenticated("invalid token")
        now_ms = epoch_ms()
        if grant.expired(now_ms):
            raise Unauthenticated("the token has expired")
        grant.require(method.name, method.access)
        self._note_use(grant.token_id, now_ms)

    def authorize_admin(self, token_hash: str, what: str) -> None:
        if not self._is_admin(token_hash):
            raise Unauthenticated(f"{what} needs the admin token")

    def _note_use(self, token_id: str, now_ms: int) -> None:
        """Remember when each token was last used; the directory hears it from a report sent
        on the actor's event loop after the call, at most every TOKEN_USE_REPORT_S (its
        `lastUsedAt` is that coarse), fire-and-forget."""
        self._used[token_id] = now_ms
        if self._report_pending:
            return
        self._report_pending = True
        due_in_s = max(
            TOKEN_USE_REPORT_DELAY_S, self._used_reported_at + TOKEN_USE_REPORT_S - time.monotonic()
        )
        asyncio.get_running_loop().call_later(due_in_s, self._send_due_report)

    def _send_due_report(self) -> None:
        self._report_pending = False
        self.report_use()

    def report_use(self) -> None:
        used = self.take_use()
        if used:
            self._report_use(used)

    def take_use(self) -> dict[str, int]:
        """The token use not reported yet, now counted as reported (a hibernation hands it
        to the directory in its answer, rather than in a message of its own)."""
        used, self._used = self._used, {}
        if used:
            self._used_reported_at = time.monotonic()
        return used
