"""What every graph op module shares: arguments made graph expressions, and the op call
(its shape inferred at once, :mod:`.infer`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import GraphError
from .expr import Call, Expr, const
from .infer import infer

__all__ = ["_expr", "_call"]


def _expr(value: Any, op: str, index: int, like: Expr | None = None) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, (int, float, np.ndarray, np.generic, list)) and not isinstance(value, bool):
        return const(value, like.dtype if like is not None and np.ndim(value) == 0 else None)
    raise GraphError(f"{op}: argument {index} must be a graph expression (Var, const, op call), "
                     f"got {type(value).__name__}")


def _call(op: str, args: Sequence[Any], attrs: dict[str, Any] | None = None) -> Call:
    exprs: list[Expr] = []
    for i, a in enumerate(args):
        like = next((x for x in args if isinstance(x, Expr)), None)
        exprs.append(_expr(a, op, i, like))
    shape, dtype = infer(op, [(e.shape, e.dtype) for e in exprs], attrs or {})
    return Call(op, exprs, attrs or {}, shape, dtype)
