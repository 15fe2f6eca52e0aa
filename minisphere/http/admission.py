"""An upper bound on the requests one ingress replica holds at once, and on the share of it one
workspace's requests may hold: past either a request is answered at once with 503 `overloaded`
and Retry-After, before any route runs (so before any token check or wake), rather than queued
behind the others until its caller times out.

The share keeps one tenant (held streams, bodies that never finish arriving, a flood) from
taking every slot while the others are refused. A request is counted against the workspace its
path names (`/v1/w/{workspace}/...`, `/v1/workspaces/{workspace}/...`): the routes check the
token for that workspace before reading a body, so a request naming a workspace that is not the
caller's is refused before it can be held. Requests that name none count only against the bound.

Pure ASGI, so a refusal costs no framework work. The bound sits below the deployment's own
`max_ongoing_requests`, so Serve's proxy, which answers its backpressure with a bare 503 and no
Retry-After, never has to.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from minisphere.errors import Overloaded
from minisphere.http.statuses import status_for

REFUSAL_RETRY_AFTER_S = 1
# One workspace's requests hold at most this share of the replica's bound, and never fewer than
# the floor (a busy agent's concurrency), unless the bound itself is smaller.
WORKSPACE_INFLIGHT_SHARE = 0.25
WORKSPACE_INFLIGHT_FLOOR = 16
_WORKSPACE_PREFIXES = ("/v1/w/", "/v1/workspaces/")


def workspace_share(max_inflight: int) -> int:
    """The most requests one workspace may hold of a replica bound of `max_inflight`."""
    share = max(WORKSPACE_INFLIGHT_FLOOR, int(max_inflight * WORKSPACE_INFLIGHT_SHARE))
    return min(max_inflight, share)


def workspace_of(path: str) -> str | None:
    for prefix in _WORKSPACE_PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix) :].partition("/")[0] or None
    return None


def _refusal_body(message: str) -> bytes:
    # made once, and without `error_response`, which logs each answer it makes
    return json.dumps(Overloaded(message, retry_after_s=REFUSAL_RETRY_AFTER_S).to_dict()).encode()


class InflightLimit:
    def __init__(self, app: ASGIApp, max_inflight: int) -> None:
        self.app = app
        self.max_inflight = max_inflight
        self.per_workspace = workspace_share(max_inflight)
        self.inflight = 0
        self.held: dict[str, int] = {}  # requests held, by workspace
        self.refused = 0
        self._status = status_for(Overloaded("", retry_after_s=REFUSAL_RETRY_AFTER_S))
        self._full = _refusal_body(
            "this ingress replica holds as many requests as it can answer in time"
        )
        self._share_spent = _refusal_body(
            "this workspace holds its share of this ingress replica's requests"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_inflight <= 0:
            return await self.app(scope, receive, send)
        if self.inflight >= self.max_inflight:
            return await self._refuse(send, self._full)
        workspace = workspace_of(scope["path"])
        if workspace is not None:
            held = self.held.get(workspace, 0)
            if held >= self.per_workspace:
                return await self._refuse(send, self._share_spent)
            self.held[workspace] = held + 1
        self.inflight += 1
        try:
            return await self.app(scope, receive, send)
        finally:
            self.inflight -= 1
            if workspace is not None:
                self._let_go(workspace)

    def _let_go(self, workspace: str) -> None:
        held = self.held[workspace] - 1
        if held:
            self.held[workspace] = held
        else:
            del self.held[workspace]  # only workspaces with requests held are kept

    async def _refuse(self, send: Send, body: bytes) -> None:
        self.refused += 1
        await send_answer(
            send, self._status, body, (b"retry-after", str(REFUSAL_RETRY_AFTER_S).encode())
        )


async def send_answer(send: Send, status: int, body: bytes, *headers: tuple[bytes, bytes]) -> None:
    """A whole JSON answer sent from an ASGI middleware, before any route runs."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                *headers,
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
