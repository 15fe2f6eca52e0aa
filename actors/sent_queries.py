"""A recall's query embedding sent ahead: the ingress sends the query to the workspace's
embedder as the call arrives (actors/ingress/query_encoders.py), and the workspace actor takes
that call in place of its own (actors/workspace/remote_embedder.py). Shared by both sides."""
from __future__ import annotations

from typing import Any

Address = tuple[str, str]                # an embedder actor's (name, namespace)
# (the embedder it was sent to, [the embed call's ObjectRef]): the ref is in a list so Ray
# passes it along instead of waiting for the vector before the call may start
SentQuery = tuple[Address, list[Any]]


def query_of(body: object) -> str | None:
    """A recall's query, from its JSON body or from its arguments already validated."""
    query = body.get("query") if isinstance(body, dict) else getattr(body, "query", None)
    return query if isinstance(query, str) else None


def adopt_sent_query(embedder: Any, body: object, sent: SentQuery | None) -> bool:
    """Give `embedder` the call sent ahead when it went to that very embedder (a rebind may
    have moved the workspace to another since the caller learnt it) for this body's query."""
    if sent is None:
        return False
    address, refs = sent
    query = query_of(body)
    if (embedder is None or getattr(embedder, "address", None) != tuple(address)
            or not isinstance(query, str) or len(refs) != 1):
        return False
    embedder.adopt(query, refs[0])
    return True


def recall_envelope(envelope: dict[str, Any], embedder: Any, ahead: bool) -> dict[str, Any]:
    """A recall's answer names the workspace's embedder (`queryEncoder`, None when unbound:
    where the caller sends the next query), and says when it used the query sent ahead."""
    if ahead:
        envelope["timings"]["query_ahead"] = 1
    return {**envelope, "queryEncoder": getattr(embedder, "address", None)}
