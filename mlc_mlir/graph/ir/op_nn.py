"""Neural-network graph ops (``mlc.graph.op.nn``, the course's ``relax.op.nn``):
``conv2d``, ``max_pool2d``, ``batch_norm`` (inference), ``layer_norm``. Layout NCHW/OIHW;
padding is not supported (a non-zero padding raises :class:`GraphError`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import GraphError
from .op_base import _call

__all__ = ["conv2d", "max_pool2d", "batch_norm", "layer_norm"]


def _pair(v: Any, op: str, what: str) -> tuple[int, int]:
    vals = (v, v) if isinstance(v, int) else tuple(v)
    if len(vals) == 1:
        vals = (vals[0], vals[0])
    if len(vals) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in vals):
        raise GraphError(f"{op}: {what} must be a positive int or a pair of them, got {v!r}")
    return int(vals[0]), int(vals[1])


def _no_padding(padding: Any, op: str) -> None:
    pads = (padding,) if isinstance(padding, int) else tuple(padding)
    if any(p != 0 for p in pads):
        raise GraphError(f"{op}: padding {padding!r} is not supported (only 0)")


def conv2d(data: Any, weight: Any, strides: Any = (1, 1), padding: Any = (0, 0), dilation: Any = (1, 1),
           groups: int = 1) -> Any:
    """2-D convolution of NCHW ``data`` with OIHW ``weight`` (``relax.op.nn.conv2d``)."""
    _no_padding(padding, "conv2d")
    if groups != 1:
        raise GraphError(f"conv2d: groups={groups} is not supported (only 1)")
    return _call("conv2d", [data, weight], {"strides": _pair(strides, "conv2d", "strides"),
                                            "dilation": _pair(dilation, "conv2d", "dilation")})


def max_pool2d(data: Any, pool_size: Any = (1, 1), strides: Any = None, padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False) -> Any:
    """Max pooling over H and W of NCHW ``data`` (strides default to ``pool_size``)."""
    _no_padding(padding, "max_pool2d")
    if ceil_mode:
        raise GraphError("max_pool2d: ceil_mode=True is not supported")
    pool = _pair(pool_size, "max_pool2d", "pool_size")
    return _call("max_pool2d", [data], {"pool_size": pool,
                                        "strides": pool if strides is None else _pair(strides, "max_pool2d", "strides"),
                                        "dilation": _pair(dilation, "max_pool2d", "dilation")})


def batch_norm(data: Any, gamma: Any, beta: Any, moving_mean: Any, moving_var: Any, axis: int = 1,
               epsilon: float = 1e-5) -> Any:
    """Inference batch normalization with running statistics along ``axis``."""
    return _call("batch_norm", [data, gamma, beta, moving_mean, moving_var],
                 {"axis": int(axis), "epsilon": float(epsilon)})


def layer_norm(data: Any, gamma: Any, beta: Any, axes: Sequence[int] | int = -1, epsilon: float = 1e-5) -> Any:
    """Layer normalization over the trailing ``axes``."""
    axes = (axes,) if isinstance(axes, int) else tuple(int(a) for a in axes)
    return _call("layer_norm", [data, gamma, beta], {"axes": axes, "epsilon": float(epsilon)})
