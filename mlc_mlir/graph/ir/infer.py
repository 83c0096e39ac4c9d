"""Shape and dtype inference of the graph ops (one rule per op).

Used twice: by :mod:`mlc_mlir.graph.ir.op` when an op is built in Python, and by
:func:`mlc_mlir.graph.ir.verify.verify_graph` on graph functions read from MLIR text. A rule
takes the argument shapes/dtypes and the op's attributes and returns the result shape and
dtype, or raises :class:`GraphError` naming the op and the shapes.

Dimensions are ints or symbol names. Two dimensions are *provably equal* when they are
the same int or the same symbol; rules reject what they cannot prove (``"n"`` against
``64``), because a wrong guess would read out of bounds in compiled code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...errors import GraphError
from ...tensor_types import Shape, broadcast_shapes, format_shape, is_float, numel
from .infer_nn import NN_RULES
from .infer_tensor import TENSOR_RULES

__all__ = ["infer", "RULES", "ELEMENTWISE_BINARY"]

ArgInfo = tuple[Shape, str]  # (shape, dtype)
Rule = Callable[[str, Sequence[ArgInfo], dict[str, Any]], tuple[Shape, str]]

ELEMENTWISE_BINARY = ("add", "subtract", "multiply", "divide")


def _fmt_args(args: Sequence[ArgInfo]) -> str:
    return ", ".join(f"{format_shape(s)} {d}" for s, d in args)


def _arity(op: str, args: Sequence[ArgInfo], n: int) -> None:
    if len(args) != n:
        raise GraphError(f"{op} takes {n} tensor argument(s), got {len(args)}")


def _same_dtype(op: str, args: Sequence[ArgInfo]) -> str:
    dtypes = {d for _, d in args}
    if len(dtypes) != 1:
        raise GraphError(f"{op}: arguments have different dtypes: {_fmt_args(args)}")
    return args[0][1]


def _binary(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    _arity(op, args, 2)
    dtype = _same_dtype(op, args)
    return broadcast_shapes(args[0][0], args[1][0], what=op, error=GraphError), dtype


def _matmul(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    """NumPy/torch ``matmul``: a rank-1 lhs is a row and a rank-1 rhs a column (that
    dimension is dropped); the batch dimensions (all but the last two) broadcast."""
    _arity(op, args, 2)
    dtype = _same_dtype(op, args)
    (a, _), (b, _) = args
    if len(a) < 1 or len(b) < 1:
        raise GraphError(f"matmul: scalars cannot be multiplied as matrices: {_fmt_args(args)}")
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if k_a != k_b:
        raise GraphError(f"matmul: inner dimensions differ: lhs {format_shape(a)} @ rhs {format_shape(b)} "
                         f"({k_a} vs {k_b})")
    batch = broadcast_shapes(a[:-2], b[:-2], what=f"matmul: batch dimensions of lhs {format_shape(a)} "
                             f"and rhs {format_shape(b)}", error=GraphError)
    return batch + a[-2:-1] + (b[-1:] if len(b) >= 2 else ()), dtype


def _unary(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    _arity(op, args, 1)
    return args[0]


def _ewise_fma(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    _arity(op, args, 3)
    dtype = _same_dtype(op, args)
    if not (args[0][0] == args[1][0] == args[2][0]):
        raise GraphError(f"ewise_fma: the three arguments must have one shape, got {_fmt_args(args)}")
    return args[0][0], dtype


def _permute_dims(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    _arity(op, args, 1)
    shape, dtype = args[0]
    axes = attrs.get("axes")
    if axes is None:
        axes = tuple(reversed(range(len(shape))))
    axes = tuple(int(a) for a in axes)
    if sorted(a % len(shape) if len(shape) else a for a in axes) != list(range(len(shape))):
        raise GraphError(f"permute_dims: axes {axes} are not a permutation of the {len(shape)} "
                         f"dimensions of {format_shape(shape)}")
    return tuple(shape[a] for a in axes), dtype


def _size_key(shape: Shape) -> tuple[tuple[str, ...], int]:
    """(sorted symbols, product of the int dims): equal keys mean provably equal sizes."""
    fixed = 1
    for d in shape:
        if isinstance(d, int):
            fixed *= d
    return tuple(sorted(d for d in shape if isinstance(d, str))), fixed


def _reshape(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    _arity(op, args, 1)
    shape, dtype = args[0]
    new = tuple(attrs["shape"])
    if _size_key(shape) != _size_key(new):
        n_old, n_new = numel(shape), numel(new)
        if n_old is not None and n_new is not None:
            raise GraphError(f"reshape: cannot reshape {format_shape(shape)} ({n_old} elements) to "
                             f"{format_shape(new)} ({n_new} elements)")
        raise GraphError(f"reshape: cannot prove that {format_shape(shape)} and {format_shape(new)} "
                         "have the same number of elements")
    return new, dtype


def _softmax(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    _arity(op, args, 1)
    shape, dtype = args[0]
    axis = int(attrs.get("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise GraphError(f"softmax: axis {axis} is out of range for shape {format_shape(shape)}")
    if not is_float(dtype):
        raise GraphError(f"softmax: needs a float tensor, got {dtype}")
    return shape, dtype


RULES: dict[str, Rule] = {
    "matmul": _matmul,
    **{name: _binary for name in ELEMENTWISE_BINARY},
    "relu": _unary,
    **{name: _unary for name in ("gelu", "sigmoid", "tanh")},
    "ewise_fma": _ewise_fma,
    "permute_dims": _permute_dims,
    "reshape": _reshape,
    "softmax": _softmax,
}


def infer(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any] | None = None) -> tuple[Shape, str]:
    """Result (shape, dtype) of graph op ``op`` (``"matmul"``...) on ``args``.

    Raises:
        GraphError: an unknown op, or arguments the op does not accept (the message names
            the op and the shapes).
    """
    if op not in RULES:
        raise GraphError(f"no shape rule for graph op {op!r}; known: {', '.join(sorted(RULES))}")
    return RULES[op](op, args, dict(attrs or {}))


def _register_nn_rules() -> None:
    RULES.update(NN_RULES)
    RULES.update(TENSOR_RULES)


_register_nn_rules()
