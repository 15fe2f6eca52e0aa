"""Embedding cache for benchmark runs: vectors of a text list stored as .npy under a directory
(outside the repo), keyed by provider name and a hash of the texts, so repeated runs of the
retrieval benchmark do not re-embed the same corpus."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np


def cached_embed(
    provider, texts: list[str], cache_dir: str | Path | None, label: str = "", chunk: int = 256
) -> tuple[np.ndarray, float]:
    """(vectors, seconds spent embedding; 0 when read from the cache)."""
    key = hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()[:16]
    path = Path(cache_dir) / f"{provider.name}-{label}-{key}.npy" if cache_dir else None
    if path is not None and path.exists():
        return np.load(path), 0.0
    started = time.perf_counter()
    parts = []
    for i in range(0, len(texts), chunk):
        parts.append(provider.embed(texts[i : i + chunk]))
        print(f"  embedded {min(i + chunk, len(texts))}/{len(texts)} {label}", flush=True)
    vectors = np.concatenate(parts) if parts else np.zeros((0, provider.dim), np.float32)
    seconds = time.perf_counter() - started
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors, seconds
