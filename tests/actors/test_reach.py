"""The resend loop's answers when Ray itself fails a call to the directory (in process: the
directory's methods are awaitables raising Ray's own exception classes)."""

from __future__ import annotations

import asyncio

import pytest
from ray.exceptions import ActorDiedError, TaskCancelledError

from actors import workspace_reach
from actors.ingress.durability_admin import DurabilityAdmin
from actors.workspace_call import WorkspaceCall
from actors.workspace_reach import WorkspaceReach
from minisphere.errors import WorkspaceUnavailable
from minisphere.http.statuses import error_response
from minisphere.reply import Reply
from minisphere.settings import load_settings
from minisphere.wire.actor_methods import ServedMethod

GET_COUNT = WorkspaceCall("getCount", {}, "hash")


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
        asyncio.run(reach.call("ws-a", "call", GET_COUNT))
    assert error_response(refused.value)[0] == 503


class Answering:
    """A workspace actor handle whose `call` answers at once with a done reply."""

    def __getattr__(self, method: str):
        async def answered(*args):
            return Reply.done({"count": 0}, timings={"actor_ms": 0.1})

        return type("Remote", (), {"remote": staticmethod(answered)})


class SlowDirectory:
    """`activate` takes a few milliseconds, as a directory round trip (or a wake) does."""

    def __getattr__(self, method: str):
        async def activate(*args):
            await asyncio.sleep(0.005)
            return Answering()

        return type("Remote", (), {"remote": staticmethod(activate)})


def test_a_call_that_waited_for_its_actor_says_how_long_and_a_cached_one_does_not():
    reach = WorkspaceReach(SlowDirectory())

    async def two_calls():
        first, _, _ = await reach.call("ws-a", "call", GET_COUNT)
        second, _, _ = await reach.call("ws-a", "call", GET_COUNT)
        return first, second

    first, second = asyncio.run(two_calls())
    assert first.timings["activate_ms"] >= 4.0
    assert "activate_ms" not in second.timings


class Hibernated:
    """A cached handle whose actor has since hibernated: a call on it fails after a moment."""

    def __getattr__(self, method: str):
        async def died(*args):
            await asyncio.sleep(0.005)
            raise ActorDiedError()

        return type("Remote", (), {"remote": staticmethod(died)})


def test_a_call_that_found_its_cached_actor_gone_counts_that_attempt_and_the_wake_as_waiting():
    # the usual wake: the ingress still holds the handle of the actor that hibernated; the
    # time lost on it and the re-activation are waiting for the actor, not the ingress's own
    reach = WorkspaceReach(SlowDirectory())
    reach._handles["ws-a"] = Hibernated()
    reply, attempts, _rpc_ms = asyncio.run(
        reach.call("ws-a", "call", GET_COUNT, idempotent_attempts=1)
    )
    assert attempts == 2 and reply.ok
    assert reply.timings["activate_ms"] >= 9.0  # 5 ms lost + 5 ms re-activation


class Stalled:
    """A directory or an actor that never answers (stalled, or its node gone silent); counts
    the calls it was sent."""

    def __init__(self):
        self.sent = 0

    def __getattr__(self, method: str):
        async def never(*args):
            self.sent += 1
            await asyncio.Event().wait()

        return type("Remote", (), {"remote": staticmethod(never)})


def test_a_directory_that_never_answers_is_a_503_to_retry_not_a_hung_request(monkeypatch):
    monkeypatch.setattr(workspace_reach, "DIRECTORY_ANSWER_TIMEOUT_S", 0.2)
    reach = WorkspaceReach(Stalled())
    with pytest.raises(WorkspaceUnavailable) as refused:
        asyncio.run(reach.call("ws-a", "call", GET_COUNT))
    assert error_response(refused.value)[0] == 503
    assert "directory did not answer" in str(refused.value)


class ActivatesStalled:
    """Activations answer at once, with the one actor that never answers."""

    def __init__(self, actor: Stalled):
        self.actor = actor

    def __getattr__(self, method: str):
        async def activate(*args):
            return self.actor

        return type("Remote", (), {"remote": staticmethod(activate)})


def test_a_call_whose_actor_never_answers_ends_by_its_deadline_however_many_resends_it_may():
    # a read may be sent again after each timeout; the call as a whole still ends by its
    # deadline (below the front's own limit) rather than after every attempt's full timeout
    actor = Stalled()
    reach = WorkspaceReach(ActivatesStalled(actor))
    with pytest.raises(WorkspaceUnavailable):
        asyncio.run(
            reach.call(
                "ws-a", "call", GET_COUNT, idempotent_attempts=50, timeout_s=0.2, deadline_s=0.5
            )
        )
    assert 1 <= actor.sent <= 4  # 50 without the deadline


def test_an_import_chunk_to_an_actor_that_never_answers_ends_within_its_bound(tmp_path):
    # an admin import chunk went through the resend loop with no time limit: an actor lost
    # to a fault left the operator's import hanging for good
    actor = Stalled()
    admin = DurabilityAdmin(
        load_settings({"MINISPHERE_DATA_DIR": str(tmp_path)}),
        WorkspaceReach(ActivatesStalled(actor)),
        ask_directory=None,
        admin_hash="h",
    )
    with pytest.raises(WorkspaceUnavailable):
        asyncio.run(
            admin.actor_call(
                "ws-a", ServedMethod.IMPORT_CHUNK, "k", "{}", [], 0, True, "h", timeout_s=0.3
            )
        )
    assert actor.sent >= 1
