"""A bound recall's query, sent by the ingress to its workspace's embedder as the call arrives.

The workspace actor starts a recall's query embedding as soon as the call reaches it, and the
forward pass runs beside the lexical stages; on a loaded node the stages still finish first,
and the recall waits for the vector. Sent from here, the forward pass also runs while the call
travels to the actor and waits there for a reader thread.

The ingress learns which embedder a workspace uses from that workspace's own recall answers
(`RecallReply.query_encoder`: the embedder actor's name and namespace, None when it is
unbound), so the first recall of a workspace after this replica started, or after a rebind,
goes without. The vector is a hint: the actor takes it only while that embedder is still its
own (`RemoteEmbedder.adopt`), for exactly the query it was computed for.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

import ray

from actors.sent_queries import Address, SentQuery, query_of
from minisphere.engine import constants as C

log = logging.getLogger("minisphere.query_encoders")
# workspaces whose embedder this replica remembers (the least recently recalled go first)
REMEMBERED_WORKSPACES_MAX = 4096
# (workspace, query) pairs sent lately: the actor keeps the vectors of recent queries, so a
# repeat is not sent again (its vector would be computed for nothing)
RECENT_QUERIES_MAX = 1024


class QueryEncoders:
    def __init__(self, remembered_max: int = REMEMBERED_WORKSPACES_MAX):
        self.remembered_max = remembered_max
        self._by_workspace: OrderedDict[str, Address] = OrderedDict()
        self._handles: dict[Address, Any] = {}
        self._finding: set[Address] = set()
        self._recent: OrderedDict[tuple[str, str], None] = OrderedDict()

    def send(self, workspace_id: str, body: object) -> SentQuery | None:
        """The recall's query sent to the workspace's embedder, when this replica knows it
        and holds its handle; None otherwise (the actor embeds the query itself)."""
        address = self._by_workspace.get(workspace_id)
        query = query_of(body)
        if address is None or query is None or not query.strip() or len(query) > C.MAX_QUERY_CHARS:
            return None  # refused by the actor: nothing worth embedding
        handle = self._handles.get(address)
        if handle is None:
            self._find(address)
            return None
        sent = (workspace_id, query)
        if sent in self._recent:
            self._recent.move_to_end(sent)
            return None
        self._recent[sent] = None
        if len(self._recent) > RECENT_QUERIES_MAX:
            self._recent.popitem(last=False)
        return address, [handle.embed.remote([query])]

    def learn(self, workspace_id: str, address: object) -> None:
        """What a recall's reply said of the workspace's embedder (None: it has none)."""
        if not (isinstance(address, (list, tuple)) and len(address) == 2):
            self.forget(workspace_id)
            return
        known = (str(address[0]), str(address[1]))
        self._by_workspace[workspace_id] = known
        self._by_workspace.move_to_end(workspace_id)
        while len(self._by_workspace) > self.remembered_max:
            self._by_workspace.popitem(last=False)
        if known not in self._handles:
            self._find(known)

    def forget(self, workspace_id: str) -> None:
        self._by_workspace.pop(workspace_id, None)

    def _find(self, address: Address) -> None:
        """Look the named embedder up off the event loop (a blocking call to Ray's control
        store); until it is found, recalls go without."""
        if address in self._finding:
            return
        self._finding.add(address)

        def found(looked_up: asyncio.Future[Any]) -> None:
            self._finding.discard(address)
            try:
                self._handles[address] = looked_up.result()
            except Exception as exc:  # noqa: BLE001 - gone or renamed: the actor embeds itself
                log.info("embedder %s not found: %s", address[0], exc)

        name, namespace = address
        asyncio.get_running_loop().run_in_executor(
            None, lambda: ray.get_actor(name, namespace=namespace)
        ).add_done_callback(found)
