"""Body limits hold for uploads that declare no length (chunked): the stream is read only up to
the limit, then refused with 413 `request_too_large`, on the JSON routes and the import route."""

from __future__ import annotations

import pytest

from minisphere.http.handling import MAX_BODY_BYTES
from minisphere.http.routes.transfer import IMPORT_MAX_BODY_BYTES
from tests.http.standin import ADMIN, TENANT, StandInGateway, StandInTransfer, make_api, one

CHUNK_BYTES = 64 * 1024


class CountingUpload:
    """A chunked request body of `total_bytes`, counting how much of it the server pulled."""

    def __init__(self, total_bytes: int, first: bytes = b""):
        self.total_bytes, self.first = total_bytes, first
        self.pulled_bytes = 0

    async def __aiter__(self):
        sent = 0
        if self.first:
            self.pulled_bytes += len(self.first)
            sent += len(self.first)
            yield self.first
        while sent < self.total_bytes:
            chunk = b" " * min(CHUNK_BYTES, self.total_bytes - sent)
            sent += len(chunk)
            self.pulled_bytes += len(chunk)
            yield chunk


UNDER_LIMIT_BODIES = {
    "/v1/w/notes/capture": b'{"content": "x"}',
    "/v1/workspaces": b'{"id": "ws-chunked"}',
    "/v1/workspaces/notes/import": b'{"record":"header"}\n',
}


@pytest.mark.parametrize(
    "url, headers, limit",
    [
        ("/v1/w/notes/capture", TENANT, MAX_BODY_BYTES),
        ("/v1/workspaces", ADMIN, MAX_BODY_BYTES),
        ("/v1/workspaces/notes/import?key=abc&first=1", ADMIN, IMPORT_MAX_BODY_BYTES),
    ],
)
def test_chunked_body_over_the_limit_is_refused_without_reading_it_whole(url, headers, limit):
    gateway, transfer = StandInGateway(), StandInTransfer()
    api = make_api(gateway, transfer)
    upload = CountingUpload(limit * 4, first=b'{"record":"header"}\n')
    response = one(api, "POST", url, content=upload, headers=headers)
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "request_too_large"
    assert str(limit) in response.json()["error"]["message"]
    # stopped at the limit: at most one chunk past it was pulled, never the whole upload
    assert upload.pulled_bytes <= limit + CHUNK_BYTES + len(upload.first)
    assert gateway.calls == [] and transfer.chunks == []
    # the same route still reads a chunked body under the limit whole
    under = UNDER_LIMIT_BODIES[url.split("?")[0]] + b" " * (limit // 2)

    async def chunks():
        for start in range(0, len(under), CHUNK_BYTES):
            yield under[start : start + CHUNK_BYTES]

    response = one(api, "POST", url, content=chunks(), headers=headers)
    assert response.status_code in (200, 201), response.text
    assert len(gateway.calls) + len(transfer.chunks) == 1
