"""The in-cluster client refuses a token exactly as the HTTP ingress does (same status, code and
message for an expired token, another workspace's token and an unknown one), and sends a call
refused as `Overloaded` again as the HTTP client does. Runs without Ray: the directory is a
stand-in answering `authenticate` with the verdict under test, the workspace's reach one that
refuses a given number of calls."""

import asyncio

import pytest

import actors.in_cluster as in_cluster
from minisphere.client.exchange import ServiceError
from minisphere.control.token_cache import TokenCache
from minisphere.errors import MiniSphereError, Overloaded, WorkspaceUnavailable
from minisphere.http.statuses import error_response
from minisphere.reply import Reply


class StandInDirectory:
    """A directory actor handle whose `authenticate` answers one verdict."""

    def __init__(self, verdict: str):
        self.verdict = verdict
        self.authenticate = self

    def remote(self, *_args):
        async def answer():
            return self.verdict, []

        return answer()


def ingress_answer(verdict: str) -> tuple[int, str, str]:
    async def ask(_method, *_args):
        return verdict, []

    try:
        asyncio.run(TokenCache(ask, ttl_s=30).grant_of("notes", "hash", "10.0.0.1"))
    except MiniSphereError as exc:
        status, payload = error_response(exc)
        return status, payload["error"]["code"], payload["error"]["message"]
    raise AssertionError(f"the ingress accepted a token judged {verdict!r}")


def stand_in_cluster(monkeypatch, verdict: str) -> None:
    monkeypatch.setattr(in_cluster.ray, "is_initialized", lambda: True)
    monkeypatch.setattr(
        in_cluster.ray,
        "get_runtime_context",
        lambda: type("Context", (), {"namespace": "minisphere"})(),
    )
    monkeypatch.setattr(
        in_cluster.ray, "get_actor", lambda *_args, **_kwargs: StandInDirectory(verdict)
    )


def in_cluster_answer(monkeypatch, verdict: str) -> tuple[int, str, str]:
    stand_in_cluster(monkeypatch, verdict)
    notes = in_cluster.AsyncInClusterWorkspace("notes", "ms_some-token")
    with pytest.raises(ServiceError) as refused:
        asyncio.run(notes.get_count())
    return refused.value.status, refused.value.code, refused.value.message


@pytest.mark.parametrize("verdict", ["expired", "other", "invalid"])
def test_the_in_cluster_client_refuses_a_token_as_the_ingress_does(monkeypatch, verdict):
    assert in_cluster_answer(monkeypatch, verdict) == ingress_answer(verdict)


def test_an_expired_token_is_told_it_expired(monkeypatch):
    status, _code, message = in_cluster_answer(monkeypatch, "expired")
    assert status == 401 and "expired" in message


class RefusingReach:
    """A workspace reach that refuses the first `refusals` calls with `refusal`, then answers."""

    def __init__(self, refusals: int, refusal: MiniSphereError):
        self.refusals, self.refusal, self.calls = refusals, refusal, 0

    async def call(self, *_args, **_kwargs):
        self.calls += 1
        if self.calls <= self.refusals:
            raise self.refusal
        return Reply.done({"count": 7}), 1, 0.0


def refused_in_cluster(
    monkeypatch, refusals: int, refusal: MiniSphereError, call, overload_retries: int = 3
):
    """(the answer of `call(notes)` or its ServiceError, the calls the reach saw, the waits)."""
    stand_in_cluster(monkeypatch, "ok")
    notes = in_cluster.AsyncInClusterWorkspace(
        "notes", "ms_some-token", overload_retries=overload_retries
    )
    notes.reach = RefusingReach(refusals, refusal)
    waits = []

    async def record(seconds):
        waits.append(seconds)

    notes.overload_retry.async_sleep = record

    async def scenario():
        try:
            return await call(notes)
        except ServiceError as error:
            return error

    return asyncio.run(scenario()), notes.reach.calls, waits


def test_an_overloaded_call_is_sent_again_and_then_answered(monkeypatch):
    answer, calls, waits = refused_in_cluster(
        monkeypatch,
        2,
        Overloaded("at capacity", retry_after_s=2.0),
        lambda notes: notes.call("capture", content="x"),
    )  # keyless: not run, so safe
    assert answer == {"count": 7} and calls == 3
    assert len(waits) == 2 and all(1.0 <= wait <= 3.0 for wait in waits)


def test_after_the_last_resend_the_refusal_carries_retry_after(monkeypatch):
    error, calls, _ = refused_in_cluster(
        monkeypatch,
        10,
        Overloaded("at capacity", retry_after_s=2.0),
        lambda notes: notes.get_count(),
        overload_retries=2,
    )
    assert (error.status, error.code, error.retry_after_s) == (503, "overloaded", 2.0)
    assert calls == 3


def test_an_unavailable_keyless_write_is_not_sent_again(monkeypatch):
    error, calls, waits = refused_in_cluster(
        monkeypatch,
        1,
        WorkspaceUnavailable("the outcome is unknown"),
        lambda notes: notes.call("capture", content="x"),
    )
    assert (error.status, error.code, error.retry_after_s) == (503, "unavailable", None)
    assert calls == 1 and waits == []
