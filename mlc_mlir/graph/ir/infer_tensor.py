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
from ...tensor_types import (BOOL, Shape, broadcast_shapes, format_shape, is_float, is_int, normalize_dtype,
                             numel)

__all__ = ["TENSOR_RULES", "COMPARISONS", "FLOAT_UNARY", "REDUCTIONS", "MAX_PROD_ELEMENTS", "fmt_args",
           "arity", "common_dtype", "broadcast_all", "reduce_axes", "slice_range"]

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
        n = numel(tuple(shape[a] for a in axes))
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


# -- layout and indexing ------------------------------------------------------------------------

def _broadcast_to(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    (shape, dtype), target = args[0], tuple(attrs.get("shape") or ())
    ok = len(shape) <= len(target)
    for i in range(1, len(shape) + 1):
        ok = ok and shape[-i] in (1, target[-i])
    if not ok:
        raise GraphError(f"broadcast_to: {format_shape(shape)} does not broadcast to {format_shape(target)} "
                         "(each dimension, aligned from the end, must be 1 or the target's)")
    return target, dtype


def _expand_dims(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    shape, dtype = args[0]
    axis = attrs.get("axis")
    items = (axis,) if isinstance(axis, int) else tuple(axis or ())
    rank = len(shape) + len(items)
    if not items or any(not isinstance(a, int) or not -rank <= a < rank for a in items):
        raise GraphError(f"expand_dims: axis {items} must be one or more positions in [{-rank}, {rank}) "
                         f"(the result's rank) for {format_shape(shape)}")
    new = {a % rank for a in items}
    if len(new) != len(items):
        raise GraphError(f"expand_dims: axis {items} names a position twice")
    it = iter(shape)
    return tuple(1 if a in new else next(it) for a in range(rank)), dtype


def _squeeze(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    shape, dtype = args[0]
    if attrs.get("axis") is None:
        return tuple(d for d in shape if d != 1), dtype
    axes = reduce_axes(op, shape, attrs["axis"])
    for a in axes:
        if shape[a] != 1:
            raise GraphError(f"squeeze: dimension {a} of {format_shape(shape)} is {shape[a]}, not 1")
    return tuple(d for a, d in enumerate(shape) if a not in axes), dtype


def slice_range(op: str, dim: Any, begin: int, end: int, stride: int, axis: int) -> range:
    """The positions ``begin:end:stride`` selects in a static dimension (NumPy's bounds)."""
    if not isinstance(dim, int):
        raise GraphError(f"{op}: axis {axis} has the symbolic size {dim}; only static axes can be sliced")
    if stride == 0:
        raise GraphError(f"{op}: stride 0 on axis {axis}")
    picked = range(*slice(begin, end, stride).indices(dim))
    if not picked:
        raise GraphError(f"{op}: {begin}:{end}:{stride} selects nothing from axis {axis} of size {dim} "
                         "(empty tensors are not supported)")
    return picked


def _strided_slice(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    shape, dtype = args[0]
    axes, begin, end = (tuple(attrs.get(k) or ()) for k in ("axes", "begin", "end"))
    strides = tuple(attrs.get("strides") or (1,) * len(axes))
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise GraphError(f"{op}: axes {axes}, begin {begin}, end {end} and strides {strides} must have "
                         "one entry per sliced axis")
    norm = [reduce_axes(op, shape, (a,))[0] for a in axes]
    if len(set(norm)) != len(norm):
        raise GraphError(f"{op}: axes {axes} names a dimension twice")
    out = list(shape)
    for a, b, e, s in zip(norm, begin, end, strides):
        if isinstance(e, str):  # x[:seq]: the symbolic size
            if b != 0 or s != 1:
                raise GraphError(f"{op}: a symbolic end ({e!r}) needs begin 0 and stride 1 on axis {a}, "
                                 f"got {b}:{e}:{s}")
            out[a] = e
            continue
        out[a] = len(slice_range(op, shape[a], b, e, s, a))
    return tuple(out), dtype


def _concat(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    if not args:
        raise GraphError("concat takes at least one tensor")
    dtype = common_dtype(op, args)
    first = args[0][0]
    if any(len(s) != len(first) for s, _ in args):
        raise GraphError(f"concat: tensors of different ranks: {fmt_args(args)}")
    (axis,) = reduce_axes(op, first, (attrs.get("axis", 0),))
    total: Any = 0
    for s, _ in args:
        if not isinstance(s[axis], int) and len(args) > 1:
            raise GraphError(f"concat: axis {axis} must be static, got {fmt_args(args)}")
        if any(d != first[a] for a, d in enumerate(s) if a != axis):
            raise GraphError(f"concat: shapes differ off axis {axis}: {fmt_args(args)}")
        total = s[axis] if len(args) == 1 else total + s[axis]
    return first[:axis] + (total,) + first[axis + 1:], dtype


def _take(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 2)
    (shape, dtype), (ind, ind_dtype) = args
    if ind_dtype not in ("int32", "int64"):
        raise GraphError(f"take: indices must be int32 or int64, got {fmt_args(args[1:])}")
    axis = attrs.get("axis")
    if axis is None:
        if any(not isinstance(d, int) for d in shape):
            raise GraphError(f"take: axis=None flattens, which needs a static shape, got {format_shape(shape)}")
        return ind, dtype
    (a,) = reduce_axes(op, shape, (axis,))
    return shape[:a] + ind + shape[a + 1:], dtype


def _trilu(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    arity(op, args, 1)
    shape, dtype = args[0]
    if len(shape) < 2:
        raise GraphError(f"{op}: needs a tensor of rank 2 or more, got {format_shape(shape)}")
    return shape, dtype


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
    "broadcast_to": _broadcast_to,
    "expand_dims": _expand_dims,
    "squeeze": _squeeze,
    "strided_slice": _strided_slice,
    "concat": _concat,
    "take": _take,
    "tril": _trilu,
    "triu": _trilu,
}
