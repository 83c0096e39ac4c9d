"""Shape rules of the tensor graph ops (:mod:`.op_tensor`).

Registered into :data:`mlc_mlir.graph.ir.infer.RULES`. Each rule takes the argument
(shape, dtype) pairs and the op's attributes and returns the result (shape, dtype), or
raises :class:`GraphError` naming the op, the shapes and the dtypes. Binary ops broadcast
as NumPy does (a symbolic dimension meets only itself or 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...errors import GraphError
from ...tensor_types import BOOL, Shape, broadcast_shapes, format_shape, is_float, is_int, normalize_dtype

__all__ = ["TENSOR_RULES", "COMPARISONS", "FLOAT_UNARY"]

ArgInfo = tuple[Shape, str]
Rule = Callable[[str, Sequence[ArgInfo], dict[str, Any]], tuple[Shape, str]]

#: comparison ops (bool results) and their te operators
COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
#: unary ops on float tensors
FLOAT_UNARY = ("exp", "log", "sqrt", "rsqrt", "erf", "floor", "ceil", "sin", "cos")

#: dtype kinds an op accepts -> (test, how the message names it)
_KINDS: dict[str, tuple[Callable[[str], bool], str]] = {
    "any": (lambda d: True, "any dtype"),
    "float": (is_float, "a float dtype"),
    "numeric": (lambda d: d != BOOL, "an int or float dtype"),
    "bool": (lambda d: d == BOOL, "bool"),
    "int_or_bool": (lambda d: d == BOOL or is_int(d), "bool or an int dtype"),
}


def fmt_args(args: Sequence[ArgInfo]) -> str:
    """``(2, n) float32, (n,) float32``: argument shapes and dtypes for messages."""
    return ", ".join(f"{format_shape(s)} {d}" for s, d in args)


def arity(op: str, args: Sequence[ArgInfo], n: int) -> None:
    """GraphError unless ``op`` got ``n`` tensor arguments."""
    if len(args) != n:
        raise GraphError(f"{op} takes {n} tensor argument(s), got {len(args)}")


def common_dtype(op: str, args: Sequence[ArgInfo], kind: str = "any") -> str:
    """The one dtype of ``args``, which must be of ``kind`` (a key of :data:`_KINDS`)."""
    dtypes = {d for _, d in args}
    if len(dtypes) != 1:
        raise GraphError(f"{op}: arguments have different dtypes: {fmt_args(args)} (convert with astype)")
    dtype = args[0][1]
    test, what = _KINDS[kind]
    if not test(dtype):
        raise GraphError(f"{op}: needs {what}, got {fmt_args(args)}")
    return dtype


def broadcast_all(op: str, args: Sequence[ArgInfo]) -> Shape:
    """The NumPy broadcast of every argument's shape."""
    shape: Shape = ()
    for s, _ in args:
        shape = broadcast_shapes(shape, s, what=f"{op} of {fmt_args(args)}", error=GraphError)
    return shape


# -- elementwise --------------------------------------------------------------------------------

def _binary(kind: str, result: str | None = None) -> Rule:
    """Two arguments of one dtype of ``kind``, broadcast; the result dtype is ``result``
    (default: the arguments')."""
    def rule(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
        arity(op, args, 2)
        dtype = common_dtype(op, args, kind)
        return broadcast_all(op, args), result or dtype
    return rule


def _unary(kind: str) -> Rule:
    def rule(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
        arity(op, args, 1)
        return args[0][0], common_dtype(op, args, kind)
    return rule


def _bitwise(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 2)
    dtype = common_dtype(op, args, "int_or_bool")
    if dtype != BOOL:
        raise GraphError(f"{op}: only bool tensors are supported (the logical and/or), got {fmt_args(args)}")
    return broadcast_all(op, args), dtype


def _where(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 3)
    if args[0][1] != BOOL:
        raise GraphError(f"where: the condition must be bool, got {fmt_args(args[:1])}")
    dtype = common_dtype(op, args[1:])
    return broadcast_all(op, args), dtype


def _clip(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    dtype = common_dtype(op, args, "numeric")
    lo, hi = attrs.get("min"), attrs.get("max")
    if lo is not None and hi is not None and lo > hi:
        raise GraphError(f"clip: min {lo} is greater than max {hi}")
    return args[0][0], dtype


def _astype(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    return args[0][0], normalize_dtype(attrs.get("dtype"), what="astype dtype", allow_bool=True,
                                       error=GraphError)


def _full_like(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    dtype = attrs.get("dtype") or args[0][1]
    dtype = normalize_dtype(dtype, what=f"{op} dtype", allow_bool=True, error=GraphError)
    value = attrs.get("fill_value")
    if not isinstance(value, (int, float)):
        raise GraphError(f"{op}: fill_value must be a number, got {value!r}")
    if is_int(dtype) and float(value) != int(value):
        raise GraphError(f"{op}: fill_value {value!r} is not an integer, so it cannot fill a {dtype} tensor")
    return args[0][0], dtype


TENSOR_RULES: dict[str, Rule] = {
    **{name: _binary("any", BOOL) for name in COMPARISONS},
    "logical_not": _unary("bool"),
    "logical_and": _binary("bool"),
    "logical_or": _binary("bool"),
    "bitwise_and": _bitwise,
    "bitwise_or": _bitwise,
    "where": _where,
    "power": _binary("float"),
    "maximum": _binary("numeric"),
    "minimum": _binary("numeric"),
    **{name: _unary("float") for name in FLOAT_UNARY},
    "negative": _unary("numeric"),
    "abs": _unary("numeric"),
    "clip": _clip,
    "astype": _astype,
    "full_like": _full_like,
}
