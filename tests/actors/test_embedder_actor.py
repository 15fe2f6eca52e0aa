"""The shared embedder actor: one per provider (get-if-exists), batches coalesced, and a
Workspace driven through RemoteEmbedder (what a workspace actor hands the engine)."""

import asyncio
import uuid

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from actors.embedder.actor import embedder_name, get_or_create_embedder  # noqa: E402
from actors.ingress.query_encoders import QueryEncoders  # noqa: E402
from actors.sent_queries import adopt_sent_query  # noqa: E402
from actors.workspace.remote_embedder import RemoteEmbedder  # noqa: E402
from minisphere.engine import constants as C  # noqa: E402
from minisphere.engine.embedding.hash_provider import HashProvider  # noqa: E402
from minisphere.engine.workspace import Workspace  # noqa: E402

COALESCING_ROUNDS = 10  # rounds of calls sent at a busy embedder before the test gives up


@pytest.fixture(scope="module")
def ray_session():
    owns = not ray.is_initialized()  # the service suite may have started Ray already
    if owns:
        ray.init(
            address="local",
            num_cpus=1,
            include_dashboard=False,
            logging_level="WARNING",
            log_to_driver=False,
            namespace=f"vectors-{uuid.uuid4().hex[:8]}",
        )
    yield
    if owns:
        ray.shutdown()


def test_vectors_embedder_actor_is_shared_and_batches(ray_session, tmp_path, clock):
    spec = {"provider": "hash", "dim": 384, "model": f"t{uuid.uuid4().hex[:6]}"}
    first = get_or_create_embedder(spec, num_cpus=0)
    try:
        again = get_or_create_embedder(spec, num_cpus=0)
        assert first._actor_id == again._actor_id  # one per cluster, by name
        assert embedder_name(spec) == f"embedder:hash:{spec['model']}:384"
        remote = RemoteEmbedder(first)
        assert (remote.name, remote.dim) == ("hash-384", 384)
        # four full passes first (~10 ms each here): the 20 small calls sent right behind them
        # arrive while the embedder is busy, which is when calls are coalesced (an idle one
        # starts each call's pass at once). On a loaded machine the calls can reach it one by
        # one after the passes ended: the round is then sent again, a bounded number of times
        coalesced = False
        for round_number in range(COALESCING_ROUNDS):
            filler = [[f"filler {round_number} {n} {i}" for i in range(256)] for n in range(4)]
            texts = [f"text {round_number} number {i}" for i in range(20)]
            before = ray.get(first.info.remote())
            refs = [first.embed.remote(batch) for batch in filler]
            refs += [first.embed.remote([t]) for t in texts]  # concurrent callers
            vectors = np.concatenate(ray.get(refs)[len(filler) :])
            assert np.allclose(vectors, HashProvider().embed(texts), atol=1e-6)
            info = ray.get(first.info.remote())
            assert info["texts"] - before["texts"] == 4 * 256 + 20
            if info["batches"] - before["batches"] < len(refs):  # coalesced into fewer passes
                coalesced = True
                break
        assert coalesced, f"no round of {COALESCING_ROUNDS} coalesced any call"
        with Workspace(tmp_path / "r.db", clock=clock, embedder=remote) as ws:
            entry = ws.capture("embedded by the shared actor")["id"]
            top = ws.recall("shared actor")["items"][0]
            assert top["id"] == entry and top["breakdown"]["vector"]["rank"] == 1
    finally:
        ray.kill(first, no_restart=True)


def test_a_recall_sends_its_query_to_the_embedder_actor_and_gets_the_vector_back(
    ray_session, tmp_path, clock
):
    spec = {"provider": "hash", "dim": 384, "model": f"t{uuid.uuid4().hex[:6]}"}
    handle = get_or_create_embedder(spec, num_cpus=0)
    try:
        remote = RemoteEmbedder(handle)
        with Workspace(tmp_path / "q.db", clock=clock, embedder=remote) as ws:
            entry = ws.capture("the query vector crossed the actor boundary")["id"]
            calls = ray.get(handle.info.remote())["calls"]
            result = ws.recall("query vector boundary")
            assert ray.get(handle.info.remote())["calls"] == calls + 1  # the query, once
            top = result["items"][0]
            assert top["id"] == entry and top["breakdown"]["vector"]["rank"] == 1
            assert result["timings"]["queryEmbedMs"] > 0
    finally:
        ray.kill(handle, no_restart=True)


def test_an_embedder_actor_whose_model_fails_leaves_the_recall_lexical_with_the_reason(
    ray_session, tmp_path, clock, monkeypatch
):
    """The actor's error crosses the Future a recall waits on: the recall answers from its
    lexical arms and says why the vector arm is off. (No back-off here, so the recall asks the
    embedder itself instead of repeating the capture's failure.)"""
    from minisphere.engine.vectors import embeddings

    monkeypatch.setattr(embeddings, "FAILURE_BACKOFF_S", 0.0)
    spec = {
        "provider": "http",
        "url": "http://127.0.0.1:9/v1",
        "dim": 16,
        "model": f"down-{uuid.uuid4().hex[:6]}",
        "timeout_s": 2,
    }
    handle = get_or_create_embedder(spec, num_cpus=0)
    try:
        with Workspace(tmp_path / "f.db", clock=clock, embedder=RemoteEmbedder(handle)) as ws:
            entry = ws.capture("written while the embedding service is down")["id"]
            # the capture left its entry without a vector: the backfill it asked for runs on a
            # thread of its own and fails too; counted before the recall's own call
            assert ws.vectors.wait_for_backfills(30)
            calls = ray.get(handle.info.remote())["calls"]
            result = ws.recall("embedding service down")
            assert ray.get(handle.info.remote())["calls"] == calls + 1
            assert [item["id"] for item in result["items"]] == [entry]
            state = result["queryUsed"]["vector"]
            assert state["arm"] == "off" and "failed" in state["reason"]
            assert "vector" not in result["items"][0]["breakdown"]
    finally:
        ray.kill(handle, no_restart=True)


