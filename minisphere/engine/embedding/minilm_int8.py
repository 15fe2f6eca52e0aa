"""`minilm-int8`: the `minilm` graph with its weights quantized to int8 by ONNX Runtime.

The same all-MiniLM-L6-v2 graph, passed through ONNX Runtime's dynamic quantization: weights
stored as int8 (one scale per output channel), activations quantized per call. A query embeds
faster and the vectors stay close to the float ones, but they are not the same vectors: the
provider has its own name, so a workspace bound to `minilm` is never searched with these, and
moves to this provider only by re-embedding every entry.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from minisphere.engine.embedding.base import EmbeddingError
from minisphere.engine.embedding.minilm import EXTRA_INSTALL, MiniLMProvider

# one scale per output channel: one per matrix drifts measurably further from the float vectors
PER_CHANNEL = True
# One text per forward pass: the activations' int8 scale is taken over the whole batch, so in a
# batch a text's vector would depend on its batch-mates, and a stored entry would not match the
# same text asked as a query.
INT8_BATCH_SIZE = 1
_PREPROCESS_HINT = "Please consider to run pre-processing before quantization"


def _without_preprocess_hint(record: logging.LogRecord) -> bool:
    """The quantizer's advice to run shape inference first is for convolution models."""
    return not str(record.msg).startswith(_PREPROCESS_HINT)


def quantize_int8(model: bytes) -> bytes:
    """The serialized model with int8 weights (ONNX Runtime's dynamic quantization)."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbeddingError(
            f"the minilm-int8 provider needs the optional vector extra: {EXTRA_INSTALL}"
        ) from exc
    root_logger = logging.getLogger()
    root_logger.addFilter(_without_preprocess_hint)
    # quantized at load, through a temporary file (the quantizer only writes files): about two
    # seconds once per process, and no cached model that could outlive an onnxruntime upgrade
    try:
        with tempfile.TemporaryDirectory(prefix="minilm-int8-") as tmp:
            out = Path(tmp) / "model-int8.onnx"
            quantize_dynamic(
                onnx.load_from_string(model),
                out,
                per_channel=PER_CHANNEL,
                weight_type=QuantType.QInt8,
            )
            return out.read_bytes()
    finally:
        root_logger.removeFilter(_without_preprocess_hint)


class MiniLMInt8Provider(MiniLMProvider):
    name = "minilm-l6-v2-int8"

    def __init__(self, path: str | Path | None = None, batch_size: int = INT8_BATCH_SIZE):
        super().__init__(path, batch_size)

    def model(self, root: Path) -> bytes:
        return quantize_int8(super().model(root))
