"""Data types of tensor expressions: names, promotion rules and their MLIR types."""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from ..errors import TEError

__all__ = ["TENSOR_DTYPES", "BOOL", "INDEX_DTYPE", "normalize_dtype", "is_float", "is_int",
           "bits", "promote", "int_range", "mlir_type", "reduce_identity"]

_FLOATS = {"float16": 16, "float32": 32, "float64": 64}
_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
TENSOR_DTYPES = tuple(_FLOATS) + tuple(_INTS)
"""Element types a tensor (placeholder or compute) may have."""
BOOL = "bool"
"""The type of comparisons and conditions; not a tensor element type."""
INDEX_DTYPE = "int32"
"""The type of compute axes, reduce axes and symbolic sizes inside expressions (as TVM)."""


def normalize_dtype(dtype: object, *, what: str = "dtype", allow_bool: bool = False) -> str:
    """Return the canonical name of ``dtype`` (a name such as ``"float32"`` or a NumPy dtype).

    Raises:
        TEError: ``dtype`` is not one of :data:`TENSOR_DTYPES` (or ``"bool"`` when allowed).
    """
    name = dtype
    if not isinstance(dtype, str):
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    allowed = TENSOR_DTYPES + ((BOOL,) if allow_bool else ())
    if name not in allowed:
        raise TEError(f"unknown {what} {dtype!r}; supported: {', '.join(allowed)}")
    return name


def is_float(dtype: str) -> bool:
    """Whether ``dtype`` is a floating-point type."""
    return dtype in _FLOATS


def is_int(dtype: str) -> bool:
    """Whether ``dtype`` is a signed integer type (``bool`` is not)."""
    return dtype in _INTS


def bits(dtype: str) -> int:
    """Width in bits of ``dtype``."""
    return 1 if dtype == BOOL else {**_FLOATS, **_INTS}[dtype]


def promote(a: str, b: str) -> str:
    """The common type of a binary operation: the wider float, else the wider integer."""
    if a == b:
        return a
    if is_float(a) != is_float(b):
        return a if is_float(a) else b
    return a if bits(a) >= bits(b) else b


def int_range(dtype: str) -> tuple[int, int]:
    """Smallest and largest value of the integer type ``dtype``."""
    n = bits(dtype)
    return -(1 << (n - 1)), (1 << (n - 1)) - 1


def mlir_type(dtype: str) -> ir.Type:
    """The MLIR element type of ``dtype`` (call inside the shared context)."""
    if dtype == BOOL:
        return ir.IntegerType.get_signless(1)
    if is_int(dtype):
        return ir.IntegerType.get_signless(bits(dtype))
    return {"float16": ir.F16Type, "float32": ir.F32Type, "float64": ir.F64Type}[dtype].get()


def reduce_identity(combiner: str, dtype: str) -> int | float:
    """Initial value of a reduction: 0 for sum, the lowest value for max, the highest for min."""
    if combiner == "sum":
        return 0.0 if is_float(dtype) else 0
    lo, hi = (-math.inf, math.inf) if is_float(dtype) else int_range(dtype)
    return lo if combiner == "max" else hi
