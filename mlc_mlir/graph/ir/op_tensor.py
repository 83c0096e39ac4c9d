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
from ...tensor_types import format_shape, int_range, normalize_dtype, normalize_shape
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
    # layout and indexing
    "broadcast_to", "expand_dims", "squeeze", "strided_slice", "split", "concat", "take", "tril", "triu",
]

#: the most tensors one ``concat`` joins (one IRDL operand slot each)
MAX_CONCAT = 16


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


# -- layout and indexing ----------------------------------------------------------------------

def broadcast_to(x: Any, shape: Sequence[int | str]) -> Call:
    """``x`` broadcast to ``shape`` (NumPy rules; ``torch.expand``): each dimension of ``x``,
    aligned from the end, is 1 or the target's."""
    x = _expr(x, "broadcast_to", 0)
    target = normalize_shape(shape, what="broadcast_to shape", error=GraphError)
    return _call("broadcast_to", [x], {"shape": target})


def expand_dims(x: Any, axis: int | Sequence[int]) -> Call:
    """``x`` with a new dimension of size 1 at each position ``axis`` of the result."""
    x = _expr(x, "expand_dims", 0)
    axes = _axes(axis, "expand_dims")
    if axes is None:
        raise GraphError("expand_dims: axis must be an int or a sequence of ints, got None")
    rank = x.ndim + len(axes)
    return _call("expand_dims", [x], {"axis": tuple(a % rank if -rank <= a < 0 else a for a in axes)})


def squeeze(x: Any, axis: int | Sequence[int] | None = None) -> Call:
    """``x`` without the dimensions ``axis`` (each of size 1); None: every static 1."""
    x = _expr(x, "squeeze", 0)
    return _call("squeeze", [x], {"axis": _axes(axis, "squeeze", x)})


def _int_list(values: Any, op: str, what: str) -> tuple[int, ...]:
    if not isinstance(values, (tuple, list)):
        values = (values,)
    lo, hi = int_range("int64")
    return tuple(_clamp(_int(v, op, what), lo, hi) for v in values)


def _clamp(v: int, lo: int, hi: int) -> int:
    """``v`` clamped into ``[lo, hi]`` (this module's ``min``/``max`` are graph ops)."""
    return lo if v < lo else hi if v > hi else v


def strided_slice(x: Any, axes: Sequence[int], begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int] | None = None) -> Call:
    """``x[begin:end:stride]`` along each of ``axes`` (NumPy's bounds: negative ones count
    from the end, out-of-range ones are clamped); the sliced axes must be static.
    ``torch`` slice / select / narrow / split / chunk map onto it. An ``end`` may be a
    symbolic size (``x[:seq]`` of a causal-mask buffer, with begin 0 and stride 1): the
    axis then has that size, and a run with a larger one reads the axis's last element
    (no error at run time)."""
    x = _expr(x, "strided_slice", 0)
    ax = _axes(tuple(axes) if isinstance(axes, (tuple, list)) else axes, "strided_slice", x)
    b = _int_list(begin, "strided_slice", "begin")
    ends = tuple(end) if isinstance(end, (tuple, list)) else (end,)
    e = tuple(v if isinstance(v, str) else _int_list(v, "strided_slice", "end")[0] for v in ends)
    st = (1,) * len(b) if strides is None else _int_list(strides, "strided_slice", "strides")
    return _call("strided_slice", [x], {"axes": ax, "begin": b, "end": e, "strides": st})


def split(x: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> tuple[Call, ...]:
    """``x`` cut along the static ``axis`` (``relax.op.split``): into ``indices_or_sections``
    equal parts (it must divide the axis), or at the given indices. The graph has no tuple
    values, so the parts come back as a Python tuple of :func:`strided_slice` calls, each
    emitted on its own (``q, k, v = [bb.emit(p) for p in op.split(qkv, 3, axis=-1)]``)."""
    x = _expr(x, "split", 0)
    (ax,) = _axes((axis,), "split", x)
    size = x.shape[ax]
    if not isinstance(size, int):
        raise GraphError(f"split: axis {ax} of {format_shape(x.shape)} is symbolic; only static axes can be split")
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        n = int(indices_or_sections)
        if n < 1 or size % n:
            raise GraphError(f"split: {n} sections do not divide axis {ax} of size {size}")
        cuts = [size // n * k for k in range(1, n)]
    else:
        cuts = [int(c) for c in _int_list(indices_or_sections, "split", "indices")]
        if cuts != sorted(set(cuts)) or (cuts and not 0 < cuts[0] <= cuts[-1] < size):  # (any/all are ops here)
            raise GraphError(f"split: indices {cuts} must increase strictly inside axis {ax} of size {size}")
    bounds = [0, *cuts, size]
    return tuple(strided_slice(x, [ax], [lo], [hi]) for lo, hi in zip(bounds, bounds[1:]))


def concat(tensors: Sequence[Any], axis: int = 0) -> Call:
    """The ``tensors`` (up to 16, one dtype, equal but for ``axis``) joined along the static
    ``axis`` (``torch.cat``)."""
    if isinstance(tensors, Expr) or not isinstance(tensors, (tuple, list)):
        raise GraphError(f"concat: tensors must be a list or tuple of tensors, got {type(tensors).__name__}")
    if not 1 <= len(tensors) <= MAX_CONCAT:
        raise GraphError(f"concat: {len(tensors)} tensors; between 1 and {MAX_CONCAT} are supported "
                         "(one IRDL operand slot each)")
    args = [_expr(t, "concat", i) for i, t in enumerate(tensors)]
    ndim = args[0].ndim
    ax = _int(axis, "concat", "axis")
    return _call("concat", args, {"axis": ax % ndim if -ndim <= ax < 0 else ax})


def take(x: Any, indices: Any, axis: int | None = None) -> Call:
    """Elements of ``x`` at the int32/int64 ``indices`` along ``axis`` (None: of the flattened,
    static-shape ``x``): shape ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``.
    Embedding lookup is ``take(W, ids, axis=0)``. A negative index counts from the end; an
    out-of-range one reads the nearest end (no error at run time)."""
    x = _expr(x, "take", 0)
    indices = _expr(indices, "take", 1)
    ax = None if axis is None else _int(axis, "take", "axis")
    if ax is not None and -x.ndim <= ax < 0:
        ax %= x.ndim
    return _call("take", [x, indices], {"axis": ax})


def tril(x: Any, k: int = 0) -> Call:
    """``x`` with the elements above the ``k``-th diagonal of its last two dimensions zeroed."""
    return _call("tril", [x], {"k": _int(k, "tril", "k")})


def triu(x: Any, k: int = 0) -> Call:
    """``x`` with the elements below the ``k``-th diagonal of its last two dimensions zeroed."""
    return _call("triu", [x], {"k": _int(k, "triu", "k")})
