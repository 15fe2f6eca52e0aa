"""`minilm-int8`: the quantized MiniLM is a provider of its own. Its vectors stay close to the
float model's, its name is what the file records, a file bound to one MiniLM is never served
by the other, and a workspace moves between them only by re-embedding every entry."""

import numpy as np
import pytest

from minisphere.engine.embedding import make_provider
from minisphere.engine.workspace import Workspace
from minisphere.errors import InvalidArgument
from tests.engine.vectors.helpers import bound_model, needs_minilm, stored_vector, vec_rows

pytestmark = needs_minilm

# conversation turns, agent notes and questions, short and long
TEXTS = [
    "Hey, I finally signed up for the pottery class on Thursday evenings!",
    "My sister is moving to Lisbon next spring, so we are planning one last road trip.",
    "What did Maria say about the hiking trail near the lake?",
    "When did Jon open his dance studio?",
    "The deploy pipeline runs on GitHub Actions and publishes images to the registry.",
    "Customer prefers invoices in euros; remind finance before the quarter closes.",
    "I've been reading a lot about marine biology lately, especially coral reefs.",
    "Which books has Caroline recommended to her friends?",
    "We adopted a rescue dog named Pepper and she already knows how to sit.",
    "The database migration to Postgres 17 is blocked on the replication slot cleanup.",
    "Thanks! The concert was amazing, the drummer played a ten minute solo.",
    "How long has Melanie been practicing painting?",
    "Note: the staging cluster restarts every Sunday at 03:00 UTC for patching.",
    "I lost my job at the bakery last week but I'm hopeful about the interview on Monday, "
    "the manager seemed kind and they want someone who can start early in the morning.",
    "ok",
    "Did the team agree on the new on-call rotation?",
]
# measured: mean cosine 0.993, lowest 0.984 over 450 conversation turns and questions
MEAN_COSINE_FLOOR = 0.98
LOWEST_COSINE_FLOOR = 0.95


@pytest.fixture(scope="module")
def float_model():
    return make_provider({"provider": "minilm"})


@pytest.fixture(scope="module")
def int8_model():
    return make_provider({"provider": "minilm-int8"})


def test_int8_vectors_stay_close_to_the_float_ones(float_model, int8_model):
    assert make_provider({"provider": "minilm-int8"}) is int8_model  # one model per process
    exact, quantized = float_model.embed(TEXTS), int8_model.embed(TEXTS)
    assert quantized.shape == (len(TEXTS), 384) and quantized.dtype == np.float32
    assert np.allclose(np.linalg.norm(quantized, axis=1), 1.0, atol=1e-5)
    cosines = (exact * quantized).sum(axis=1)
    assert cosines.mean() >= MEAN_COSINE_FLOOR and cosines.min() >= LOWEST_COSINE_FLOOR, cosines
    assert not np.allclose(exact, quantized, atol=1e-4)  # a different model indeed
    # the neighbours keep their order: each question nearer its own topic than an unrelated one
    pair = int8_model.embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The stock market fell sharply on Tuesday.",
        ]
    )
    assert pair[0] @ pair[1] == pytest.approx(0.7553, abs=0.03) and pair[0] @ pair[2] < 0.2


def test_int8_provider_name_is_recorded_in_the_file(tmp_path, clock, int8_model):
    with Workspace(tmp_path / "w.db", clock=clock, embedder=int8_model) as ws:
        entry = ws.capture(TEXTS[0])["id"]
        assert bound_model(ws) == {**bound_model(ws), "provider": "minilm-l6-v2-int8", "dim": 384}
        assert np.allclose(stored_vector(ws, entry), int8_model.embed([TEXTS[0]])[0], atol=1e-6)
        assert ws.recall("pottery class")["queryUsed"]["vector"] == {
            "arm": "on",
            "provider": "minilm-l6-v2-int8",
        }


def test_file_bound_to_float_minilm_is_not_served_by_int8_vectors(
    tmp_path, clock, float_model, int8_model
):
    path = tmp_path / "w.db"
    with Workspace(path, clock=clock, embedder=float_model) as ws:
        entry = ws.capture(TEXTS[1])["id"]
        before = stored_vector(ws, entry)
    with pytest.raises(InvalidArgument, match=r"bound to minilm-l6-v2 .*not minilm-l6-v2-int8"):
        Workspace(path, clock=clock, embedder=int8_model)
    with Workspace(path, clock=clock, embedder=float_model) as ws:  # the refusal changed nothing
        assert bound_model(ws)["provider"] == "minilm-l6-v2"
        assert np.array_equal(stored_vector(ws, entry), before)
    # and the other way round
    with Workspace(tmp_path / "q.db", clock=clock, embedder=int8_model) as ws:
        ws.capture(TEXTS[2])
    with pytest.raises(InvalidArgument, match="bound to minilm-l6-v2-int8"):
        Workspace(tmp_path / "q.db", clock=clock, embedder=float_model)


def test_moving_to_int8_re_embeds_every_entry_with_progress(
    tmp_path, clock, float_model, int8_model
):
    path = tmp_path / "w.db"
    with Workspace(path, clock=clock, embedder=float_model) as ws:
        ids = [ws.capture(text)["id"] for text in TEXTS[:7]]
        seen = []
        report = ws.enable_vectors(
            int8_model,
            replace=True,
            batch_size=3,
            progress_callback=lambda done, total: seen.append((done, total)),
        )
        assert report["embedded"] == 7 and report["total"] == 7
        assert seen == [(0, 7), (3, 7), (6, 7), (7, 7)]
        assert bound_model(ws)["provider"] == "minilm-l6-v2-int8" and vec_rows(ws) == 7
        expected = int8_model.embed(TEXTS[:7])
        for entry, vector in zip(ids, expected):
            assert np.allclose(stored_vector(ws, entry), vector, atol=1e-6)
        later = ws.capture(TEXTS[8])["id"]  # new writes embed with int8 too
        assert np.allclose(stored_vector(ws, later), int8_model.embed([TEXTS[8]])[0], atol=1e-6)
        assert ws.recall("pottery class")["queryUsed"]["vector"]["provider"] == "minilm-l6-v2-int8"
    with pytest.raises(InvalidArgument, match="bound to minilm-l6-v2-int8"):
        Workspace(path, clock=clock, embedder=float_model)  # the old model no longer fits
    with Workspace(path, clock=clock, embedder=int8_model) as ws:
        assert vec_rows(ws) == 8


def test_write_embedded_before_a_rebind_stores_no_vector_of_the_old_model(
    tmp_path, clock, float_model, int8_model
):
    with Workspace(tmp_path / "w.db", clock=clock, embedder=float_model) as ws:
        ws.capture(TEXTS[3])
        call = [("capture", {"content": TEXTS[4]})]
        prepared = ws.prepare(call)  # embedded by the float model, not yet written
        ws.enable_vectors(int8_model, replace=True)
        ((ok, result),) = ws.run_batch(call, prepared=prepared)
        assert ok
        # the float vector was dropped; the backfill after the commit embedded it with int8
        assert ws.vectors.wait_for_backfills(30)
        assert np.allclose(
            stored_vector(ws, result["id"]), int8_model.embed([TEXTS[4]])[0], atol=1e-6
        )
        assert vec_rows(ws) == 2


def test_int8_vector_of_a_text_does_not_depend_on_its_batch(int8_model):
    # the quantizer scales activations per forward pass: a batch must not move a text's vector,
    # or a stored entry would differ from the same text asked as a query
    alone = np.stack([int8_model.embed([text])[0] for text in TEXTS[:5]])
    assert np.array_equal(int8_model.embed(TEXTS[:5]), alone)
