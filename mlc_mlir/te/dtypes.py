"""The dtype rules of tensor expressions: the index type, promotion, reduction identities.

Dtype names, their MLIR types and bool are :mod:`mlc_mlir.tensor_types`.
"""

from __future__ import annotations

import math

from ..tensor_types import BOOL, bits, int_range, is_float

__all__ = ["INDEX_DTYPE", "promote", "reduce_identity", "storage_dtype"]

INDEX_DTYPE = "int32"
"""The type of compute axes, reduce axes and symbolic sizes inside expressions (as TVM)."""


def promote(a: str, b: str) -> str:
    """The common type of a binary operation: the wider float, else the wider integer."""
    if a == b:
        return a
    if is_float(a) != is_float(b):
        return a if is_float(a) else b
    return a if bits(a) >= bits(b) else b


def reduce_identity(combiner: str, dtype: str) -> int | float:
    """Initial value of a reduction: 0 for sum, the lowest value for max, the highest for min."""
    if combiner == "sum":
        return 0.0 if is_float(dtype) else 0
    lo, hi = (-math.inf, math.inf) if is_float(dtype) else int_range(dtype)
    return lo if combiner == "max" else hi


def storage_dtype(dtype: str) -> str:
    """The element type of a tensor of ``dtype``: ``int8`` for ``bool`` (one byte per element,
    as NumPy's bool arrays), else ``dtype``. In registers a bool is ``i1``."""
    return "int8" if dtype == BOOL else dtype
