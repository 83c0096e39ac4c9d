"""Shape rules of the neural-network graph ops (conv2d, max/avg/adaptive_avg pooling,
batch_norm, layer_norm, gelu_tanh, silu, log_softmax, safe_softmax).

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


def _static(op: str, size: Any, what: str) -> int:
    if not isinstance(size, int):
        raise GraphError(f"{op}: {what} must be static, got {size!r}")
    return size


def _out(op: str, size: Any, kernel: Any, stride: int, dilation: int, pad: int = 0) -> int:
    _static(op, size, "spatial sizes")
    _static(op, kernel, "kernel sizes")
    out = (size + pad - dilation * (kernel - 1) - 1) // stride + 1
    if out <= 0:
        raise GraphError(f"{op}: input size {size} (padded by {pad}) is smaller than the (dilated) kernel {kernel}")
    return out


def _conv2d(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    dtype = _check(op, args, 2)
    (x, _), (w, _) = args
    if len(x) != 4 or len(w) != 4:
        raise GraphError(f"conv2d: needs NCHW data and OIHW weight, got {format_shape(x)} and {format_shape(w)}")
    groups = int(attrs.get("groups", 1))
    if groups == 1 and x[1] != w[1]:
        raise GraphError(f"conv2d: data has {x[1]} channels, weight expects {w[1]} (data "
                         f"{format_shape(x)}, weight {format_shape(w)}, groups 1)")
    if groups != 1:
        c, o, ci = (_static(op, d, "channels of a grouped convolution") for d in (x[1], w[0], w[1]))
        if c != ci * groups or o % groups:
            raise GraphError(f"conv2d: data {format_shape(x)} ({c} channels) and weight {format_shape(w)} "
                             f"({o} outputs, {ci} inputs per group) do not form {groups} groups")
    (sh, sw), (dh, dw) = attrs.get("strides", (1, 1)), attrs.get("dilation", (1, 1))
    top, left, bottom, right = attrs.get("padding", (0, 0, 0, 0))
    return (x[0], w[0], _out(op, x[2], w[2], sh, dh, top + bottom),
            _out(op, x[3], w[3], sw, dw, left + right)), dtype


def _pool_out(op: str, size: Any, k: int, s: int, d: int, before: int, after: int, ceil_mode: bool) -> int:
    """torch's pooled size: ``ceil_mode`` rounds up while the last window starts inside the
    input or left padding."""
    _static(op, size, "spatial sizes")
    span = size + before + after - d * (k - 1) - 1
    if span < 0:
        raise GraphError(f"{op}: input size {size} (padded by {before + after}) is smaller than the "
                         f"(dilated) window {k}")
    out = (-(-span // s) if ceil_mode else span // s) + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + before else out


def _pool2d(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    dtype = _check(op, args, 1)
    x = args[0][0]
    if len(x) != 4:
        raise GraphError(f"{op}: needs NCHW data, got {format_shape(x)}")
    (kh, kw), (sh, sw) = attrs["pool_size"], attrs.get("strides", attrs["pool_size"])
    dh, dw = attrs.get("dilation", (1, 1))
    top, left, bottom, right = attrs.get("padding", (0, 0, 0, 0))
    ceil = bool(attrs.get("ceil_mode", False))
    return (x[0], x[1], _pool_out(op, x[2], kh, sh, dh, top, bottom, ceil),
            _pool_out(op, x[3], kw, sw, dw, left, right, ceil)), dtype


def _adaptive_pool2d(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    dtype = _check(op, args, 1)
    x = args[0][0]
    if len(x) != 4:
        raise GraphError(f"{op}: needs NCHW data, got {format_shape(x)}")
    for d in x[2:]:
        _static(op, d, "spatial sizes")
    oh, ow = attrs.get("output_size", x[2:])
    return (x[0], x[1], oh, ow), dtype


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


def _float_unary(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    return args[0][0], _check(op, args, 1)


def _along_axis(op: str, args: Sequence[ArgInfo], attrs: dict[str, Any]) -> tuple[Shape, str]:
    """log_softmax, safe_softmax: the input's shape, an axis within it."""
    dtype = _check(op, args, 1)
    x = args[0][0]
    axis = int(attrs.get("axis", -1))
    if not -len(x) <= axis < len(x):
        raise GraphError(f"{op}: axis {axis} is out of range for shape {format_shape(x)}")
    return x, dtype


NN_RULES = {"conv2d": _conv2d, "max_pool2d": _pool2d, "avg_pool2d": _pool2d,
            "adaptive_avg_pool2d": _adaptive_pool2d, "batch_norm": _batch_norm, "layer_norm": _layer_norm,
            "gelu_tanh": _float_unary, "silu": _float_unary, "log_softmax": _along_axis,
            "safe_softmax": _along_axis}
