"""Request headers by which Ray Serve's Python proxy lets a caller lift the proxy's own limits:
`x-request-timeout-seconds` (the request's timeout; none at all when it is not positive) and
`x-request-disconnect-disabled: ?1` (go on after the caller left). The proxy reads them before
any code of ours runs, so they cannot be stripped there; a request that carries one is refused
here at once, before it can hold an ingress slot or reach a workspace, so no lifted limit ever
keeps anything waiting. (Serve's HAProxy front reads neither; the refusal is the same there.)

Pure ASGI and outermost, like the in-flight bound (admission.py).
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from minisphere.errors import MalformedRequest
from minisphere.http.admission import send_answer
from minisphere.http.statuses import status_for

FRONT_OVERRIDE_HEADERS = frozenset({b"x-request-timeout-seconds", b"x-request-disconnect-disabled"})


class RefuseFrontOverrides:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        refusal = MalformedRequest(
            "the x-request-timeout-seconds and x-request-disconnect-disabled headers are not "
            "accepted: the service's own limits apply to every request"
        )
        self._status = status_for(refusal)
        self._body = json.dumps(refusal.to_dict()).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and any(
            name in FRONT_OVERRIDE_HEADERS for name, _ in scope["headers"]
        ):
            await send_answer(send, self._status, self._body)
            return
        await self.app(scope, receive, send)
