"""Convolutions on ``te`` tensors (layout NCHW / OIHW): the direct form (:func:`conv2d`,
grouped and depthwise included) and the im2col + matrix-multiplication form
(:func:`conv2d_gemm`) that the graph layer legalizes ``groups == 1`` convolutions to.

Why two forms: the direct form's reads (``y * stride + ry``) are not plain loop
dimensions, so the default schedule rules see no contraction in it and leave it a scalar
loop nest; the im2col form moves those reads into a copy (``im2col``) and leaves a plain
contraction over (channel, ky, kx) that the rules tile like a matmul. Measured on a 2-core
AVX-512 host: ResNet-18's 3x3 convolution 1x64x56x56 runs about 60x faster this way.
"""

from __future__ import annotations

from typing import Any

from ..errors import TEError
from ..te.named import as_named
from ..te.tensor import shape_names
from ..tensor_types import is_float
from ._util import check_tensor, const_int, padding4, static_dim, window_out_size, window_pair
from .. import te
from .pad import pad_hw

__all__ = ["conv2d", "conv2d_gemm"]


def conv2d(data: Any, kernel: Any, strides: Any = 1, padding: Any = 0, dilation: Any = 1,
           data_layout: str = "NCHW", groups: int = 1) -> Any:
    """2-D convolution, ``data`` (N, C, H, W) with ``kernel`` (F, C/groups, KH, KW) -> (N, F, OH, OW).

    ``padding`` is an int, ``(h, w)`` or ``(top, left, bottom, right)`` of zeros: a ``pad``
    compute first, then the convolution reads the padded tensor. ``groups > 1`` is one
    compute "group_conv2d" (input channel ``o // (F / groups) * (C / groups) + rc``); a
    kernel (F, 1, KH, KW) with ``groups == C`` is "depthwise_conv2d" (no channel
    reduction). The batch may be symbolic; channels and spatial sizes are static.

    Raises:
        TEError: a layout other than NCHW, channels that do not match the kernel and
            ``groups``, a kernel larger than the padded input.
    """
    check_tensor(data, "nn.conv2d", "data")
    check_tensor(kernel, "nn.conv2d", "kernel")
    if data_layout != "NCHW" or len(data.shape) != 4 or len(kernel.shape) != 4:
        raise TEError(f"topi.nn.conv2d: needs NCHW data and OIHW kernel of rank 4, got layout "
                      f"{data_layout!r}, shapes {shape_names(data.shape)} and {shape_names(kernel.shape)}")
    (sh, sw), (dh, dw) = window_pair(strides, "nn.conv2d", "strides"), window_pair(dilation, "nn.conv2d", "dilation")
    pads = padding4(padding, "nn.conv2d")
    if const_int(groups, "nn.conv2d", "groups") < 1:
        raise TEError(f"topi.nn.conv2d: groups must be >= 1, got {groups}")
    n = data.shape[0]
    c, h, w = (static_dim(d, "nn.conv2d", "data channels and spatial sizes") for d in data.shape[1:])
    f, kc, kh, kw = (static_dim(d, "nn.conv2d", "kernel dimensions") for d in kernel.shape)
    if c != kc * groups:
        per = "" if groups == 1 else f" per group x {groups} groups"
        raise TEError(f"topi.nn.conv2d: data has {c} channels, kernel expects {kc}{per}")
    if f % groups:
        raise TEError(f"topi.nn.conv2d: {f} output channels do not split into {groups} groups")
    top, left, bottom, right = pads
    oh = window_out_size(h + top + bottom, kh, sh, dh, "nn.conv2d")
    ow = window_out_size(w + left + right, kw, sw, dw, "nn.conv2d")
    src = pad_hw(data, pads, 0.0)
    ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")

    def read(b: Any, ch: Any, y: Any, x: Any) -> Any:
        return src[b, ch, y * sh + ry * dh, x * sw + rx * dw]

    window = {"strides": (sh, sw), "dilations": (dh, dw)}
    named = is_float(data.dtype) and data.dtype == kernel.dtype
    if groups > 1 and kc == 1:
        mult = f // c
        out = te.compute((n, f, oh, ow), lambda b, o, y, x: te.sum(
            read(b, o // mult if mult > 1 else o, y, x) * kernel[o, 0, ry, rx], axis=[ry, rx]),
            name="depthwise_conv2d")
        if named and mult == 1:
            as_named(out, "linalg.depthwise_conv_2d_nchw_chw", (src, kernel), **window)
        return out
    rc = te.reduce_axis((0, kc), "rc")
    per_group = f // groups
    out = te.compute((n, f, oh, ow), lambda b, o, y, x: te.sum(
        read(b, rc if groups == 1 else o // per_group * kc + rc, y, x) * kernel[o, rc, ry, rx],
        axis=[rc, ry, rx]), name="conv2d" if groups == 1 else "group_conv2d")
    if named and groups == 1:
        as_named(out, "linalg.conv_2d_nchw_fchw", (src, kernel), **window)
    return out


def conv2d_gemm(data: Any, kernel: Any, strides: Any = 1, padding: Any = 0, dilation: Any = 1, *,
                gather: bool = False) -> Any:
    """:func:`conv2d` with ``groups == 1`` as im2col + a contraction (same results).

    Four computes: ``pad`` (if any), ``im2col`` (``col[c, ky, kx, p]`` = the input pixel
    kernel tap (ky, kx) of channel c reads for output pixel p; written as a sum over one
    element, so that FuseTIR's elementwise fusion, which inlines all-parallel producers
    into their consumers, leaves it a buffer of its own: inlined into the contraction it
    would turn every multiply-add into a clamped gather), ``conv2d_gemm``
    (``y[f, p] = sum(kernel[f, c, ky, kx] * col[c, ky, kx, p])``: plain indices, tiled like
    a matmul by the rules) and ``conv2d`` (``y`` back in NCHW). A batch of more than one
    image (or a symbolic one) is a batch dimension of im2col and of the contraction: one
    im2col of all the images' pixels in one dimension (p = n * OH * OW + ...) was 2.3x
    slower per element at batch 8 (ResNet-18's 3x3 convolution of 64 channels at 56x56:
    17.4 ms against 0.94 ms for one image; its index arithmetic and a 58 MB buffer), and the
    whole convolution 87 ms against 64 ms this way.

    ``gather=True`` makes im2col an all-parallel compute reading the input with
    ``tensor.extract`` (its row index clamped): the default rules vectorize it as gathers
    (0.18 ms against 0.94 ms for the layer above), but elementwise fusion would inline it
    into the contraction, so it is for programs that are not fused afterwards (the default
    schedule's convolution strategy).

    Raises:
        TEError: as :func:`conv2d`.
    """
    check_tensor(data, "nn.conv2d_gemm", "data")
    check_tensor(kernel, "nn.conv2d_gemm", "kernel")
    if len(data.shape) != 4 or len(kernel.shape) != 4:
        raise TEError(f"topi.nn.conv2d_gemm: needs NCHW data and OIHW kernel of rank 4, got shapes "
                      f"{shape_names(data.shape)} and {shape_names(kernel.shape)}")
    (sh, sw), (dh, dw) = window_pair(strides, "nn.conv2d", "strides"), window_pair(dilation, "nn.conv2d", "dilation")
    pads = padding4(padding, "nn.conv2d")
    n = data.shape[0]
    c, h, w = (static_dim(d, "nn.conv2d", "data channels and spatial sizes") for d in data.shape[1:])
    f, kc, kh, kw = (static_dim(d, "nn.conv2d", "kernel dimensions") for d in kernel.shape)
    if c != kc:
        raise TEError(f"topi.nn.conv2d_gemm: data has {c} channels, kernel expects {kc}")
    top, left, bottom, right = pads
    oh = window_out_size(h + top + bottom, kh, sh, dh, "nn.conv2d")
    ow = window_out_size(w + left + right, kw, sw, dw, "nn.conv2d")
    src = pad_hw(data, pads, 0.0, named=False)  # a generic, fused into im2col
    pixels = oh * ow
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    one = te.reduce_axis((0, 1), "one")
    last_row = h + top + bottom - 1

    def tap(b: Any, ch: Any, ky: Any, kx: Any, p: Any) -> Any:
        row = p // ow * sh + ky * dh
        return src[b, ch, te.min(row, last_row) if gather else row, p % ow * sw + kx * dw]

    def im2col(value: Any) -> Any:
        return value if gather else te.sum(value, axis=one)

    if isinstance(n, int) and n == 1:
        col = te.compute((c, kh, kw, pixels), lambda ch, ky, kx, p: im2col(tap(0, ch, ky, kx, p)), name="im2col")
        y = te.compute((f, n * pixels), lambda o, p: te.sum(kernel[o, rc, ry, rx] * col[rc, ry, rx, p],
                                                            axis=[rc, ry, rx]), name="conv2d_gemm")
        return te.compute((n, f, oh, ow), lambda b, o, i, j: y[o, b * pixels + i * ow + j], name="conv2d")
    col = te.compute((n, c, kh, kw, pixels), lambda b, ch, ky, kx, p: im2col(tap(b, ch, ky, kx, p)), name="im2col")
    y = te.compute((n, f, pixels), lambda b, o, p: te.sum(kernel[o, rc, ry, rx] * col[b, rc, ry, rx, p],
                                                          axis=[rc, ry, rx]), name="conv2d_gemm")
    return te.compute((n, f, oh, ow), lambda b, o, i, j: y[b, o, i * ow + j], name="conv2d")
