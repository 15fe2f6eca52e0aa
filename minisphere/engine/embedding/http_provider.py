"""`http`: any OpenAI-compatible `POST {url}/embeddings` endpoint.

Request `{"model": ..., "input": [texts]}` with `Authorization: Bearer <key>` when a key is set;
response `{"data": [{"index": i, "embedding": [...]}, ...]}`. Texts go in batches of
`batch_size`; each request has `timeout_s`. Rows are re-normalized locally (some servers do
not normalize). Nothing is retried silently: a failure raises EmbeddingError.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np

from minisphere.engine.embedding.base import EmbeddingError, check_output, l2_normalize

HTTP_BATCH_SIZE = 64  # texts per request
HTTP_TIMEOUT_S = 30.0  # per request (connect + read)


class HttpProvider:
    def __init__(
        self,
        url: str,
        model: str,
        dim: int,
        api_key: str | None = None,
        batch_size: int = HTTP_BATCH_SIZE,
        timeout_s: float = HTTP_TIMEOUT_S,
    ):
        self.url = url.rstrip("/")
        self.endpoint = self.url if self.url.endswith("/embeddings") else self.url + "/embeddings"
        self.model = model
        self.dim = int(dim)
        self.name = f"http:{model}"
        self.batch_size = max(1, int(batch_size))
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.timeout_s = float(timeout_s)

    def _request(self, texts: list[str]) -> np.ndarray:
        # stdlib HTTP: the engine carries no HTTP client library of its own
        request = urllib.request.Request(
            self.endpoint,
            method="POST",
            headers=self._headers,
            data=json.dumps({"model": self.model, "input": texts}).encode("utf-8"),
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read()[:200].decode("utf-8", "replace")
            raise EmbeddingError(f"{self.name}: HTTP {exc.code}: {body}") from exc
        except (urllib.error.URLError, OSError) as exc:  # refused, timed out, reset
            raise EmbeddingError(f"{self.name}: request to {self.endpoint} failed: {exc}") from exc
        try:
            data = sorted(json.loads(payload)["data"], key=lambda item: item["index"])
            matrix = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"{self.name}: malformed response: {exc}") from exc
        return check_output(self.name, matrix.reshape(len(data), -1), len(texts), self.dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        return l2_normalize(np.concatenate(parts))
