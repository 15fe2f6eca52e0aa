"""The embedding provider protocol and helpers shared by every provider.

A provider turns texts into L2-normalized float32 vectors: `embed(texts) -> (n, dim)` array.
It has a `name` (recorded in the workspace file with `dim`, so a file is never searched with
vectors of another model) and a `dim`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from minisphere.errors import EmbeddingError

__all__ = ["NORM_EPSILON", "EmbeddingError", "EmbeddingProvider", "l2_normalize"]

NORM_EPSILON = 1e-12  # vectors shorter than this stay zero instead of dividing by ~0


@runtime_checkable
class EmbeddingProvider(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row L2-normalized (a zero row for an empty text)."""
        ...


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2:
        raise EmbeddingError(f"embeddings must be a 2-d array, got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalized: np.ndarray = (matrix / np.maximum(norms, NORM_EPSILON)).astype(
        np.float32, copy=False
    )
    return normalized


def check_shape(provider_name: str, vectors: np.ndarray, count: int, dim: int) -> None:
    if vectors.shape != (count, dim):
        raise EmbeddingError(
            f"{provider_name}: expected shape ({count}, {dim}), got {vectors.shape}"
        )


def check_output(provider_name: str, vectors: np.ndarray, count: int, dim: int) -> np.ndarray:
    check_shape(provider_name, vectors, count, dim)
    if not np.isfinite(vectors).all():
        raise EmbeddingError(f"{provider_name}: embeddings contain NaN or infinity")
    return vectors
