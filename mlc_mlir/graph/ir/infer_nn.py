"""Shape rules of the neural-network graph ops (conv2d, max_pool2d, batch_norm, layer_norm).

Registered into :data:`mlc_mlir.graph.ir.infer.RULES`. Spatial sizes must be static ints;
the batch may be symbolic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import GraphError
from ...tensor_types import Shape, format_shape, is_float

__all__ = ["NN_RULES"]

ArgInfo = tuple[Shape, str]


def _check(op: str, args: Sequence[ArgInfo], n: int) -> str:
    if len(args) != n:
        raise GraphError(f"{op} takes {n} tensor argument(s), got {len(args)}")
    dtypes = {d for _, d in args}
    if len(dtypes) != 1 or not is_float(args[0][1]):
        raise GraphError(f"{op}: arguments must share one float dtype, got {sorted(dtypes)}")
    return args[0][1]


def _out(op: str, size: Any, kernel: int, stride: int, dilation: int) -> int:
    if not isinstance(size, int) or not isinstance(kernel, int):
        raise GraphError(f"{op}: spatial sizes must be static, got input {size} and kernel {kernel}")
    out = (size - dilation * (kernel - 1) - 1) // stride + 1
    if out <= 0:
        raise GraphError(f"{op}: input size {size} is smaller than the (dilated) kernel {kernel}")
    return out


def _conv2d(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    dtype = _check(op, args, 2)
    (x, _), (w, _) = args
    if len(x) != 4 or len(w) != 4:
        raise GraphError(f"conv2d: needs NCHW data and OIHW weight, got {format_shape(x)} and {format_shape(w)}")
    if x[1] != w[1]:
        raise GraphError(f"conv2d: data has {x[1]} channels, weight expects {w[1]} (groups are not supported)")
    (sh, sw), (dh, dw) = attrs.get("strides", (1, 1)), attrs.get("dilation", (1, 1))
    return (x[0], w[0], _out(op, x[2], w[2], sh, dh), _out(op, x[3], w[3], sw, dw)), dtype


def _max_pool2d(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    dtype = _check(op, args, 1)
    x = args[0][0]
    if len(x) != 4:
        raise GraphError(f"max_pool2d: needs NCHW data, got {format_shape(x)}")
    (kh, kw), (sh, sw) = attrs["pool_size"], attrs.get("strides", attrs["pool_size"])
    dh, dw = attrs.get("dilation", (1, 1))
    return (x[0], x[1], _out(op, x[2], kh, sh, dh), _out(op, x[3], kw, sw, dw)), dtype


def _batch_norm(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    dtype = _check(op, args, 5)
    x = args[0][0]
    axis = int(attrs.get("axis", 1))
    if not -len(x) <= axis < len(x):
        raise GraphError(f"batch_norm: axis {axis} is out of range for {format_shape(x)}")
    for name, (s, _) in zip(("gamma", "beta", "mean", "var"), args[1:]):
        if s != (x[axis],):
            raise GraphError(f"batch_norm: {name} has shape {format_shape(s)}, expected ({x[axis]},)")
    return x, dtype


def _layer_norm(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    dtype = _check(op, args, 3)
    x = args[0][0]
    axes = sorted(int(a) % max(len(x), 1) for a in attrs.get("axes", (-1,)))
    if axes != list(range(len(x) - len(axes), len(x))):
        raise GraphError(f"layer_norm: axes {axes} must be the trailing dimensions of {format_shape(x)}")
    norm = tuple(x[a] for a in axes)
    for name, (s, _) in zip(("gamma", "beta"), args[1:]):
        if s != norm:
            raise GraphError(f"layer_norm: {name} has shape {format_shape(s)}, expected {format_shape(norm)}")
    return x, dtype


NN_RULES = {"conv2d": _conv2d, "max_pool2d": _max_pool2d, "batch_norm": _batch_norm, "layer_norm": _layer_norm}
