"""Tensor graph ops (``mlc.graph.op``, the course's ``relax.op``): comparisons and masks,
elementwise math, reductions, indexing, slicing and joining, creation and casts.

Binary ops broadcast as NumPy does (symbolic dimensions included); a Python number in
place of a tensor becomes a 0-d constant of the other operand's dtype. Attributes are
Python ints, floats, bools, strings and tuples of ints (``axis=None`` is left out).
Shape rules in :mod:`.infer_tensor`, legalizations in :mod:`mlc_mlir.graph.legalize.tensor_ops`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import GraphError
from ...tensor_types import normalize_dtype, normalize_shape
from .expr import Call, Expr
from .op_base import _call, _expr

__all__ = [
    # comparisons and masks
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_not", "logical_and", "logical_or", "bitwise_and", "bitwise_or", "where",
    # elementwise math
    "power", "maximum", "minimum", "exp", "log", "sqrt", "rsqrt", "erf", "negative", "abs",
    "floor", "ceil", "sin", "cos", "clip", "astype",
    # creation
    "full_like", "zeros_like", "ones_like",
    # reductions
    "sum", "mean", "max", "min", "prod", "any", "all", "cumsum",
]


# -- comparisons and masks --------------------------------------------------------------------

def equal(x1: Any, x2: Any) -> Call:
    """``x1 == x2`` elementwise with broadcasting; a bool tensor (``relax.op.equal``)."""
    return _call("equal", [x1, x2])


def not_equal(x1: Any, x2: Any) -> Call:
    """``x1 != x2`` elementwise with broadcasting; a bool tensor."""
    return _call("not_equal", [x1, x2])


def less(x1: Any, x2: Any) -> Call:
    """``x1 < x2`` elementwise with broadcasting; a bool tensor."""
    return _call("less", [x1, x2])


def less_equal(x1: Any, x2: Any) -> Call:
    """``x1 <= x2`` elementwise with broadcasting; a bool tensor."""
    return _call("less_equal", [x1, x2])


def greater(x1: Any, x2: Any) -> Call:
    """``x1 > x2`` elementwise with broadcasting; a bool tensor."""
    return _call("greater", [x1, x2])


def greater_equal(x1: Any, x2: Any) -> Call:
    """``x1 >= x2`` elementwise with broadcasting; a bool tensor."""
    return _call("greater_equal", [x1, x2])


def logical_not(x: Any) -> Call:
    """``not x`` of a bool tensor."""
    return _call("logical_not", [x])


def logical_and(x1: Any, x2: Any) -> Call:
    """``x1 and x2`` of bool tensors, with broadcasting."""
    return _call("logical_and", [x1, x2])


def logical_or(x1: Any, x2: Any) -> Call:
    """``x1 or x2`` of bool tensors, with broadcasting."""
    return _call("logical_or", [x1, x2])


def bitwise_and(x1: Any, x2: Any) -> Call:
    """``x1 & x2`` with broadcasting: logical on bool tensors (int tensors are not supported yet)."""
    return _call("bitwise_and", [x1, x2])


def bitwise_or(x1: Any, x2: Any) -> Call:
    """``x1 | x2`` with broadcasting: logical on bool tensors (int tensors are not supported yet)."""
    return _call("bitwise_or", [x1, x2])


def where(condition: Any, x1: Any, x2: Any) -> Call:
    """``x1`` where the bool ``condition`` holds, else ``x2``; the three broadcast together."""
    like = next((a for a in (x1, x2) if isinstance(a, Expr)), None)
    args = [_expr(condition, "where", 0)] + [_expr(a, "where", i + 1, like) for i, a in enumerate((x1, x2))]
    return _call("where", args)


# -- elementwise math -------------------------------------------------------------------------

def power(x1: Any, x2: Any) -> Call:
    """``x1 ** x2`` elementwise with broadcasting (float tensors)."""
    return _call("power", [x1, x2])


def maximum(x1: Any, x2: Any) -> Call:
    """The elementwise maximum with broadcasting (NaN wins, as NumPy's)."""
    return _call("maximum", [x1, x2])


def minimum(x1: Any, x2: Any) -> Call:
    """The elementwise minimum with broadcasting (NaN wins, as NumPy's)."""
    return _call("minimum", [x1, x2])


def exp(x: Any) -> Call:
    """``e ** x`` elementwise (float)."""
    return _call("exp", [x])


def log(x: Any) -> Call:
    """Natural logarithm elementwise (float)."""
    return _call("log", [x])


def sqrt(x: Any) -> Call:
    """Square root elementwise (float)."""
    return _call("sqrt", [x])


def rsqrt(x: Any) -> Call:
    """``1 / sqrt(x)`` elementwise (float)."""
    return _call("rsqrt", [x])


def erf(x: Any) -> Call:
    """The error function elementwise (float; absolute error below 1.5e-7)."""
    return _call("erf", [x])


def negative(x: Any) -> Call:
    """``-x`` elementwise (int or float)."""
    return _call("negative", [x])


def abs(x: Any) -> Call:  # noqa: A001 - relax.op.abs
    """``|x|`` elementwise (int or float)."""
    return _call("abs", [x])


def floor(x: Any) -> Call:
    """Largest integral value not above ``x``, elementwise (float)."""
    return _call("floor", [x])


def ceil(x: Any) -> Call:
    """Smallest integral value not below ``x``, elementwise (float)."""
    return _call("ceil", [x])


def sin(x: Any) -> Call:
    """Sine elementwise (float)."""
    return _call("sin", [x])


def cos(x: Any) -> Call:
    """Cosine elementwise (float)."""
    return _call("cos", [x])


def _scalar(value: Any, op: str, what: str, *, allow_none: bool = False) -> int | float | bool | None:
    if value is None and allow_none:
        return None
    if isinstance(value, (np.generic,)):
        value = value.item()
    if not isinstance(value, (int, float)):
        raise GraphError(f"{op}: {what} must be a Python number, got {type(value).__name__} {value!r}")
    return value


def clip(x: Any, min: Any = None, max: Any = None) -> Call:  # noqa: A002 - relax.op.clip's names
    """``x`` clamped into ``[min, max]`` (``relu6``: ``clip(x, 0, 6)``); a bound of None is open.

    Raises:
        GraphError: a bound that is not a number, or ``min > max``.
    """
    lo = _scalar(min, "clip", "min", allow_none=True)
    hi = _scalar(max, "clip", "max", allow_none=True)
    return _call("clip", [x], {"min": lo, "max": hi})


def astype(x: Any, dtype: Any) -> Call:
    """``x`` converted to ``dtype`` (NumPy's ``astype``: floats truncate toward zero into
    ints, any non-zero value is True)."""
    dtype = normalize_dtype(dtype, what="astype dtype", allow_bool=True, error=GraphError)
    return _call("astype", [x], {"dtype": dtype})


# -- creation ---------------------------------------------------------------------------------

def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Call:
    """A tensor of ``x``'s shape filled with the number ``fill_value`` (of ``dtype``, default
    ``x``'s)."""
    value = _scalar(fill_value, "full_like", "fill_value")
    attrs: dict[str, Any] = {"fill_value": value}
    if dtype is not None:
        attrs["dtype"] = normalize_dtype(dtype, what="full_like dtype", allow_bool=True, error=GraphError)
    return _call("full_like", [x], attrs)


def zeros_like(x: Any, dtype: Any = None) -> Call:
    """``full_like(x, 0, dtype)``."""
    return full_like(x, 0, dtype)


def ones_like(x: Any, dtype: Any = None) -> Call:
    """``full_like(x, 1, dtype)``."""
    return full_like(x, 1, dtype)


# -- reductions -------------------------------------------------------------------------------

def _int(value: Any, op: str, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise GraphError(f"{op}: {what} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _axes(axis: Any, op: str, x: Expr | None = None) -> tuple[int, ...] | None:
    """``axis`` (None, an int or a sequence of ints) as a tuple; negative axes in range count
    from the end of ``x`` (out-of-range ones are left for the shape rule to report)."""
    if axis is None:
        return None
    items = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = tuple(_int(a, op, "axis") for a in items)
    if x is not None:
        out = tuple(a % x.ndim if -x.ndim <= a < 0 else a for a in out)
    return out


def _reduction(op: str, x: Any, axis: Any, keepdims: bool) -> Call:
    x = _expr(x, op, 0)
    if not isinstance(keepdims, (bool, np.bool_)):
        raise GraphError(f"{op}: keepdims must be a bool, got {keepdims!r}")
    return _call(op, [x], {"axis": _axes(axis, op, x), "keepdims": bool(keepdims)})


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Call:  # noqa: A001 - relax.op.sum
    """The sum over ``axis`` (None: all axes; an int or a tuple), int or float tensors."""
    return _reduction("sum", x, axis, keepdims)


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Call:
    """The mean over ``axis`` (None: all axes; an int or a tuple), float tensors."""
    return _reduction("mean", x, axis, keepdims)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Call:  # noqa: A001 - relax.op.max
    """The maximum over ``axis`` (None: all axes; an int or a tuple)."""
    return _reduction("max", x, axis, keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Call:  # noqa: A001 - relax.op.min
    """The minimum over ``axis`` (None: all axes; an int or a tuple)."""
    return _reduction("min", x, axis, keepdims)


def prod(x: Any, axis: Any = None, keepdims: bool = False) -> Call:
    """The product over ``axis`` (None: all axes); at most 64 static elements per product."""
    return _reduction("prod", x, axis, keepdims)


def any(x: Any, axis: Any = None, keepdims: bool = False) -> Call:  # noqa: A001 - bool reduction
    """Whether any element of the bool ``x`` over ``axis`` is True."""
    return _reduction("any", x, axis, keepdims)


def all(x: Any, axis: Any = None, keepdims: bool = False) -> Call:  # noqa: A001 - bool reduction
    """Whether every element of the bool ``x`` over ``axis`` is True."""
    return _reduction("all", x, axis, keepdims)


def cumsum(x: Any, axis: Any = None, dtype: Any = None) -> Call:
    """The inclusive running sum along ``axis`` (None: of the flattened, static-shape ``x``),
    in ``dtype`` (default ``x``'s; int64 for bool, as NumPy)."""
    x = _expr(x, "cumsum", 0)
    ax = None if axis is None else _axes(axis, "cumsum", x)
    if ax is not None and len(ax) != 1:
        raise GraphError(f"cumsum: axis must be one int or None, got {axis!r}")
    attrs: dict[str, Any] = {"axis": None if ax is None else ax[0]}
    if dtype is not None:
        attrs["dtype"] = normalize_dtype(dtype, what="cumsum dtype", allow_bool=False, error=GraphError)
    return _call("cumsum", [x], attrs)
