"""An upper bound on the requests one ingress replica holds at once: past it a request is
answered at once with 503 `overloaded` and Retry-After, before any route runs (so before any
token check or wake), rather than queued behind the others until its caller times out.

Pure ASGI, so a refusal costs no framework work. The bound sits below the deployment's own
`max_ongoing_requests`, so Serve's proxy, which answers its backpressure with a bare 503 and no
Retry-After, never has to.
"""

from __future__ import annotations

import json

from minisphere.errors import Overloaded
from minisphere.http.statuses import status_for

REFUSAL_RETRY_AFTER_S = 1


class InflightLimit:
    def __init__(self, app, max_inflight: int):
        self.app = app
        self.max_inflight = max_inflight
        self.inflight = 0
        self.refused = 0
        # made once, and without `error_response`, which logs each answer it makes
        refusal = Overloaded(
            "this ingress replica holds as many requests as it can answer in time",
            retry_after_s=REFUSAL_RETRY_AFTER_S,
        )
        self._status = status_for(refusal)
        self._body = json.dumps(refusal.to_dict()).encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or self.max_inflight <= 0:
            return await self.app(scope, receive, send)
        if self.inflight >= self.max_inflight:
            self.refused += 1
            return await self._refuse(send)
        self.inflight += 1
        try:
            return await self.app(scope, receive, send)
        finally:
            self.inflight -= 1

    async def _refuse(self, send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": self._status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"retry-after", str(REFUSAL_RETRY_AFTER_S).encode()),
                    (b"content-length", str(len(self._body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": self._body})
