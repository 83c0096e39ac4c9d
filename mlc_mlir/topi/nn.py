"""Neural-network operators (the course's ``topi.nn``): matmul, dense, relu, softmax,
log_softmax, conv2d (padding, groups, depthwise), pooling (padding, ceil_mode, adaptive),
normalization and activations, on ``te`` tensors (layout NCHW / OIHW).

Padding is a ``te`` compute of its own (:func:`pad`, guarded reads); the convolution or
pooling after it reads the padded tensor with affine indices only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import TEError
from ..tensor_types import broadcast_shapes, is_float
from ..te.named import as_named
from ..te.tensor import shape_names
from ._util import check_tensor, const_int, normalize_axis, padding4, static_dim, te_dim, window_out_size, window_pair
from .. import te
from .elementwise import add, sigmoid as _sigmoid, tanh as _tanh
from .conv import conv2d, conv2d_gemm
from .pad import pad, pad_hw

__all__ = ["matmul", "dense", "relu", "softmax", "safe_softmax", "log_softmax", "conv2d", "conv2d_gemm", "pad", "pool2d", "max_pool2d",
           "avg_pool2d", "adaptive_pool", "batch_norm", "layer_norm", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"]


def _same_dim(x: Any, y: Any) -> bool:
    return shape_names((x,)) == shape_names((y,))


def _bcast(shape: Sequence[Any], idx: tuple) -> tuple:
    """Indices into batch dims ``shape`` (right-aligned to ``idx``) under NumPy broadcasting."""
    off = len(idx) - len(shape)
    return tuple(0 if isinstance(d, int) and d == 1 else idx[off + j] for j, d in enumerate(shape))


def matmul(tensor_a: Any, tensor_b: Any, bias: Any = None, transpose_a: bool = False,
           transpose_b: bool = False) -> Any:
    """``a @ b`` (+ ``bias``) with NumPy/torch ``matmul`` rules, one reduction named "matmul".

    Ranks >= 1 on either side: a rank-1 ``a`` is a row, a rank-1 ``b`` a column (that
    dimension is dropped); the batch dimensions (all but the last two) broadcast and may be
    symbolic, e.g. attention's ``(b, h, s, d) @ (b, h, d, s) -> (b, h, s, s)``.
    ``transpose_b=True`` reads ``b`` as ``(..., n, k)`` (what :func:`dense` does);
    ``transpose_a`` is for a rank-2 ``a`` stored ``(k, m)``.

    Raises:
        TEError: inner dimensions that differ, batch dimensions that do not broadcast,
            ``transpose_a`` with ``a`` not of rank 2.
    """
    check_tensor(tensor_a, "nn.matmul", "tensor_a")
    check_tensor(tensor_b, "nn.matmul", "tensor_b")
    a, b = tensor_a, tensor_b
    ra, rb = len(a.shape), len(b.shape)
    if ra < 1 or rb < 1 or (transpose_a and ra != 2):
        raise TEError(f"topi.nn.matmul: shapes {shape_names(a.shape)} @ {shape_names(b.shape)} are not "
                      "supported (ranks >= 1; transpose_a needs a rank-2 a)")
    m: tuple[Any, ...]
    n: tuple[Any, ...]
    if transpose_a:
        a_batch, m, ka = (), (a.shape[1],), a.shape[0]
    else:
        a_batch, m, ka = a.shape[:-2], a.shape[-2:-1], a.shape[-1]
    if rb == 1:
        b_batch, n, kb = (), (), b.shape[0]
    else:
        b_batch, n, kb = b.shape[:-2], (b.shape[-2] if transpose_b else b.shape[-1],), \
            (b.shape[-1] if transpose_b else b.shape[-2])
    if not _same_dim(ka, kb):
        raise TEError(f"topi.nn.matmul: inner dimensions differ: {shape_names(a.shape)} @ "
                      f"{shape_names(b.shape)} ({shape_names((ka,))[0]} vs {shape_names((kb,))[0]})")
    batch = broadcast_shapes(shape_names(a_batch), shape_names(b_batch), what="topi.nn.matmul", error=TEError)
    batch = tuple(te_dim((a, b), d) for d in batch)
    nb = len(batch)
    k = te.reduce_axis((0, ka), "k")

    def body(*i: Any) -> Any:
        bi, mi, ni = i[:nb], i[nb:nb + len(m)], i[nb + len(m):]
        ia = (k, mi[0]) if transpose_a else _bcast(a_batch, bi) + mi + (k,)
        if rb == 1:
            ib: tuple = (k,)
        else:
            ib = _bcast(b_batch, bi) + ((ni[0], k) if transpose_b else (k, ni[0]))
        return te.sum(a[ia] * b[ib], axis=k)

    out = te.compute((*batch, *m, *n), body, name="matmul")
    if (ra == rb == 3 and not transpose_a and not transpose_b and is_float(a.dtype) and a.dtype == b.dtype
            and shape_names(a_batch) == shape_names(b_batch)):
        as_named(out, "linalg.batch_matmul", (a, b))
    return out if bias is None else add(out, bias)


def dense(data: Any, weight: Any, bias: Any = None) -> Any:
    """``data @ weight.T`` (+ ``bias``): ``nn.Linear`` with ``weight`` of shape (out, in)."""
    return matmul(data, weight, bias, transpose_b=True)


def relu(x: Any) -> Any:
    """``max(x, 0)`` elementwise."""
    check_tensor(x, "nn.relu")
    return te.compute(x.shape, lambda *i: te.max(x(*i), 0), name="relu")


def _reduced(x: Any, axis: int, op: str) -> tuple[int, tuple, Any]:
    """(axis, the shape reduced along it with a size-1 dim, ``at(i, k)``: index ``i`` with ``k`` on it)."""
    check_tensor(x, op)
    n = len(x.shape)
    axis = normalize_axis(axis, n, op)

    def at(i: tuple, k: Any) -> tuple:
        return tuple(k if d == axis else i[d] for d in range(n))

    return axis, tuple(1 if d == axis else x.shape[d] for d in range(n)), at


def softmax(x: Any, axis: int = -1) -> Any:
    """``exp(x - max) * (1 / sum(exp(x - max)))`` along ``axis`` (max and sum keep a size-1
    dim; one division per row, as torch's CPU kernel)."""
    return _softmax(x, axis, "softmax", safe=False)


def safe_softmax(x: Any, axis: int = -1) -> Any:
    """:func:`softmax`, but 0 along a row whose elements are all ``-inf`` (softmax's NaN):
    ``torch._safe_softmax``, what ``scaled_dot_product_attention`` applies to a fully
    masked row."""
    return _softmax(x, axis, "safe_softmax", safe=True)


def _softmax(x: Any, axis: int, name: str, *, safe: bool) -> Any:
    axis, red_shape, at = _reduced(x, axis, f"nn.{name}")
    k1 = te.reduce_axis((0, x.shape[axis]), "k")
    mx = te.compute(red_shape, lambda *i: te.max(x[at(i, k1)], axis=k1), name="max")
    ex = te.compute(x.shape, lambda *i: te.exp(x(*i) - mx[at(i, 0)]), name="exp")
    k2 = te.reduce_axis((0, x.shape[axis]), "k")
    sm = te.compute(red_shape, lambda *i: te.sum(ex[at(i, k2)], axis=k2), name="sum")
    rs = te.compute(red_shape, lambda *i: 1.0 / sm(*i), name="inv_sum")
    if not safe:
        return te.compute(x.shape, lambda *i: ex(*i) * rs[at(i, 0)], name=name)
    return te.compute(x.shape, lambda *i: te.if_then_else(mx[at(i, 0)] == float("-inf"), 0.0,
                                                          ex(*i) * rs[at(i, 0)]), name=name)


def log_softmax(x: Any, axis: int = -1) -> Any:
    """``x - max - log(sum(exp(x - max)))`` along ``axis`` (``torch.log_softmax``)."""
    axis, red_shape, at = _reduced(x, axis, "nn.log_softmax")
    k1 = te.reduce_axis((0, x.shape[axis]), "k")
    mx = te.compute(red_shape, lambda *i: te.max(x[at(i, k1)], axis=k1), name="max")
    k2 = te.reduce_axis((0, x.shape[axis]), "k")
    sm = te.compute(red_shape, lambda *i: te.sum(te.exp(x[at(i, k2)] - mx[at(i, 0)]), axis=k2), name="sum")
    return te.compute(x.shape, lambda *i: x(*i) - mx[at(i, 0)] - te.log(sm[at(i, 0)]), name="log_softmax")


def _pool_out(size: int, k: int, s: int, d: int, before: int, after: int, ceil_mode: bool) -> tuple[int, int]:
    """(output size, extra padding after) of one pooled dimension, torch's ``ceil_mode``
    rule: the size rounds up, but the last window starts inside the input or left padding."""
    eff = d * (k - 1) + 1
    span = size + before + after - eff
    if span < 0:
        raise TEError(f"topi.nn.pool2d: (padded) input size {size + before + after} is smaller than the "
                      f"(dilated) window {eff}")
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + before:
        out -= 1
    return out, max(0, (out - 1) * s + eff - (size + before + after))


def _piecewise(i: Any, values: Sequence[int], dtype: str) -> Any:
    """``values[i]`` as a ``dtype`` expression of axis ``i`` (a select per run of equal values)."""
    runs: list[list[int]] = []
    for pos, v in enumerate(values):
        if runs and runs[-1][1] == v:
            runs[-1][0] = pos + 1
        else:
            runs.append([pos + 1, v])
    expr: Any = te.const(float(runs[-1][1]), dtype)
    for end, v in reversed(runs[:-1]):
        expr = te.if_then_else(i < end, te.const(float(v), dtype), expr)
    return expr


def _window_counts(size: int, k: int, s: int, d: int, before: int, after: int, out: int,
                   include_pad: bool) -> list[int]:
    """Per output position, the window taps inside the input (or inside input + padding)."""
    lo, hi = (-before, size + after) if include_pad else (0, size)
    return [sum(1 for t in range(k) if lo <= y * s - before + t * d < hi) for y in range(out)]


def pool2d(data: Any, kernel: Any, stride: Any, dilation: Any = 1, padding: Any = 0,
           pool_type: str = "max", ceil_mode: bool = False, layout: str = "NCHW",
           count_include_pad: bool = True) -> Any:
    """Max or average pooling over H and W of NCHW ``data`` (torch's semantics).

    ``padding`` (an int, ``(h, w)`` or ``(top, left, bottom, right)``) pads with ``-inf``
    (max) or 0 (avg) in a ``pad`` compute first. ``ceil_mode`` rounds the output size up
    (windows past the padded input see padding). The average divides by the taps inside
    the input, plus the padding when ``count_include_pad`` (never the ceil_mode overhang):
    a constant when every window has the same count, else a select on the output row/column.

    Raises:
        TEError: an unknown ``pool_type`` or layout, a window larger than the padded input.
    """
    check_tensor(data, "nn.pool2d", "data")
    if pool_type not in ("max", "avg") or layout != "NCHW" or len(data.shape) != 4:
        raise TEError(f"topi.nn.pool2d: supports pool_type 'max'/'avg' on NCHW rank-4 data, got "
                      f"{pool_type!r}, {layout!r}, shape {shape_names(data.shape)}")
    (kh, kw), (sh, sw) = window_pair(kernel, "nn.pool2d", "kernel"), window_pair(stride, "nn.pool2d", "stride")
    dh, dw = window_pair(dilation, "nn.pool2d", "dilation")
    top, left, bottom, right = padding4(padding, "nn.pool2d")
    n, c = data.shape[:2]
    h, w = (static_dim(d, "nn.pool2d", "spatial sizes") for d in data.shape[2:])
    oh, extra_h = _pool_out(h, kh, sh, dh, top, bottom, ceil_mode)
    ow, extra_w = _pool_out(w, kw, sw, dw, left, right, ceil_mode)
    lowest = -math.inf if is_float(data.dtype) else int(np.iinfo(data.dtype).min)
    src = pad_hw(data, (top, left, bottom + extra_h, right + extra_w), lowest if pool_type == "max" else 0.0)
    ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")

    def read(b: Any, ch: Any, y: Any, x: Any) -> Any:
        return src[b, ch, y * sh + ry * dh, x * sw + rx * dw]

    window = {"strides": (sh, sw), "dilations": (dh, dw), "window": (kh, kw)}
    named = is_float(data.dtype)
    if pool_type == "max":
        out = te.compute((n, c, oh, ow), lambda b, ch, y, x: te.max(read(b, ch, y, x), axis=[ry, rx]),
                         name="max_pool2d")
        return as_named(out, "linalg.pooling_nchw_max", (src,), **window) if named else out
    total = te.compute((n, c, oh, ow), lambda b, ch, y, x: te.sum(read(b, ch, y, x), axis=[ry, rx]),
                       name="sum_pool2d")
    if named:
        as_named(total, "linalg.pooling_nchw_sum", (src,), **window)
    ch_ = _window_counts(h, kh, sh, dh, top, bottom, oh, count_include_pad)
    cw_ = _window_counts(w, kw, sw, dw, left, right, ow, count_include_pad)
    if len(set(ch_)) == 1 and len(set(cw_)) == 1:
        return te.compute(total.shape, lambda *i: total(*i) / float(max(ch_[0] * cw_[0], 1)), name="avg_pool2d")
    ch_, cw_ = [max(v, 1) for v in ch_], [max(v, 1) for v in cw_]
    return te.compute(total.shape, lambda b, ch, y, x: total[b, ch, y, x] / (
        _piecewise(y, ch_, data.dtype) * _piecewise(x, cw_, data.dtype)), name="avg_pool2d")


def max_pool2d(data: Any, kernel: Any, stride: Any = None, dilation: Any = 1, padding: Any = 0,
               ceil_mode: bool = False) -> Any:
    """:func:`pool2d` with ``pool_type="max"`` (stride defaults to the kernel, like torch)."""
    return pool2d(data, kernel, kernel if stride is None else stride, dilation, padding, "max", ceil_mode)


def avg_pool2d(data: Any, kernel: Any, stride: Any = None, dilation: Any = 1, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Any:
    """:func:`pool2d` with ``pool_type="avg"`` (stride defaults to the kernel, like torch)."""
    return pool2d(data, kernel, kernel if stride is None else stride, dilation, padding, "avg", ceil_mode,
                  "NCHW", count_include_pad)


def _adaptive_dim(i: Any, r: Any, size: int, out: int) -> tuple[Any, Any, Any]:
    """(read index, in-window condition or None, window size expression) of output index
    ``i`` and tap ``r``: torch's window ``[floor(i * size / out), ceil((i + 1) * size / out))``."""
    if size % out == 0:
        return i * (size // out) + r, None, size // out
    start = i * size // out
    end = ((i + 1) * size + out - 1) // out
    return start + r, start + r < end, end - start


def adaptive_pool(data: Any, output_size: Any, pool_type: str = "avg", layout: str = "NCHW") -> Any:
    """Adaptive max/average pooling of NCHW ``data`` to ``output_size`` (torch's windows:
    output row ``i`` reduces rows ``[floor(i * H / oh), ceil((i + 1) * H / oh))``).

    ``output_size`` is an int or a pair; ``None`` (or a None entry) keeps the input size.
    Output (1, 1) is global pooling: one reduction over H and W ("sum" then
    "adaptive_avg_pool2d", or "adaptive_max_pool2d"). Windows of unequal sizes read with a
    guard (reduced over the largest window) and divide by each window's size.

    Raises:
        TEError: an unknown ``pool_type`` or layout, an output size that is not positive.
    """
    check_tensor(data, "nn.adaptive_pool", "data")
    if pool_type not in ("max", "avg") or layout != "NCHW" or len(data.shape) != 4:
        raise TEError(f"topi.nn.adaptive_pool: supports pool_type 'max'/'avg' on NCHW rank-4 data, got "
                      f"{pool_type!r}, {layout!r}, shape {shape_names(data.shape)}")
    n, c = data.shape[:2]
    h, w = (static_dim(d, "nn.adaptive_pool", "spatial sizes") for d in data.shape[2:])
    sizes = (None, None) if output_size is None else (
        (output_size, output_size) if isinstance(output_size, int) else tuple(output_size))
    if len(sizes) != 2:
        raise TEError(f"topi.nn.adaptive_pool: output_size must be an int or a pair, got {output_size!r}")
    oh, ow = (s if v is None else v for s, v in zip((h, w), sizes))
    window_pair((oh, ow), "nn.adaptive_pool", "output_size")
    name = f"adaptive_{pool_type}_pool2d"
    if (oh, ow) == (1, 1):
        rh, rw = te.reduce_axis((0, h), "rh"), te.reduce_axis((0, w), "rw")
        if pool_type == "max":
            return te.compute((n, c, 1, 1), lambda b, ch, y, x: te.max(data[b, ch, rh, rw], axis=[rh, rw]), name=name)
        total = te.compute((n, c, 1, 1), lambda b, ch, y, x: te.sum(data[b, ch, rh, rw], axis=[rh, rw]), name="sum")
        return te.compute(total.shape, lambda *i: total(*i) / float(h * w), name=name)
    kh = max(-(-(i + 1) * h // oh) - i * h // oh for i in range(oh))
    kw = max(-(-(i + 1) * w // ow) - i * w // ow for i in range(ow))
    rh, rw = te.reduce_axis((0, kh), "rh"), te.reduce_axis((0, kw), "rw")
    lowest = -math.inf if is_float(data.dtype) else int(np.iinfo(data.dtype).min)

    def window(b: Any, ch: Any, y: Any, x: Any) -> Any:
        iy, cy, _ = _adaptive_dim(y, rh, h, oh)
        ix, cx, _ = _adaptive_dim(x, rw, w, ow)
        conds = [cnd for cnd in (cy, cx) if cnd is not None]
        read = data[b, ch, iy, ix]
        if not conds:
            return read
        return te.if_then_else(te.all(*conds), read, lowest if pool_type == "max" else 0.0)

    if pool_type == "max":
        return te.compute((n, c, oh, ow), lambda *i: te.max(window(*i), axis=[rh, rw]), name=name)
    total = te.compute((n, c, oh, ow), lambda *i: te.sum(window(*i), axis=[rh, rw]), name="sum_pool2d")

    def divisor(y: Any, x: Any) -> Any:
        size_h, size_w = _adaptive_dim(y, 0, h, oh)[2], _adaptive_dim(x, 0, w, ow)[2]
        if isinstance(size_h, int) and isinstance(size_w, int):
            return float(size_h * size_w)
        return (size_h * size_w).astype(data.dtype)

    return te.compute(total.shape, lambda b, ch, y, x: total[b, ch, y, x] / divisor(y, x), name=name)


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
    total = te.compute(red_shape, lambda *i: te.sum(data[i + tuple(ks)], axis=ks), name="sum")
    cen = te.compute(data.shape, lambda *i: data(*i) - total[i[:lead]] / float(count), name="centered")
    ks2 = reduce_axes()
    sq = te.compute(red_shape, lambda *i: te.sum(cen[i + tuple(ks2)] * cen[i + tuple(ks2)], axis=ks2), name="sumsq")
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


def gelu_tanh(x: Any) -> Any:
    """``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`` (``nn.GELU(approximate="tanh")``)."""
    check_tensor(x, "nn.gelu_tanh")
    c = math.sqrt(2.0 / math.pi)
    return te.compute(x.shape, lambda *i: 0.5 * x(*i) * (1.0 + te.tanh(c * (x(*i) + 0.044715 * x(*i) * x(*i) * x(*i)))),
                      name="gelu_tanh")


def silu(x: Any) -> Any:
    """``x * sigmoid(x)`` (``nn.SiLU``)."""
    check_tensor(x, "nn.silu")
    return te.compute(x.shape, lambda *i: x(*i) * te.sigmoid(x(*i)), name="silu")


def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))``."""
    return _sigmoid(x)


def tanh(x: Any) -> Any:
    """``tanh(x)``."""
    return _tanh(x)
