"""A bound recall's query embedding: started before the lexical stages, waited for only by the
vector arm, and a failure of it leaves the recall lexical with the reason in the answer."""

import threading
import time
from concurrent.futures import Future

import numpy as np

from minisphere.engine.workspace import Workspace
from tests.engine.vectors.helpers import ChosenVectors, at_cosine

QUERY = "how do we ship code"
TARGET = "Releases go out through the deploy pipeline"  # shares no word with QUERY
LEXICAL = "We ship code reviews on Mondays"  # shares words with QUERY
EMBED_DELAY_S = 0.15


class SubmittingVectors(ChosenVectors):
    """A provider like the remote embedder: `submit` sends the texts and returns a Future that
    another thread completes after `delay_s` (or fails). Query texts must go through `submit`."""

    def __init__(
        self,
        table,
        delay_s: float = EMBED_DELAY_S,
        failure: Exception | None = None,
        refuse: Exception | None = None,
    ):
        super().__init__(table)
        self.delay_s, self.failure, self.refuse = delay_s, failure, refuse
        self.submitted: list[list[str]] = []

    def submit(self, texts):
        if self.refuse is not None:
            raise self.refuse
        self.submitted.append(list(texts))
        future = Future()

        def complete():
            if self.failure is not None:
                future.set_exception(self.failure)
            else:
                future.set_result(ChosenVectors.embed(self, texts))

        threading.Timer(self.delay_s, complete).start()
        return future


def _bound(tmp_path, clock, provider):
    ws = Workspace(tmp_path / "q.db", clock=clock, synchronous="NORMAL", embedder=provider)
    target = ws.capture(TARGET)["id"]
    lexical = ws.capture(LEXICAL)["id"]
    return ws, target, lexical


def test_a_bound_recall_gets_its_query_vector_from_the_embedding_it_started(tmp_path, clock):
    provider = SubmittingVectors({QUERY: at_cosine(1.0), TARGET: at_cosine(0.7)})
    ws, target, lexical = _bound(tmp_path, clock, provider)
    started = time.perf_counter()
    result = ws.recall(QUERY)
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert provider.submitted == [[QUERY]]
    ids = [item["id"] for item in result["items"]]
    assert target in ids and lexical in ids  # the vector arm found what no keyword could
    by_id = {item["id"]: item for item in result["items"]}
    assert by_id[target]["breakdown"]["vector"]["rank"] == 1
    assert result["queryUsed"]["vector"] == {"arm": "on", "provider": "chosen-8"}
    timings = result["timings"]
    # the wait is booked as its own part, not as the KNN's; the embedding's latency beside it
    assert EMBED_DELAY_S * 1000 <= timings["queryEmbedMs"] <= elapsed_ms
    assert timings["embedWaitMs"] > 0 and timings["vectorMs"] < EMBED_DELAY_S * 1000
    ws.close()


def test_a_bound_recall_runs_its_keyword_arm_before_its_query_vector_is_there(tmp_path, clock):
    """The embedding is started before the lexical stages and waited for after them: here the
    query vector only arrives once the keyword arm has run its full-text search. A recall that
    waited for the vector first would sit out the whole fallback delay."""
    fallback_s = 3.0
    provider = SubmittingVectors(
        {QUERY: at_cosine(1.0), TARGET: at_cosine(0.7)}, delay_s=fallback_s
    )
    ws, target, _ = _bound(tmp_path, clock, provider)
    pending: list[Future] = []
    matched = threading.Event()
    release_lock = threading.Lock()
    original_submit = provider.submit

    def release(future: Future, vector) -> None:
        with release_lock:
            if not future.done():
                future.set_result(vector)

    def submit(texts):  # sent from its own thread: it may come before or after the search
        future = Future()
        pending.append(future)
        if matched.is_set():
            release(future, ChosenVectors.embed(provider, [QUERY]))
        original_submit(texts).add_done_callback(lambda done: release(future, done.result()))
        return future

    provider.submit = submit

    def on_statement(sql: str) -> None:  # the keyword arm's FTS5 search releases the vector
        if " MATCH " in sql:
            matched.set()
            if pending:
                release(pending[0], ChosenVectors.embed(provider, [QUERY]))

    ws.conn.set_trace_callback(on_statement)
    started = time.perf_counter()
    result = ws.recall(QUERY)
    assert time.perf_counter() - started < fallback_s / 2
    assert target in [item["id"] for item in result["items"]]
    assert result["queryUsed"]["vector"]["arm"] == "on"
    ws.close()


def _recalled_without_vectors(tmp_path, clock, why: str, error: Exception):
    """A recall whose query embedding fails (`why`: "failure") or cannot be asked for
    ("refuse"): it must answer the lexical order alone, saying why."""
    provider = SubmittingVectors({QUERY: at_cosine(1.0), TARGET: at_cosine(0.7)})
    ws, _, lexical = _bound(tmp_path, clock, provider)
    setattr(provider, why, error)
    result = ws.recall(QUERY)
    assert [item["id"] for item in result["items"]] == [lexical]
    assert "vector" not in result["items"][0]["breakdown"]
    state = result["queryUsed"]["vector"]
    assert state["arm"] == "off" and str(error) in state["reason"]
    return ws, provider