def test_specs_that_differ_in_size_or_endpoint_never_share_an_embedder():
    """Seen when a workspace was rebound to the hash provider at 32 dimensions: the cluster's
    embedder for `hash` was another workspace's, at 384, and its vectors were not 32 long."""
    base = {"provider": "http", "model": "m", "dim": 384, "url": "http://a.example/v1"}
    names = {
        embedder_name(spec)
        for spec in (
            base,
            {**base, "dim": 32},
            {**base, "url": "http://b.example/v1"},
            {**base, "apiKeyEnv": "OTHER_KEY"},
            {"provider": "hash", "model": "m", "dim": 384},
        )
    }
    assert len(names) == 5
    assert all("a.example" not in name for name in names)  # the URL is digested


def _hash_embedder():
    spec = {"provider": "hash", "dim": 384, "model": f"t{uuid.uuid4().hex[:6]}"}
    namespace = ray.get_runtime_context().namespace
    return get_or_create_embedder(spec, num_cpus=0), (embedder_name(spec), namespace)


def test_a_query_sent_ahead_to_the_embedder_is_taken_by_the_recall_not_embedded_again(
    ray_session, tmp_path, clock
):
    handle, address = _hash_embedder()
    try:
        remote = RemoteEmbedder(handle, address=address)
        with Workspace(tmp_path / "a.db", clock=clock, embedder=remote) as ws:
            entry = ws.capture("a query embedded before the call arrived")["id"]
            query = "embedded before arrival"
            sent = (address, [handle.embed.remote([query])])
            ray.get(sent[1][0])  # an actor runs calls concurrently: count it once done
            calls = ray.get(handle.info.remote())["calls"]
            assert adopt_sent_query(remote, {"query": query}, sent)
            top = ws.recall(query)["items"][0]
            assert ray.get(handle.info.remote())["calls"] == calls  # nothing sent twice
            assert top["id"] == entry and top["breakdown"]["vector"]["rank"] == 1
    finally:
        ray.kill(handle, no_restart=True)


def test_a_query_sent_ahead_to_another_embedder_or_for_another_query_is_not_taken(
    ray_session, tmp_path, clock
):
    """The ingress learnt the embedder before a rebind moved the workspace to another one:
    that vector is of the other model, so the recall embeds its query itself."""
    handle, address = _hash_embedder()
    other, other_address = _hash_embedder()
    try:
        remote = RemoteEmbedder(handle, address=address)
        wrong = (other_address, [other.embed.remote(["moved query"])])
        assert not adopt_sent_query(remote, {"query": "moved query"}, wrong)
        with Workspace(tmp_path / "m.db", clock=clock, embedder=remote) as ws:
            ws.capture("a query for the workspace's own embedder")
            calls = ray.get(handle.info.remote())["calls"]
            ws.recall("moved query")
            assert ray.get(handle.info.remote())["calls"] == calls + 1
            # sent ahead for one query, the recall of another embeds its own
            first = handle.embed.remote(["first query"])
            assert adopt_sent_query(remote, {"query": "first query"}, (address, [first]))
            ray.get(first)
            calls = ray.get(handle.info.remote())["calls"]
            ws.recall("second query")
            assert ray.get(handle.info.remote())["calls"] == calls + 1
    finally:
        ray.kill(handle, no_restart=True)
        ray.kill(other, no_restart=True)


def test_the_ingress_sends_a_recalls_query_ahead_only_once_it_knows_the_workspaces_embedder(
    ray_session,
):
    handle, address = _hash_embedder()

    async def scenario():
        encoders = QueryEncoders()
        assert encoders.send("ws-1", {"query": "what was said"}) is None  # not learnt yet
        encoders.learn("ws-1", list(address))  # a list is taken as well
        for _ in range(600):  # the named actor is looked up off-loop
            if (sent := encoders.send("ws-1", {"query": "what was said"})) is not None:
                break
            await asyncio.sleep(0.05)
        assert sent is not None and sent[0] == address
        vector = await sent[1][0]
        assert np.allclose(vector, HashProvider().embed(["what was said"]), atol=1e-6)
        # a repeat is in the actor's cache; another workspace, or a refused body, sends nothing
        assert encoders.send("ws-1", {"query": "what was said"}) is None
        assert encoders.send("ws-2", {"query": "what was said"}) is None
        assert encoders.send("ws-1", {"query": "  "}) is None
        assert encoders.send("ws-1", {"query": "x" * (C.MAX_QUERY_CHARS + 1)}) is None
        assert encoders.send("ws-1", {"query": "another question"}) is not None
        encoders.learn("ws-1", None)  # unbound (a rebind to none)
        assert encoders.send("ws-1", {"query": "a third question"}) is None

    try:
        asyncio.run(scenario())
    finally:
        ray.kill(handle, no_restart=True)
