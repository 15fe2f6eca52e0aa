"""all-MiniLM-L6-v2 written as an ONNX graph whose constants are the checkpoint's own arrays.

The model is BERT: 6 layers, hidden size 384, 12 attention heads, GELU (the exact, erf form).
The graph takes word-piece ids, position ids and an additive attention bias (0 for a real
token, a large negative number for padding, shaped (batch, 1, 1, length)) and returns the last
hidden states; the caller pools them. Built at load time from the safetensors file, so there is
no exported model file to keep in step with the weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np

LAYERS = 6
HIDDEN = 384
HEADS = 12
HEAD_DIM = HIDDEN // HEADS
LAYER_NORM_EPS = 1e-12
OPSET = 17  # the first with LayerNormalization as a standard operator


class _GraphWriter:
    """Appends nodes and constants, naming each output uniquely."""

    def __init__(self, weights: dict[str, np.ndarray]):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.weights = weights
        self.nodes: list[Any] = []  # onnx NodeProtos
        self.constants: list[Any] = []  # onnx TensorProtos
        self._const_names: set[str] = set()
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        """The constant `name`; a name asked for again is the same constant (the six layers
        share their shapes and scalars), so give each distinct value its own name."""
        if name not in self._const_names:
            self._const_names.add(name)
            self.constants.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        value = self.weights[key]
        return self.const(key, value.T if transpose else value)

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{kind.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def dense(self, x: str, prefix: str) -> str:
        return self.op(
            "Add",
            self.op("MatMul", x, self.weight(prefix + ".weight", transpose=True)),
            self.weight(prefix + ".bias"),
        )

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.weight(prefix + ".weight"),
            self.weight(prefix + ".bias"),
            axis=-1,
            epsilon=LAYER_NORM_EPS,
        )


def _attention(g: _GraphWriter, x: str, bias: str, prefix: str) -> str:
    heads_shape = g.const("heads_shape", np.array([0, 0, HEADS, HEAD_DIM], dtype=np.int64))
    scale = g.const("attention_scale", np.array(1.0 / np.sqrt(HEAD_DIM), dtype=np.float32))

    def split(name: str, perm: list[int]) -> str:  # (b, l, h) -> heads, in `perm` order
        return g.op(
            "Transpose",
            g.op("Reshape", g.dense(x, prefix + "attention.self." + name), heads_shape),
            perm=perm,
        )

    q = split("query", [0, 2, 1, 3])  # (b, heads, l, d)
    k = split("key", [0, 2, 3, 1])  # (b, heads, d, l)
    v = split("value", [0, 2, 1, 3])
    logits = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
    context = g.op("MatMul", g.op("Softmax", logits, axis=-1), v)
    merged = g.op(
        "Reshape",
        g.op("Transpose", context, perm=[0, 2, 1, 3]),
        g.const("merged_shape", np.array([0, 0, HIDDEN], dtype=np.int64)),
    )
    return g.layer_norm(
        g.op("Add", g.dense(merged, prefix + "attention.output.dense"), x),
        prefix + "attention.output.LayerNorm",
    )


def _feed_forward(g: _GraphWriter, x: str, prefix: str) -> str:
    inner = g.dense(x, prefix + "intermediate.dense")
    root_half = g.const("root_half", np.array(1.0 / np.sqrt(2.0), dtype=np.float32))
    one = g.const("one", np.array(1.0, dtype=np.float32))
    half = g.const("half", np.array(0.5, dtype=np.float32))
    erf = g.op("Erf", g.op("Mul", inner, root_half))  # GELU(x) = x/2 (1 + erf(x / sqrt 2))
    gelu = g.op("Mul", g.op("Mul", inner, half), g.op("Add", erf, one))
    return g.layer_norm(
        g.op("Add", g.dense(gelu, prefix + "output.dense"), x), prefix + "output.LayerNorm"
    )


def bert_graph(weights: dict[str, np.ndarray]) -> bytes:
    """The serialized ONNX model: (input_ids, position_ids, attention_bias) -> hidden states."""
    from onnx import TensorProto

    g = _GraphWriter(weights)
    token_type = weights["embeddings.token_type_embeddings.weight"][0]
    x = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids"),
            g.op("Gather", g.weight("embeddings.position_embeddings.weight"), "position_ids"),
        ),
        g.const("embeddings.token_type", token_type),
    )
    x = g.layer_norm(x, "embeddings.LayerNorm")
    for i in range(LAYERS):
        prefix = f"encoder.layer.{i}."
        x = _feed_forward(g, _attention(g, x, "attention_bias", prefix), prefix)
    h = g.helper
    graph = h.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            h.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            h.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "length"]),
            h.make_tensor_value_info(
                "attention_bias", TensorProto.FLOAT, ["batch", 1, 1, "length"]
            ),
        ],
        [h.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "length", HIDDEN])],
        g.constants,
    )
    serialized: bytes = h.make_model(
        graph, opset_imports=[h.make_opsetid("", OPSET)]
    ).SerializeToString()
    return serialized
