"""What crosses Ray for each contract call: one typed request from the ingress, the
in-cluster client or the scheduler to the workspace's actor, read by field, not by position."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.sent_queries import SentQuery


@dataclass(frozen=True, slots=True)
class WorkspaceCall:
    """One contract method on one workspace, as its caller already checked it."""

    method: str
    body: dict[str, Any] | None
    caller: str  # the hash of the token the call presented (the actor authorizes it)
    idempotency_key: str | None = None  # writes: a repeat answers the stored result
    sent_query: SentQuery | None = None  # a recall's query already sent to an embedder
