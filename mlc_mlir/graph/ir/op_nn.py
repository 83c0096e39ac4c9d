"""Neural-network graph ops (``mlc.graph.op.nn``, the course's ``relax.op.nn``):
``conv2d`` (padding, groups, depthwise), ``max_pool2d``, ``avg_pool2d``,
``adaptive_avg_pool2d``, ``batch_norm`` (inference), ``layer_norm``, ``gelu_tanh``,
``silu``, ``log_softmax``, ``safe_softmax``. Layout NCHW/OIHW.

Arguments are checked and normalized here (padding becomes ``(top, left, bottom, right)``,
pairs become 2-tuples) before the shape rule (:mod:`.infer_nn`) runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import GraphError
from .op_base import _call

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "layer_norm",
           "gelu_tanh", "silu", "log_softmax", "safe_softmax"]


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pair(v: Any, op: str, what: str, minimum: int = 1) -> tuple[int, int]:
    vals = (v, v) if _int(v) else tuple(v) if isinstance(v, (tuple, list)) else ()
    if len(vals) == 1:
        vals = (vals[0], vals[0])
    if len(vals) != 2 or not all(_int(x) and x >= minimum for x in vals):
        kind = "positive" if minimum > 0 else "non-negative"
        raise GraphError(f"{op}: {what} must be a {kind} int or a pair of them, got {v!r}")
    return int(vals[0]), int(vals[1])


def _padding(padding: Any, op: str) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of an int, a pair (h, w) or a 4-tuple, as Relax reads them."""
    vals = (padding,) if _int(padding) else tuple(padding) if isinstance(padding, (tuple, list)) else ()
    if len(vals) in (1, 2):
        vals = vals * (4 // len(vals))
    if len(vals) != 4 or not all(_int(p) and p >= 0 for p in vals):
        raise GraphError(f"{op}: padding must be a non-negative int, (h, w) or (top, left, bottom, right), "
                         f"got {padding!r}")
    return tuple(int(p) for p in vals)  # type: ignore[return-value]


def _layout(value: Any, expected: str, op: str, what: str) -> None:
    if value != expected:
        raise GraphError(f"{op}: {what} {value!r} is not supported (only {expected!r})")


def conv2d(data: Any, weight: Any, strides: Any = (1, 1), padding: Any = (0, 0), dilation: Any = (1, 1),
           groups: int = 1, data_layout: str = "NCHW", kernel_layout: str = "OIHW") -> Any:
    """2-D convolution of NCHW ``data`` with OIHW ``weight`` (``relax.op.nn.conv2d``).

    ``padding``: an int, ``(h, w)`` or ``(top, left, bottom, right)`` of zeros. ``groups``:
    the weight is ``(O, C / groups, KH, KW)``; ``groups == C`` is the depthwise convolution.
    """
    _layout(data_layout, "NCHW", "conv2d", "data_layout")
    _layout(kernel_layout, "OIHW", "conv2d", "kernel_layout")
    if not _int(groups) or groups < 1:
        raise GraphError(f"conv2d: groups must be an int >= 1, got {groups!r}")
    return _call("conv2d", [data, weight], {"strides": _pair(strides, "conv2d", "strides"),
                                            "padding": _padding(padding, "conv2d"),
                                            "dilation": _pair(dilation, "conv2d", "dilation"),
                                            "groups": int(groups)})


def _pool_attrs(op: str, pool_size: Any, strides: Any, padding: Any, dilation: Any,
                ceil_mode: bool) -> dict[str, Any]:
    pool = _pair(pool_size, op, "pool_size")
    return {"pool_size": pool, "strides": pool if strides is None else _pair(strides, op, "strides"),
            "padding": _padding(padding, op), "dilation": _pair(dilation, op, "dilation"),
            "ceil_mode": bool(ceil_mode)}


def max_pool2d(data: Any, pool_size: Any = (1, 1), strides: Any = None, padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False, layout: str = "NCHW") -> Any:
    """Max pooling over H and W of NCHW ``data`` (``relax.op.nn.max_pool2d``; torch's
    semantics): strides default to ``pool_size``; padding of ``-inf``; ``ceil_mode`` rounds
    the output size up while the last window starts inside the input or left padding."""
    _layout(layout, "NCHW", "max_pool2d", "layout")
    return _call("max_pool2d", [data], _pool_attrs("max_pool2d", pool_size, strides, padding, dilation,
                                                   ceil_mode))


def avg_pool2d(data: Any, pool_size: Any = (1, 1), strides: Any = None, padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False, count_include_pad: bool = True,
               layout: str = "NCHW") -> Any:
    """Average pooling over H and W of NCHW ``data`` (``relax.op.nn.avg_pool2d``; torch's
    divisor: the window's taps inside the input, plus its padding when ``count_include_pad``)."""
    _layout(layout, "NCHW", "avg_pool2d", "layout")
    attrs = _pool_attrs("avg_pool2d", pool_size, strides, padding, dilation, ceil_mode)
    return _call("avg_pool2d", [data], {**attrs, "count_include_pad": bool(count_include_pad)})


def adaptive_avg_pool2d(data: Any, output_size: Any = None, layout: str = "NCHW") -> Any:
    """Average pooling of NCHW ``data`` to ``output_size`` (an int or a pair; None, or a None
    entry, keeps the input size) with torch's windows ``[floor(i*H/o), ceil((i+1)*H/o))``
    (``relax.op.nn.adaptive_avg_pool2d``). Output (1, 1) is global average pooling."""
    _layout(layout, "NCHW", "adaptive_avg_pool2d", "layout")
    attrs: dict[str, Any] = {}
    if output_size is not None:
        sizes = (output_size, output_size) if _int(output_size) else tuple(output_size)
        if len(sizes) == 1:
            sizes = sizes * 2
        if len(sizes) != 2 or not all(s is None or (_int(s) and s > 0) for s in sizes):
            raise GraphError(f"adaptive_avg_pool2d: output_size must be a positive int or a pair of them "
                             f"(None keeps the input size), got {output_size!r}")
        shape = getattr(data, "shape", None)
        if any(s is None for s in sizes) and shape is not None and len(shape) == 4:
            sizes = tuple(d if s is None else s for s, d in zip(sizes, shape[2:]))
        if any(s is None for s in sizes):
            raise GraphError(f"adaptive_avg_pool2d: output_size {output_size!r} keeps a size of data "
                             f"of shape {shape}; pass NCHW data")
        attrs["output_size"] = tuple(int(s) for s in sizes)
    return _call("adaptive_avg_pool2d", [data], attrs)


def batch_norm(data: Any, gamma: Any, beta: Any, moving_mean: Any, moving_var: Any, axis: int = 1,
               epsilon: float = 1e-5) -> Any:
    """Inference batch normalization with running statistics along ``axis``."""
    return _call("batch_norm", [data, gamma, beta, moving_mean, moving_var],
                 {"axis": int(axis), "epsilon": float(epsilon)})


def layer_norm(data: Any, gamma: Any, beta: Any, axes: Sequence[int] | int = -1, epsilon: float = 1e-5) -> Any:
    """Layer normalization over the trailing ``axes``."""
    axes = (axes,) if isinstance(axes, int) else tuple(int(a) for a in axes)
    return _call("layer_norm", [data, gamma, beta], {"axes": axes, "epsilon": float(epsilon)})


def gelu_tanh(x: Any) -> Any:
    """``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))`` elementwise
    (``relax.op.nn.gelu_tanh``, torch's ``gelu(approximate="tanh")``)."""
    return _call("gelu_tanh", [x])


def silu(x: Any) -> Any:
    """``x * sigmoid(x)`` elementwise (``relax.op.nn.silu``)."""
    return _call("silu", [x])


def log_softmax(x: Any, axis: int = -1) -> Any:
    """``x - log(sum(exp(x)))`` along ``axis``, computed stably (``relax.op.nn.log_softmax``)."""
    if not _int(axis):
        raise GraphError(f"log_softmax: axis must be an int, got {axis!r}")
    return _call("log_softmax", [x], {"axis": int(axis)})


def safe_softmax(x: Any, axis: int = -1) -> Any:
    """Softmax along ``axis``, but 0 along a row whose elements are all ``-inf`` (where
    softmax gives NaN): ``torch._safe_softmax``, what ``scaled_dot_product_attention``
    applies to its scores (a fully masked row). No Relax counterpart; one kernel, where its
    decomposition (softmax, ``x == -inf``, ``all``, ``where``) takes four passes."""
    if not _int(axis):
        raise GraphError(f"safe_softmax: axis must be an int, got {axis!r}")
    return _call("safe_softmax", [x], {"axis": int(axis)})
