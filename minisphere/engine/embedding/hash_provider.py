"""`hash`: a deterministic provider for tests. Semantically weak, but stable everywhere.

Features: lower-cased word tokens (weight 1) and character trigrams of each word padded with
spaces (weight 0.5), each hashed (blake2b, 8 bytes) to a bucket in [0, dim) with a sign bit;
the sum is L2-normalized. Same text -> same vector on every machine and Python version; texts
sharing many words or word pieces have a high cosine.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from minisphere.engine.embedding.base import l2_normalize

HASH_DIM = 384
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    digest = int.from_bytes(
        hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little"
    )
    return digest % dim, (1.0 if (digest >> 63) & 1 else -1.0)


class HashProvider:
    def __init__(self, dim: int = HASH_DIM):
        self.dim = int(dim)
        self.name = f"hash-{self.dim}"

    def features(self, text: str) -> list[tuple[str, float]]:
        feats: list[tuple[str, float]] = []
        for word in _WORD.findall(text.lower()):
            feats.append(("w:" + word, WORD_WEIGHT))
            padded = f" {word} "
            feats += [("c:" + padded[i : i + 3], TRIGRAM_WEIGHT) for i in range(len(padded) - 2)]
        return feats

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self.features(text):
                index, sign = _bucket(feature, self.dim)
                out[row, index] += sign * weight
        return l2_normalize(out)
