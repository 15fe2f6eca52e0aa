"""One write path on a vector-bound workspace: its writes are embedded before they are queued
and committed by the group-commit writer in shared batches; its recall runs on the read pool
and answers while the writer holds a transaction open."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import Future

from minisphere.engine.embedding import make_provider
from minisphere.hosting.host import WorkspaceHost
from tests.engine.vectors.helpers import without_vector
from tests.support.hosts import BY_HAND

CONCURRENT_CAPTURES = 60


class CountingProvider:
    """The deterministic hash provider, counting calls and the threads they run on."""

    def __init__(self):
        self.inner = make_provider({"provider": "hash", "dim": 32})
        self.name, self.dim = self.inner.name, self.inner.dim
        self.threads: list[str] = []

    def embed(self, texts):
        self.threads.append(threading.current_thread().name)
        return self.inner.embed(texts)


def bound_host(tmp_path, provider) -> WorkspaceHost:
    return WorkspaceHost(
        "ws-bound", tmp_path / "ws-bound" / "workspace.db", embedder=provider, tuning=BY_HAND
    )


def prepared_write(host, method, body) -> Future:
    """What the workspace actor does for a write: prepare (embed) on the read pool, then queue."""
    answer = Future()

    def done(reply):
        if reply.ok:
            answer.set_result((reply.value, reply.timings))
        else:
            answer.set_exception(reply.error)

    def queue(prepared: Future):
        host.calls.submit_write(method, body, done, prepared.result())

    host.calls.prepare_write(method, body).add_done_callback(queue)
    return answer


def test_bound_captures_share_group_commits_and_never_embed_on_the_writer(tmp_path):
    provider = CountingProvider()
    host = bound_host(tmp_path, provider)
    try:
        provider.threads.clear()  # opening the file embedded nothing
        # distinct words: semantic dedup must not block any of them
        answers = [
            prepared_write(
                host, "capture", {"content": f"{uuid.uuid4().hex} remembered {uuid.uuid4().hex}"}
            )
            for _ in range(CONCURRENT_CAPTURES)
        ]
        results = [a.result(timeout=60) for a in answers]
        assert all(r["outcome"] == "stored" for r, _ in results)
        assert host.writer.writes == CONCURRENT_CAPTURES
        assert host.writer.batches < CONCURRENT_CAPTURES and host.writer.largest_batch > 1
        assert max(t["batch"] for _, t in results) > 1
        assert provider.threads and all(t.startswith("reader") for t in provider.threads)
        assert without_vector(host.workspace) == 0  # every vector was written
    finally:
        host.close()


def test_bound_recall_answers_while_the_writer_holds_a_transaction(tmp_path):
    provider = CountingProvider()
    host = bound_host(tmp_path, provider)
    holding, release = threading.Event(), threading.Event()

    def hold_the_writer():
        with host.workspace.transaction() as conn:  # what a large batch does while it commits
            conn.execute("UPDATE entries SET recall_count = recall_count")
            holding.set()
            release.wait(30)

    try:
        target = prepared_write(
            host, "capture", {"content": "the archive bucket keeps nightly parquet exports"}
        ).result(30)[0]
        writer = threading.Thread(target=hold_the_writer)
        writer.start()
        assert holding.wait(10)
        result, _ = host.calls.submit_read("recall", {"query": "nightly parquet exports"}).result(
            10
        )
        assert not release.is_set()  # answered while the writer held it
        assert result["items"][0]["id"] == target["id"]
        assert result["queryUsed"]["vector"]["arm"] == "on"
        release.set()
        writer.join(10)
    finally:
        release.set()
        host.close()
