"""Tokens and workspace ids: hashing, constant-time comparison, bearer parsing, id shape.

Workspace ids match `^[a-z0-9][a-z0-9-]{2,62}$` (3 to 63 characters, lower-case letters,
digits and inner hyphens). They become a directory name under the data folder, so nothing
that could climb out of it (`..`, `/`, `\\`, `%`, NUL, upper case tricks) is ever accepted.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Literal, get_args

from minisphere.errors import Forbidden, InsufficientScope, MalformedRequest, Unauthenticated

WORKSPACE_ID_PATTERN = r"^[a-z0-9][a-z0-9-]{2,62}$"
_WORKSPACE_ID = re.compile(WORKSPACE_ID_PATTERN)
WORKSPACE_TOKEN_PREFIX = "msw_"
MAX_TOKEN_CHARS = 512


def check_workspace_id(value: object) -> str:
    if not isinstance(value, str) or not _WORKSPACE_ID.fullmatch(value) or value.endswith("-"):
        raise MalformedRequest(
            f"workspace id must match {WORKSPACE_ID_PATTERN} and not end with '-'"
        )
    return value


def new_workspace_id() -> str:
    return "ws-" + secrets.token_hex(8)


def new_generation() -> str:
    """Names one creation of a workspace id (its snapshots are stored under it)."""
    return "g" + secrets.token_hex(6)


def new_workspace_token() -> str:
    return WORKSPACE_TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_token_id() -> str:
    return "tok-" + secrets.token_hex(8)


# What a workspace token may be issued for (see TokenGrant.scope): the one list the HTTP app
# and the CLI offer.
TokenScope = Literal["read", "write"]
TOKEN_SCOPES: tuple[TokenScope, ...] = get_args(TokenScope)


@dataclass(frozen=True)
class TokenGrant:
    """What one workspace token may do: the set of these is what the workspace actor checks
    on every call. `scope` read: the read methods only; write: every read and write method.
    `expires_at`: epoch ms, None for never."""

    token_hash: str
    token_id: str
    scope: str
    expires_at: int | None = None

    def expired(self, now_ms: int) -> bool:
        return self.expires_at is not None and now_ms >= self.expires_at

    def allows(self, access: str) -> bool:
        """Whether the grant covers a method of this access (read / write)."""
        return access == "read" or self.scope == "write"

    def require(self, method_name: str, access: str) -> None:
        """Raise unless the grant may call this method: maintenance methods need the admin
        token (Forbidden), a read token may not write (InsufficientScope). Checked by the
        ingress before a call is sent and by the workspace actor on every call."""
        if access == "maintenance":
            raise Forbidden(f"{method_name} is a maintenance method; it needs the admin token")
        if not self.allows(access):
            raise InsufficientScope(f"this token may only read; {method_name} is a {access}")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_hash(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))


def bearer_token(header: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header, or Unauthenticated."""
    if not header:
        raise Unauthenticated("missing Authorization: Bearer <token> header")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_CHARS:
        raise Unauthenticated("Authorization header must be 'Bearer <token>'")
    return token
