"""The resend loop's answers when Ray itself fails a call to the directory (in process: the
directory's methods are awaitables raising Ray's own exception classes)."""
from __future__ import annotations

import asyncio

import pytest
from ray.exceptions import TaskCancelledError

from actors.parts.reach import WorkspaceReach
from minisphere.errors import WorkspaceUnavailable
from minisphere.http.statuses import error_response


class CancellingDirectory:
    """Every call is cancelled before it runs, as Ray cancels a task whose awaiting future
    was cancelled (seen on a loaded node: it reached callers as a 500)."""

    def __getattr__(self, method: str):
        async def cancelled(*args):
            raise TaskCancelledError()
        return type("Remote", (), {"remote": staticmethod(cancelled)})


def test_a_directory_call_cancelled_by_ray_is_a_503_to_retry_not_an_internal_error():
    reach = WorkspaceReach(CancellingDirectory())
    with pytest.raises(WorkspaceUnavailable) as refused:
        asyncio.run(reach.call("ws-a", "call", "getCount", {}, "hash"))
    assert error_response(refused.value)[0] == 503
