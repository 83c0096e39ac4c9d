"""Elementwise operators: NumPy-broadcasting binary ops (arithmetic, comparisons, logical),
``where``, unary functions, ``clip``, ``cast`` and the ``full_like`` fills."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import TEError
from ..tensor_types import BOOL, broadcast_shapes, int_range, is_float, normalize_dtype
from ._util import bcast_index, broadcast, check_tensor, te_dim
from .. import te
from ..te.tensor import shape_names

__all__ = ["add", "subtract", "multiply", "divide", "ewise_fma", "exp", "sqrt", "tanh", "sigmoid",
           "binary", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or", "power", "maximum",
           "minimum", "where", "log", "rsqrt", "erf", "erf_expr", "negative", "abs", "floor", "ceil", "sin",
           "cos", "clip", "cast", "full_like", "zeros_like", "ones_like"]


def binary(kind: str, fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A broadcasting binary operator named ``kind`` computing ``fn(a, b)``."""
    def op(lhs: Any, rhs: Any) -> Any:
        check_tensor(lhs, kind, "lhs")
        check_tensor(rhs, kind, "rhs")
        shape = broadcast(kind, lhs, rhs)
        n = len(shape)
        return te.compute(shape, lambda *i: fn(lhs[bcast_index(lhs, n, i)], rhs[bcast_index(rhs, n, i)]),
                          name=kind)

    op.__name__ = kind
    op.__doc__ = f"Elementwise ``{kind}`` of two te tensors with NumPy broadcasting."
    return op


add = binary("add", lambda x, y: x + y)
subtract = binary("subtract", lambda x, y: x - y)
multiply = binary("multiply", lambda x, y: x * y)
divide = binary("divide", lambda x, y: x / y)
equal = binary("equal", lambda x, y: x == y)
not_equal = binary("not_equal", lambda x, y: x != y)
less = binary("less", lambda x, y: x < y)
less_equal = binary("less_equal", lambda x, y: x <= y)
greater = binary("greater", lambda x, y: x > y)
greater_equal = binary("greater_equal", lambda x, y: x >= y)
logical_and = binary("logical_and", lambda x, y: x & y)
logical_or = binary("logical_or", lambda x, y: x | y)
bitwise_and = binary("bitwise_and", lambda x, y: x & y)  # bool operands (te has no integer bit ops)
bitwise_or = binary("bitwise_or", lambda x, y: x | y)
power = binary("power", te.power)
maximum = binary("maximum", te.max)
minimum = binary("minimum", te.min)


def where(condition: Any, x: Any, y: Any) -> Any:
    """``x`` where the bool ``condition`` holds, else ``y``; the three broadcast together."""
    for what, t in (("condition", condition), ("x", x), ("y", y)):
        check_tensor(t, "where", what)
    if condition.dtype != BOOL:
        raise TEError(f"topi.where: the condition must be bool, got {condition.dtype}")
    shape = shape_names(condition.shape)
    for t in (x, y):
        shape = broadcast_shapes(shape, shape_names(t.shape), what="topi.where", error=TEError)
    n = len(shape)
    dims = tuple(te_dim((condition, x, y), d) for d in shape)
    return te.compute(dims, lambda *i: te.if_then_else(condition[bcast_index(condition, n, i)],
                                                       x[bcast_index(x, n, i)], y[bcast_index(y, n, i)]),
                      name="where")


def ewise_fma(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` elementwise (three tensors of one shape)."""
    for t in (a, b, c):
        check_tensor(t, "ewise_fma")
    return te.compute(a.shape, lambda *i: a(*i) * b(*i) + c(*i), name="ewise_fma")


def _unary(name: str) -> Callable[[Any], Any]:
    def op(x: Any) -> Any:
        check_tensor(x, name)
        fn = getattr(te, name)
        return te.compute(x.shape, lambda *i: fn(x(*i)), name=name)

    op.__name__ = name
    op.__doc__ = f"``{name}(x)`` elementwise."
    return op


exp = _unary("exp")
sqrt = _unary("sqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
log = _unary("log")
rsqrt = _unary("rsqrt")
floor = _unary("floor")
ceil = _unary("ceil")
sin = _unary("sin")
cos = _unary("cos")
abs = _unary("abs")  # noqa: A001 - topi.abs


def logical_not(x: Any) -> Any:
    """``not x`` of a bool tensor."""
    check_tensor(x, "logical_not")
    return te.compute(x.shape, lambda *i: ~x(*i), name="logical_not")


def negative(x: Any) -> Any:
    """``-x`` elementwise."""
    check_tensor(x, "negative")
    return te.compute(x.shape, lambda *i: -x(*i), name="negative")


def erf_expr(v: Any) -> Any:
    """``erf(v)`` of a float te expression (Abramowitz & Stegun 7.1.26, absolute error
    below 1.5e-7)."""
    a1, a2, a3, a4, a5, p = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429, 0.3275911
    av = te.abs(v)
    t = 1.0 / (1.0 + p * av)
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    y = 1.0 - poly * te.exp(-(av * av))
    return te.if_then_else(v >= 0.0, y, -y)


def erf(x: Any) -> Any:
    """The error function elementwise (float; see :func:`erf_expr`)."""
    check_tensor(x, "erf")
    return te.compute(x.shape, lambda *i: erf_expr(x(*i)), name="erf")


def _bound(value: float | None, dtype: str, up: bool) -> Any:
    """A clip bound as a constant of ``dtype`` (an int tensor's bound rounds inward)."""
    if value is None or is_float(dtype):
        return None if value is None else te.const(float(value), dtype)
    lo, hi = int_range(dtype)
    v = math.floor(value) if up else math.ceil(value)
    return te.const(min(max(v, lo), hi), dtype)


def clip(x: Any, a_min: float | None, a_max: float | None) -> Any:
    """``x`` clamped into ``[a_min, a_max]``; a bound of None is open (``relu6``, ``hardtanh``)."""
    check_tensor(x, "clip")
    if x.dtype == BOOL:
        raise TEError("topi.clip: a bool tensor cannot be clipped")
    lo, hi = _bound(a_min, x.dtype, False), _bound(a_max, x.dtype, True)

    def body(*i: Any) -> Any:
        v = x(*i)
        if hi is not None:
            v = te.min(v, hi)
        return v if lo is None else te.max(v, lo)

    return te.compute(x.shape, body, name="clip")


def cast(x: Any, dtype: str) -> Any:
    """``x`` converted to ``dtype`` (floats truncate into ints; non-zero is True)."""
    check_tensor(x, "cast")
    dtype = normalize_dtype(dtype, what="topi.cast dtype", allow_bool=True, error=TEError)
    return te.compute(x.shape, lambda *i: x(*i).astype(dtype), name="astype")


def full_like(x: Any, fill_value: float, dtype: str | None = None) -> Any:
    """A tensor of ``x``'s shape filled with ``fill_value`` (of ``dtype``, default ``x``'s)."""
    check_tensor(x, "full_like")
    dtype = normalize_dtype(dtype or x.dtype, what="topi.full_like dtype", allow_bool=True, error=TEError)
    value = te.const(bool(fill_value) if dtype == BOOL else fill_value, dtype)
    return te.compute(x.shape, lambda *i: value, name="full_like")


def zeros_like(x: Any, dtype: str | None = None) -> Any:
    """``full_like(x, 0, dtype)``."""
    return full_like(x, 0, dtype)


def ones_like(x: Any, dtype: str | None = None) -> Any:
    """``full_like(x, 1, dtype)``."""
    return full_like(x, 1, dtype)
