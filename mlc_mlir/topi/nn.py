"""Neural-network operators (the course's ``topi.nn``): matmul, dense, relu, softmax,
conv2d, pooling, normalization and activations, on ``te`` tensors (layout NCHW / OIHW)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import TEError
from ._util import check_tensor, const_int, normalize_axis
from .. import te
from .elementwise import add, sigmoid as _sigmoid, tanh as _tanh

__all__ = ["matmul", "dense", "relu", "softmax", "conv2d", "pool2d", "max_pool2d", "avg_pool2d",
           "batch_norm", "layer_norm", "gelu", "sigmoid", "tanh"]


def matmul(tensor_a: Any, tensor_b: Any, bias: Any = None, transpose_a: bool = False,
           transpose_b: bool = False) -> Any:
    """``a @ b`` (+ ``bias``) for ``a`` of rank >= 1 and ``b`` of rank 1 or 2, one reduction.

    ``transpose_b=True`` reads ``b`` as ``(n, k)`` (what :func:`dense` does); ``transpose_a``
    is for a rank-2 ``a`` stored ``(k, m)``.
    """
    check_tensor(tensor_a, "nn.matmul", "tensor_a")
    check_tensor(tensor_b, "nn.matmul", "tensor_b")
    a, b = tensor_a, tensor_b
    if len(b.shape) not in (1, 2) or (transpose_a and len(a.shape) != 2):
        raise TEError(f"topi.nn.matmul: shapes {a.shape} @ {b.shape} are not supported (b of rank 1 "
                      "or 2; transpose_a needs a rank-2 a)")
    ka = a.shape[0] if transpose_a else a.shape[-1]
    k = te.reduce_axis((0, ka), "k")

    def read_a(i: tuple) -> Any:
        return a[k, i[0]] if transpose_a else a[(*i, k)]

    if len(b.shape) == 1:
        lead = (a.shape[1],) if transpose_a else a.shape[:-1]
        out = te.compute(lead, lambda *i: te.sum(read_a(i) * b[k], axis=k), name="matmul")
    else:
        lead = (a.shape[1],) if transpose_a else a.shape[:-1]
        n = b.shape[0] if transpose_b else b.shape[-1]

        def body(*i: Any) -> Any:
            rb = b[i[-1], k] if transpose_b else b[k, i[-1]]
            return te.sum(read_a(i[:-1]) * rb, axis=k)

        out = te.compute((*lead, n), body, name="matmul")
    if bias is None:
        return out

    return add(out, bias)


def dense(data: Any, weight: Any, bias: Any = None) -> Any:
    """``data @ weight.T`` (+ ``bias``): ``nn.Linear`` with ``weight`` of shape (out, in)."""
    return matmul(data, weight, bias, transpose_b=True)


def relu(x: Any) -> Any:
    """``max(x, 0)`` elementwise."""
    check_tensor(x, "nn.relu")
    return te.compute(x.shape, lambda *i: te.max(x(*i), 0), name="relu")


def softmax(x: Any, axis: int = -1) -> Any:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (max and sum keep a size-1 dim)."""
    check_tensor(x, "nn.softmax")
    n = len(x.shape)
    axis = normalize_axis(axis, n, "nn.softmax")
    red_shape = tuple(1 if d == axis else x.shape[d] for d in range(n))

    def at(i: tuple, k: Any) -> tuple:
        return tuple(k if d == axis else i[d] for d in range(n))

    k1 = te.reduce_axis((0, x.shape[axis]), "k")
    mx = te.compute(red_shape, lambda *i: te.max(x[at(i, k1)], axis=k1), name="max")
    ex = te.compute(x.shape, lambda *i: te.exp(x(*i) - mx[at(i, 0)]), name="exp")
    k2 = te.reduce_axis((0, x.shape[axis]), "k")
    sm = te.compute(red_shape, lambda *i: te.sum(ex[at(i, k2)], axis=k2), name="sum")
    return te.compute(x.shape, lambda *i: ex(*i) / sm[at(i, 0)], name="softmax")


def _pair(value: Any, op: str, what: str) -> tuple[int, int]:
    vals = (value, value) if isinstance(value, int) else tuple(value)
    if len(vals) != 2:
        raise TEError(f"topi.{op}: {what} must be an int or a pair, got {value!r}")
    return const_int(vals[0], op, what), const_int(vals[1], op, what)


