"""Optional embedding providers (the vector binding). Imported only by bound workspaces.

make_provider({"provider": "hash"})                      deterministic, for tests
make_provider({"provider": "minilm"})                    local all-MiniLM-L6-v2 (ONNX Runtime)
make_provider({"provider": "minilm-int8"})               the same, weights quantized to int8
make_provider({"provider": "http", "url": ..., "model": ..., "dim": 1536,
               "apiKey": ... | "apiKeyEnv": "OPENAI_API_KEY"})
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from minisphere.engine.embedding.base import EmbeddingError, EmbeddingProvider, l2_normalize

PROVIDERS = ("hash", "minilm", "minilm-int8", "http")
_LOCAL_MODELS: dict[
    str, EmbeddingProvider
] = {}  # one model per process, however many workspaces use it
_LOCAL_MODELS_LOCK = threading.Lock()


def _local_model(kind: str, path: str | Path | None) -> EmbeddingProvider:
    with _LOCAL_MODELS_LOCK:
        if kind not in _LOCAL_MODELS:
            if kind == "minilm":
                from minisphere.engine.embedding.minilm import MiniLMProvider as Model
            else:
                from minisphere.engine.embedding.minilm_int8 import MiniLMInt8Provider as Model
            _LOCAL_MODELS[kind] = Model(path)
        return _LOCAL_MODELS[kind]


def make_provider(spec: dict[str, Any]) -> EmbeddingProvider:
    kind = spec.get("provider")
    if kind == "hash":
        from minisphere.engine.embedding.hash_provider import HASH_DIM, HashProvider

        return HashProvider(int(spec.get("dim", HASH_DIM)))
    if kind in ("minilm", "minilm-int8"):
        return _local_model(kind, spec.get("path"))
    if kind == "http":
        from minisphere.engine.embedding.http_provider import HttpProvider

        key = spec.get("apiKey") or (
            os.environ.get(spec["apiKeyEnv"]) if spec.get("apiKeyEnv") else None
        )
        try:
            return HttpProvider(
                spec["url"],
                spec["model"],
                int(spec["dim"]),
                key,
                **{k: spec[k] for k in ("batch_size", "timeout_s") if k in spec},
            )
        except KeyError as exc:
            raise EmbeddingError(f"http provider needs {exc.args[0]!r} in its spec") from None
    raise EmbeddingError(f"unknown embedding provider {kind!r}; expected one of {PROVIDERS}")


__all__ = ["PROVIDERS", "EmbeddingError", "EmbeddingProvider", "l2_normalize", "make_provider"]
