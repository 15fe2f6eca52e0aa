"""The in-cluster client refuses a token exactly as the HTTP ingress does (same status, code and
message for an expired token, another workspace's token and an unknown one). Runs without Ray:
the directory is a stand-in answering `authenticate` with the verdict under test."""
import asyncio

import pytest

import actors.in_cluster as in_cluster
from minisphere.client.client import ServiceError
from minisphere.control.token_cache import TokenCache
from minisphere.errors import MiniSphereError
from minisphere.http.statuses import error_response


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


def in_cluster_answer(monkeypatch, verdict: str) -> tuple[int, str, str]:
    monkeypatch.setattr(in_cluster.ray, "is_initialized", lambda: True)
    monkeypatch.setattr(in_cluster.ray, "get_runtime_context",
                        lambda: type("Context", (), {"namespace": "minisphere"})())
    monkeypatch.setattr(in_cluster.ray, "get_actor",
                        lambda *_args, **_kwargs: StandInDirectory(verdict))
    notes = in_cluster.AsyncInClusterWorkspace("notes", "ms_some-token")
    with pytest.raises(ServiceError) as refused:
        asyncio.run(notes.get_count())
    return refused.value.status, refused.value.code, refused.value.message


@pytest.mark.parametrize("verdict", ["expired", "other", "invalid"])
def test_the_in_cluster_client_refuses_a_token_as_the_ingress_does(monkeypatch, verdict):
    assert in_cluster_answer(monkeypatch, verdict) == ingress_answer(verdict)


def test_an_expired_token_is_told_it_expired(monkeypatch):
    status, code, message = in_cluster_answer(monkeypatch, "expired")
    assert status == 401 and "expired" in message
