"""Where a call's time went, as the layers it crossed report it: the writer or a read thread,
the workspace actor, the ingress's reach of it and the HTTP route each add their part, and
the HTTP layer sends them as `Server-Timing` (`http.handling.TIMING_PARTS` names the parts it
shows). One declaration for the writers and the reader."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

# the parts with a duration the HTTP answer shows, each in milliseconds
TimedPart = Literal[
    "auth_ms", "activate_ms", "prepare_ms", "queue_ms", "engine_ms", "actor_ms", "rpc_ms"
]


class CallTimings(TypedDict, total=False):
    """Milliseconds per stage (`*_ms`), and what the writer and the ingress note of the call."""

    auth_ms: float  # the token check, shown when it asked the directory
    activate_ms: float  # finding (or waking) the workspace's actor
    prepare_ms: float  # a write's hooks (embedding) before it was queued
    queue_ms: float  # waiting for the writer or a reader thread
    engine_ms: float  # the transaction, or the read
    actor_ms: float  # inside the workspace actor, end to end
    rpc_ms: float  # the ingress's call to the actor, there and back
    replicate_ms: float  # a committed batch waiting for the replica
    batch: int  # writes committed together
    replayed: bool  # answered from an idempotency key's stored result
    committed: bool  # the write committed (even when the replica did not confirm it)
    query_ahead: int  # 1: a recall used the query embedding the ingress sent ahead
    attempts: int  # sends of the call, when more than one
