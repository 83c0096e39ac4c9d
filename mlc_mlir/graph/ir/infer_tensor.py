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

__all__ = ["TENSOR_RULES", "COMPARISONS", "FLOAT_UNARY", "REDUCTIONS", "MAX_PROD_ELEMENTS", "fmt_args",
           "arity", "common_dtype", "broadcast_all", "reduce_axes"]

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


# -- reductions ---------------------------------------------------------------------------------

def reduce_axes(op: str, shape: Shape, axis: Any) -> tuple[int, ...]:
    """The sorted axes ``axis`` names in ``shape`` (None: all); negative ones count from the end."""
    if axis is None:
        return tuple(range(len(shape)))
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in items:
        if not isinstance(a, int) or not -len(shape) <= a < len(shape):
            raise GraphError(f"{op}: axis {a!r} is out of range for shape {format_shape(shape)}")
        out.append(a % len(shape))
    if len(set(out)) != len(out):
        raise GraphError(f"{op}: axis {tuple(items)} names a dimension twice")
    return tuple(sorted(out))


#: reduction -> the dtype kind it accepts
REDUCTIONS = {"sum": "numeric", "mean": "float", "max": "numeric", "min": "numeric", "prod": "numeric",
              "any": "bool", "all": "bool"}
#: most elements one ``prod`` multiplies (it is unrolled: te has no product reduction)
MAX_PROD_ELEMENTS = 64


def _reduce(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    shape, dtype = args[0]
    common_dtype(op, args, REDUCTIONS[op])
    axes = reduce_axes(op, shape, attrs.get("axis"))
    if op == "prod":
        dims = [shape[a] for a in axes]
        n = 1
        for d in dims:
            n = n * d if isinstance(d, int) else None
            if n is None:
                break
        if n is None or n > MAX_PROD_ELEMENTS:
            raise GraphError(f"prod: over axes {axes} of {format_shape(shape)}: at most "
                             f"{MAX_PROD_ELEMENTS} static elements per product are supported")
    if attrs.get("keepdims"):
        return tuple(1 if a in axes else d for a, d in enumerate(shape)), dtype
    return tuple(d for a, d in enumerate(shape) if a not in axes), dtype


def _cumsum(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    shape, dtype = args[0]
    out_dtype = attrs.get("dtype") or ("int64" if dtype == BOOL else dtype)
    out_dtype = normalize_dtype(out_dtype, what="cumsum dtype", error=GraphError)
    axis = attrs.get("axis")
    if axis is None:
        if len(shape) != 1 and any(not isinstance(d, int) for d in shape):
            raise GraphError(f"cumsum: axis=None flattens, which needs a static shape, got {format_shape(shape)}")
        n = 1
        for d in shape:
            n *= d if isinstance(d, int) else 1
        return ((shape[0],) if len(shape) == 1 else (n,)), out_dtype
    reduce_axes(op, shape, axis)
    return shape, out_dtype


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
    **{name: _reduce for name in REDUCTIONS},
    "cumsum": _cumsum,
}
