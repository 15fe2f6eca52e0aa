"""A recall's query embedding sent ahead: the ingress sends the query to the workspace's
embedder as the call arrives (actors/ingress/query_encoders.py), and the workspace actor takes
that call in place of its own (actors/workspace/remote_embedder.py). Shared by both sides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minisphere.reply import Reply
from minisphere.wire.timings import CallTimings

Address = tuple[str, str]  # an embedder actor's (name, namespace)
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
    if (
        embedder is None
        or getattr(embedder, "address", None) != tuple(address)
        or query is None
        or len(refs) != 1
    ):
        return False
    embedder.adopt(query, refs[0])
    return True


@dataclass(frozen=True, slots=True)
class RecallReply(Reply[Any]):
    """A recall's reply, naming the workspace's embedder (None when it is unbound): where the
    caller sends the workspace's next query."""

    query_encoder: Address | None = None


def recall_reply(result: Any, timings: CallTimings, embedder: Any, ahead: bool) -> RecallReply:
    """A recall's reply; its timings say when it used the query sent ahead (`query_ahead`)."""
    if ahead:
        timings["query_ahead"] = 1
    return RecallReply(
        value=result, timings=timings, query_encoder=getattr(embedder, "address", None)
    )