def test_a_failed_query_embedding_leaves_the_recall_lexical_with_the_reason(tmp_path, clock):
    ws, provider = _recalled_without_vectors(
        tmp_path, clock, "failure", RuntimeError("embedding service down")
    )
    # the back-off: the next recall does not ask the failing embedder again
    before = len(provider.submitted)
    assert ws.recall(QUERY + " again")["queryUsed"]["vector"]["arm"] == "off"
    assert len(provider.submitted) == before
    ws.close()


def test_an_embedder_that_cannot_be_asked_leaves_the_recall_lexical(tmp_path, clock):
    ws, _ = _recalled_without_vectors(
        tmp_path, clock, "refuse", ConnectionError("embedder actor is gone")
    )
    ws.close()


def test_a_query_embedding_of_the_wrong_shape_is_a_failure_not_a_crash(tmp_path, clock):
    provider = SubmittingVectors({QUERY: at_cosine(1.0)})
    ws, _, lexical = _bound(tmp_path, clock, provider)
    provider.submit = lambda texts: _done(np.zeros((1, 3), dtype=np.float32))
    result = ws.recall(QUERY)
    assert [item["id"] for item in result["items"]] == [lexical]
    assert "shape" in result["queryUsed"]["vector"]["reason"]
    ws.close()


def test_a_recall_without_search_terms_still_reports_the_vector_arm(tmp_path, clock):
    """A browse of a period never reaches the vector arm; the answer still says the binding's
    arm is on (the started embedding is waited for, not abandoned)."""
    provider = SubmittingVectors({})
    ws, _, _ = _bound(tmp_path, clock, provider)
    result = ws.recall("what happened yesterday?")
    assert result["queryUsed"]["terms"] == []
    assert result["queryUsed"]["vector"] == {"arm": "on", "provider": "chosen-8"}
    ws.close()


def test_a_provider_without_submit_embeds_the_query_on_a_thread_beside_the_recall(tmp_path, clock):
    threads = []

    class Local(ChosenVectors):
        def embed(self, texts):
            if texts == [QUERY]:
                threads.append(threading.current_thread().name)
            return super().embed(texts)

    ws, target, _ = _bound(tmp_path, clock, Local({QUERY: at_cosine(1.0), TARGET: at_cosine(0.7)}))
    result = ws.recall(QUERY)
    assert threads and threads[0].startswith("query-embed")
    assert target in [item["id"] for item in result["items"]]
    ws.close()


def test_a_cached_query_vector_is_not_embedded_again(tmp_path, clock):
    provider = SubmittingVectors({QUERY: at_cosine(1.0), TARGET: at_cosine(0.7)}, delay_s=0.0)
    ws, _target, _ = _bound(tmp_path, clock, provider)
    first = ws.recall(QUERY)
    second = ws.recall(QUERY)
    assert provider.submitted == [[QUERY]]
    assert "queryEmbedMs" not in second["timings"]
    assert [i["id"] for i in first["items"]] == [i["id"] for i in second["items"]]
    ws.close()


def _done(value) -> Future:
    future = Future()
    future.set_result(value)
    return future


def test_a_recall_started_on_arrival_is_embedded_once_from_that_start(tmp_path, clock):
    """A host starts a bound recall's query embedding when the call arrives (ReadPool.start),
    before the read waits for a thread: the read then uses that embedding, never a second."""
    from minisphere.engine.hooks import NOT_PREPARED
    from minisphere.hosting.read_pool import ReadPool

    provider = SubmittingVectors({QUERY: at_cosine(1.0), TARGET: at_cosine(0.7)})
    ws, target, _ = _bound(tmp_path, clock, provider)
    reader = ReadPool(ws.path, clock=clock, hooks=ws.hooks)
    try:
        assert reader.start("getCount", {}) is NOT_PREPARED
        assert reader.start("recall", {"query": QUERY, "topK": 0}) is NOT_PREPARED  # invalid
        prepared = reader.start("recall", {"query": QUERY})
        deadline = time.monotonic() + 30  # sent on its own, before any reader thread
        while not provider.submitted and time.monotonic() < deadline:
            time.sleep(0.005)
        assert provider.submitted == [[QUERY]]
        result, _ = reader.submit("recall", {"query": QUERY}, prepared).result()
    finally:
        reader.close()
        ws.close()
    assert provider.submitted == [[QUERY]]
    assert result["queryUsed"]["vector"] == {"arm": "on", "provider": "chosen-8"}
    by_id = {item["id"]: item for item in result["items"]}
    assert by_id[target]["breakdown"]["vector"]["rank"] == 1