def _no_padding(padding: Any, op: str) -> None:
    if padding is None:
        return
    pads = (padding,) if isinstance(padding, int) else tuple(padding)
    if any(p != 0 for p in pads):
        raise TEError(f"topi.{op}: padding {padding!r} is not supported (only 0: reads out of the "
                      "input cannot be expressed as linalg indexing maps); pad the input first")


def _out_size(size: Any, kernel: int, stride: int, dilation: int, op: str) -> int:
    if not isinstance(size, int):
        raise TEError(f"topi.{op}: spatial dimensions must be static, got {size}")
    out = (size - dilation * (kernel - 1) - 1) // stride + 1
    if out <= 0:
        raise TEError(f"topi.{op}: input size {size} is smaller than the kernel {kernel}")
    return out


def conv2d(data: Any, kernel: Any, strides: Any = 1, padding: Any = 0, dilation: Any = 1,
           data_layout: str = "NCHW") -> Any:
    """2-D convolution, ``data`` (N, C, H, W) with ``kernel`` (F, C, KH, KW) -> (N, F, OH, OW).

    Raises:
        TEError: a layout other than NCHW, non-zero padding, or mismatched channels.
    """
    check_tensor(data, "nn.conv2d", "data")
    check_tensor(kernel, "nn.conv2d", "kernel")
    if data_layout != "NCHW" or len(data.shape) != 4 or len(kernel.shape) != 4:
        raise TEError(f"topi.nn.conv2d: needs NCHW data and OIHW kernel of rank 4, got layout "
                      f"{data_layout!r}, shapes {data.shape} and {kernel.shape}")
    _no_padding(padding, "nn.conv2d")
    sh, sw = _pair(strides, "nn.conv2d", "strides")
    dh, dw = _pair(dilation, "nn.conv2d", "dilation")
    n, c, h, w = data.shape
    f, kc, kh, kw = kernel.shape
    if kc != c:
        raise TEError(f"topi.nn.conv2d: data has {c} channels, kernel expects {kc} (groups are not supported)")
    oh, ow = _out_size(h, kh, sh, dh, "nn.conv2d"), _out_size(w, kw, sw, dw, "nn.conv2d")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    return te.compute((n, f, oh, ow), lambda b, o, y, x: te.sum(
        data[b, rc, y * sh + ry * dh, x * sw + rx * dw] * kernel[o, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv2d")


def pool2d(data: Any, kernel: Any, stride: Any, dilation: Any = 1, padding: Any = 0,
           pool_type: str = "max", ceil_mode: bool = False, layout: str = "NCHW") -> Any:
    """Max or average pooling over the last two dimensions of NCHW ``data``."""
    check_tensor(data, "nn.pool2d", "data")
    if pool_type not in ("max", "avg") or layout != "NCHW" or ceil_mode or len(data.shape) != 4:
        raise TEError(f"topi.nn.pool2d: supports pool_type 'max'/'avg', NCHW rank-4 data, no ceil_mode; "
                      f"got {pool_type!r}, {layout!r}, ceil_mode={ceil_mode}, shape {data.shape}")
    _no_padding(padding, "nn.pool2d")
    kh, kw = _pair(kernel, "nn.pool2d", "kernel")
    sh, sw = _pair(stride, "nn.pool2d", "stride")
    dh, dw = _pair(dilation, "nn.pool2d", "dilation")
    n, c, h, w = data.shape
    oh, ow = _out_size(h, kh, sh, dh, "nn.pool2d"), _out_size(w, kw, sw, dw, "nn.pool2d")
    ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")

    def read(b: Any, ch: Any, y: Any, x: Any) -> Any:
        return data[b, ch, y * sh + ry * dh, x * sw + rx * dw]

    if pool_type == "max":
        return te.compute((n, c, oh, ow), lambda b, ch, y, x: te.max(read(b, ch, y, x), axis=[ry, rx]),
                          name="max_pool2d")
    total = te.compute((n, c, oh, ow), lambda b, ch, y, x: te.sum(read(b, ch, y, x), axis=[ry, rx]),
                       name="sum_pool2d")
    return te.compute(total.shape, lambda *i: total(*i) / float(kh * kw), name="avg_pool2d")


def max_pool2d(data: Any, kernel: Any, stride: Any = None, dilation: Any = 1, padding: Any = 0) -> Any:
    """:func:`pool2d` with ``pool_type="max"`` (stride defaults to the kernel, like torch)."""
    return pool2d(data, kernel, kernel if stride is None else stride, dilation, padding, "max")


def avg_pool2d(data: Any, kernel: Any, stride: Any = None, dilation: Any = 1, padding: Any = 0) -> Any:
    """:func:`pool2d` with ``pool_type="avg"``."""
    return pool2d(data, kernel, kernel if stride is None else stride, dilation, padding, "avg")


def batch_norm(data: Any, gamma: Any, beta: Any, moving_mean: Any, moving_var: Any, axis: int = 1,
               epsilon: float = 1e-5) -> Any:
    """Inference batch normalization along ``axis``:
    ``(x - mean) / sqrt(var + eps) * gamma + beta`` with per-channel 1-D statistics."""
    for t in (data, gamma, beta, moving_mean, moving_var):
        check_tensor(t, "nn.batch_norm")
    axis = normalize_axis(axis, len(data.shape), "nn.batch_norm")

    def body(*i: Any) -> Any:
        ch = i[axis]
        scale = gamma[ch] * te.rsqrt(moving_var[ch] + float(epsilon))
        return (data(*i) - moving_mean[ch]) * scale + beta[ch]

    return te.compute(data.shape, body, name="batch_norm")


def layer_norm(data: Any, gamma: Any, beta: Any, axis: Sequence[int] | int = -1,
               epsilon: float = 1e-5) -> Any:
    """Layer normalization over the trailing ``axis`` dimensions (``nn.LayerNorm``):
    ``(x - mean) / sqrt(var + eps) * gamma + beta``, ``gamma``/``beta`` of those dims' shape."""
    for t in (data, gamma, beta):
        check_tensor(t, "nn.layer_norm")
    n = len(data.shape)
    axes = sorted(normalize_axis(a, n, "nn.layer_norm") for a in ((axis,) if isinstance(axis, int) else axis))
    if axes != list(range(n - len(axes), n)):
        raise TEError(f"topi.nn.layer_norm: axes {axes} must be the trailing dimensions of rank {n}")
    lead = n - len(axes)
    count = 1
    for a in axes:
        if not isinstance(data.shape[a], int):
            raise TEError(f"topi.nn.layer_norm: normalized dimension {data.shape[a]} must be static")
        count *= data.shape[a]
    red_shape = tuple(data.shape[:lead])

    def reduce_axes() -> list:
        return [te.reduce_axis((0, data.shape[a]), f"k{a}") for a in axes]

    ks = reduce_axes()
    total = te.compute(red_shape, lambda *i: te.sum(data[(*i, *ks)], axis=ks), name="sum")
    cen = te.compute(data.shape, lambda *i: data(*i) - total[i[:lead]] / float(count), name="centered")
    ks2 = reduce_axes()
    sq = te.compute(red_shape, lambda *i: te.sum(cen[(*i, *ks2)] * cen[(*i, *ks2)], axis=ks2), name="sumsq")
    return te.compute(data.shape, lambda *i: cen(*i) * te.rsqrt(sq[i[:lead]] / float(count) + float(epsilon))
                      * gamma[i[lead:]] + beta[i[lead:]], name="layer_norm")


def _erf(x: Any) -> Any:
    """erf(x) (Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7)."""
    a1, a2, a3, a4, a5, p = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429, 0.3275911
    ax = te.abs(x)
    t = 1.0 / (1.0 + p * ax)
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    y = 1.0 - poly * te.exp(-(ax * ax))
    return te.if_then_else(x >= 0.0, y, -y)


def gelu(x: Any) -> Any:
    """``0.5 * x * (1 + erf(x / sqrt(2)))`` (``nn.GELU()``, the exact form)."""
    check_tensor(x, "nn.gelu")
    inv = 1.0 / math.sqrt(2.0)
    return te.compute(x.shape, lambda *i: 0.5 * x(*i) * (1.0 + _erf(x(*i) * inv)), name="gelu")


def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))``."""
    return _sigmoid(x)


def tanh(x: Any) -> Any:
    """``tanh(x)``."""
    return _tanh(x)
