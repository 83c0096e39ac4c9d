"""Elementwise operators: NumPy-broadcasting binary ops and float unary functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._util import bcast_index, broadcast, check_tensor
from .. import te

__all__ = ["add", "subtract", "multiply", "divide", "ewise_fma", "exp", "sqrt", "tanh", "sigmoid",
           "binary"]


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
