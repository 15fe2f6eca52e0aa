"""Providers: hash (deterministic), http (real HTTP on loopback), minilm (if installed)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np
import pytest

from minisphere.engine.embedding import EmbeddingError, make_provider
from minisphere.engine.embedding.hash_provider import HashProvider
from minisphere.engine.workspace import Workspace
from tests.engine.vectors.helpers import needs_minilm


def test_vectors_hash_provider_is_deterministic_and_normalized():
    a, b = HashProvider(), HashProvider()
    texts = [
        "Deploys run on Fridays",
        "deploys run on fridays!",
        "Completely different words here",
        "",
    ]
    va, vb = a.embed(texts), b.embed(texts)
    assert va.dtype == np.float32 and va.shape == (4, 384)
    assert np.array_equal(va, vb)
    assert np.allclose(np.linalg.norm(va[:3], axis=1), 1.0, atol=1e-6)
    assert not va[3].any()  # empty text: zero vector
    assert va[0] @ va[1] > 0.99 and va[0] @ va[2] < 0.5


class _Embeddings(BaseHTTPRequestHandler):
    requests: ClassVar[list] = []
    delay_s = 0.0
    status = 200

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        time.sleep(type(self).delay_s)
        if type(self).status != 200:
            self.send_response(type(self).status)
            self.end_headers()
            self.wfile.write(b'{"error": "nope"}')
            return
        vectors = HashProvider(16).embed(body["input"]) * 3.0  # not normalized on purpose
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in reversed(list(enumerate(vectors)))
        ]  # out of order on purpose
        payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Embeddings.requests, _Embeddings.delay_s, _Embeddings.status = [], 0.0, 200
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_vectors_http_provider_batches_and_normalizes(server, monkeypatch):
    monkeypatch.setenv("TEST_EMBED_KEY", "sekret")
    provider = make_provider(
        {
            "provider": "http",
            "url": server,
            "model": "tiny-embed",
            "dim": 16,
            "apiKeyEnv": "TEST_EMBED_KEY",
            "batch_size": 2,
        }
    )
    texts = ["one text", "two text", "three", "four", "five"]
    vectors = provider.embed(texts)
    assert vectors.shape == (5, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert np.allclose(vectors, HashProvider(16).embed(texts), atol=1e-6)  # order restored
    assert [len(r["body"]["input"]) for r in _Embeddings.requests] == [2, 2, 1]
    assert {r["path"] for r in _Embeddings.requests} == {"/v1/embeddings"}
    assert {r["auth"] for r in _Embeddings.requests} == {"Bearer sekret"}
    assert provider.name == "http:tiny-embed" and provider.dim == 16


def test_vectors_http_provider_errors_and_timeouts(server):
    provider = make_provider(
        {"provider": "http", "url": server, "model": "m", "dim": 16, "timeout_s": 0.3}
    )
    _Embeddings.status = 500
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        provider.embed(["x"])
    _Embeddings.status, _Embeddings.delay_s = 200, 1.0
    with pytest.raises(EmbeddingError, match="failed"):
        provider.embed(["x"])
    wrong_dim = make_provider({"provider": "http", "url": server, "model": "m", "dim": 32})
    _Embeddings.delay_s = 0.0
    with pytest.raises(EmbeddingError, match="expected shape"):
        wrong_dim.embed(["x"])


def test_vectors_http_provider_drives_a_workspace(server, tmp_path, clock):
    provider = make_provider({"provider": "http", "url": server, "model": "m", "dim": 16})
    with Workspace(tmp_path / "h.db", clock=clock, embedder=provider) as ws:
        entry = ws.capture("remote embedded entry about invoices")["id"]
        items = ws.recall("invoices")["items"]
        assert items[0]["id"] == entry and items[0]["breakdown"]["vector"]["rank"] == 1


def test_vectors_unknown_provider_is_refused():
    with pytest.raises(EmbeddingError, match="unknown embedding provider"):
        make_provider({"provider": "word2vec"})
    with pytest.raises(EmbeddingError, match="needs 'url'"):
        make_provider({"provider": "http", "model": "m", "dim": 3})


@needs_minilm
def test_vectors_minilm_matches_sentence_transformers_similarity():
    provider = make_provider({"provider": "minilm"})
    assert make_provider({"provider": "minilm"}) is provider  # one model per process
    vectors = provider.embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The stock market fell sharply on Tuesday.",
            "",
        ]
    )
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # sentence-transformers' own figure for this pair with all-MiniLM-L6-v2 is 0.7553
    assert vectors[0] @ vectors[1] == pytest.approx(0.7553, abs=0.005)
    assert vectors[0] @ vectors[2] < 0.2


@needs_minilm
def test_vectors_minilm_padding_in_a_batch_does_not_change_a_short_text():
    provider = make_provider({"provider": "minilm"})
    short = "Caroline went to the adoption agency on Friday."
    alone = provider.embed([short])[0]
    # Batched beside a long text, the short one is padded to its length: the attention bias must
    # hide the padding from every layer, or the pooled vector drifts.
    padded = provider.embed([short, "a long rambling note about the lake and the weather " * 12])[0]
    assert np.abs(alone - padded).max() < 1e-5
