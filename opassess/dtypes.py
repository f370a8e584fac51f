"""Tensor dtypes as the trace records them ("float32", "bfloat16", ...): element sizes and the floating ones.

One table for every stage that sizes tensors from shapes (the findings' compute weight, the scores' size proxy).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from .records import OpNode

# Bytes per element; a dtype not listed counts as 4 bytes (float32).
DTYPE_BYTES = {"float64": 8, "int64": 8, "complex64": 8, "complex128": 16, "float32": 4, "int32": 4, "float16": 2,
               "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1}
DEFAULT_BYTES = 4
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


def element_bytes(dtype: str | None) -> int:
    """Bytes per element of `dtype` (4 when it is unknown or not recorded)."""
    return DTYPE_BYTES.get(dtype or "", DEFAULT_BYTES)


def numel(shape: Sequence[int] | None) -> int:
    """Elements of a tensor of `shape` (0 when the shape was not recorded)."""
    return math.prod(shape) if shape is not None else 0


def node_bytes(node: OpNode) -> int:
    """Bytes a node reads and writes, from its shapes and dtypes: (1, 4) float32 in, (1, 8) float16 out = 16 + 16."""
    return sum(numel(shape) * element_bytes(dtype)
               for shapes, dtypes in ((node.input_shapes, node.input_dtypes), (node.output_shapes, node.output_dtypes))
               for shape, dtype in zip(shapes, dtypes, strict=False))
