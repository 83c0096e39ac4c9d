"""The pooling and depthwise-convolution strategy of the default schedule: window ops ->
one all-parallel compute with the window's taps unrolled.

Legalization gives max / sum pooling and depthwise convolutions as upstream's named ops
(after a ``tensor.pad`` of their input)::

    %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] { yield -inf }
    %y = linalg.pooling_nchw_max {mlc.block = "max_pool2d", strides = 2} ins(%p, %window) outs(%ninf)

The rules find no contraction in them (their reads ``y * stride + ky`` are not plain loop
dimensions), so they ran as scalar loop nests, and the padded copy of the input is a
strided ``memref.copy``. :func:`windows_to_taps` replaces each by a tensor program with
one compute per output element, ``max(init, tap(0, 0), tap(0, 1), ...)`` (``init + sum of
taps``; ``init + sum of tap * w[c, ky, kx]`` for depthwise), each tap reading the unpadded
input (a depthwise kernel passed as one ``(C,)`` slice per tap). A window of stride 1
reads the input padded once (a compute of its own) at affine indices: along the output
width a stride-1 tap reads consecutive pixels, so the compute runs as row loads with its
outer loop in parallel (MobileNet-v2's depthwise 3x3 at 32 channels, 112x112, stride 1,
2 cores: 2.1 ms as gathers, 0.30 ms this way, torch 0.4 ms; 144 channels at 56x56: 1.12
-> 0.40 ms) -- but a stride-1 depthwise convolution of wide rows (:func:`reads_in_place`),
which reads in place since the gathers' interior runs are branch-free (0.40 -> 0.25 ms for
the 144 channels at 56x56 on one AVX-512 core). A strided window (pooling or depthwise)
reads the unpadded input in place (``te.if_then_else`` on the padding, the pad value
outside, the index clamped), which the elementwise rule vectorizes along the output width
as gathers, run in parallel; the
build loads every gather whose clamps are inactive as one run of ``stride * lanes``
elements and a shuffle (:mod:`mlc_mlir.compiler.gathers`), so only the border vectors
gather. MobileNet-v2's 96-channel stride-2 depthwise layer (112 -> 56, one image, one
thread): 2.4 ms read from its padded stride phases (a compute each, 38 MB at batch 8),
0.8-1.1 ms in place (0.47-0.61 since the interior's runs are branch-free). A narrow strided
depthwise convolution (:func:`reads_in_place`: rows of 14 or 7 pixels, all of their vectors
touching the border) reads its input
padded and split in its stride phases (:func:`_phases`: phase ``(py,
px)`` holds the padded pixels ``(s * r + py, s * q + px)``), every tap a unit-stride shift
of one phase, so the taps are elementwise and the rules fuse the epilogue on their rows.
ResNet-18's 3x3 max pooling (64 x 112 x 112, stride 2): 3.4 ms as
named op, 0.74 ms in place as gathers (1.19 ms padded; torch's NCHW max pooling: 3.1-4.5 ms).

Ops this does not take (an init that is not a fill of a float constant, a padding that is
not a float constant, windows over :data:`MAX_TAPS` taps, a dynamic dimension other than
the batch, non-f32 types) stay named ops: the build lowers them to loops.
"""

from __future__ import annotations

import math
from typing import Any

from mlir import ir
from mlir.dialects import tensor

from .. import te
from ..topi.pad import pad_hw, padded_pixel
from ..ir import Module
from ..irutil import symbol_ops
from .rewrite_named import constant_fill, pad_by_copy, pad_hw_source, rename_blocks, rewrite_named, static_shape

__all__ = ["windows_to_taps", "reads_in_place", "WINDOW_OPS", "MAX_TAPS", "IN_PLACE_WIDTH"]

MAX_POOL, SUM_POOL, DEPTHWISE = "linalg.pooling_nchw_max", "linalg.pooling_nchw_sum", "linalg.depthwise_conv_2d_nchw_chw"
#: the window ops rewritten
WINDOW_OPS = (MAX_POOL, SUM_POOL, DEPTHWISE)
#: windows of more taps stay named ops (the unrolled compute grows with the window)
MAX_TAPS = 64
#: a strided depthwise convolution reads its input in place from this output width on (most
#: of a row's vectors then lie inside the image, loaded as runs): :func:`reads_in_place`
IN_PLACE_WIDTH = 48
#: narrower ones whose width is a multiple of this (rows of 4-lane vectors) read in place too
IN_PLACE_LANES = 4
#: the padded copy of a stride-1 window's input, and the stride phases, have rows of a
#: multiple of this many columns (the copies' vectors all of 8 lanes, see
#: :func:`.rule_elementwise.vector_factor`); the taps read the columns they need
PAD_ROW_MULTIPLE = 8


def windows_to_taps(mod: Module) -> Module:
    """``mod`` with every pooling / depthwise convolution of :data:`WINDOW_OPS` that it can
    take as one all-parallel compute of unrolled taps (a copy; ``mod`` itself when it has none)."""
    return rewrite_named(mod, WINDOW_OPS, _helper, "window-taps")


def reads_in_place(out_width: int) -> bool:
    """Whether a depthwise convolution whose output rows are ``out_width`` pixels reads its
    input in place rather than from its stride phases (strided) or a padded copy (stride 1).

    In place, a vector whose lanes miss the image's border is loaded as a run (the column
    loop peeled, the interior's runs branch-free: :mod:`mlc_mlir.compiler.gathers`); one that
    touches it gathers. Rows of at least :data:`IN_PLACE_WIDTH` pixels read in place, and rows
    of whole 4-lane vectors (a multiple of :data:`IN_PLACE_LANES`, at least four of them).
    MobileNet-v2, one thread: 112 -> 56 at 96 channels, one image: phases 1.6-2.4 ms, in
    place 0.47-0.61; 56 -> 28 at 144 channels, one image: phases 0.35 ms, in place 0.22 (two
    threads 0.30 -> 0.11; before the peeled runs in place was 0.54, and the phases stayed
    where they fit in 4 MB); rows of 14 pixels: phases 0.17 ms, in place 0.30."""
    if out_width >= IN_PLACE_WIDTH:
        return True
    return out_width % IN_PLACE_LANES == 0 and out_width >= 4 * IN_PLACE_LANES


def _phases(a: Any, window: tuple[int, int], strides: tuple[int, int], dilations: tuple[int, int],
            pads: tuple[int, int, int, int], value: float, out_hw: tuple[int, int]) -> dict[tuple[int, int], Any]:
    """The padded input of a strided window split in its stride phases: phase ``(py, px)``
    holds ``padded[n, c, sh * r + py, sw * q + px]``, so tap ``(ky, kx)`` reads phase
    ``(ky * dh % sh, kx * dw % sw)`` at ``[y + ky * dh // sh, x + kx * dw // sw]``; each
    phase holds the rows and columns its taps reach. (Phases for strided max pooling
    measured slower than its in-place gathers: ResNet-18's, 5.7 -> 6.2 ms at batch 8.)"""
    (kh, kw), (sh, sw), (dh, dw) = window, strides, dilations
    top, left, _, _ = pads
    oh, ow = out_hw
    reach: dict[tuple[int, int], list[int]] = {}
    for ky in range(kh):
        for kx in range(kw):
            (qy, py), (qx, px) = divmod(ky * dh, sh), divmod(kx * dw, sw)
            rows, cols = reach.setdefault((py, px), [0, 0])
            reach[py, px] = [max(rows, qy), max(cols, qx)]
    out = {}
    for (py, px), (qy, qx) in sorted(reach.items()):
        def body(n: Any, c: Any, r: Any, q: Any, py: int = py, px: int = px) -> Any:
            return padded_pixel(a, n, c, r * sh + (py - top), q * sw + (px - left), pads, value)
        # (rows of whole vectors, as the stride-1 padded copy's)
        width = ow + qx + (-(ow + qx) % PAD_ROW_MULTIPLE)
        out[py, px] = te.compute((a.shape[0], a.shape[1], oh + qy, width), body, name=f"pad{py}{px}")
    return out


def _pair(op: ir.Operation, name: str) -> tuple[int, int]:
    if name not in op.attributes:
        return 1, 1
    a, b = (int(v) for v in ir.DenseIntElementsAttr(op.attributes[name]))
    return a, b


def _f32(value: ir.Value) -> bool:
    return str(ir.RankedTensorType(value.type).element_type) == "f32"


def _helper(op: ir.Operation, name: str) -> tuple[list[ir.Value], Module] | None:
    """([data, (kernel,) destination], a module holding the tensor program ``name``), or
    None when this op stays named."""
    kind = op.name
    window, init = op.operands[1], op.operands[2]
    data, pads, pad_value = pad_hw_source(op.operands[0])
    fill = constant_fill(init)
    if fill is None or not all(_f32(v) for v in (data, init)) or (kind == DEPTHWISE and not _f32(window)):
        return None
    dest, start = fill
    dshape, wshape = static_shape(data.type), static_shape(window.type)
    if None in dshape[1:] or None in wshape or len(dshape) != 4:
        return None
    kh, kw = wshape[-2:]
    if kh * kw > MAX_TAPS:
        return None
    (sh, sw), (dh, dw) = _pair(op, "strides"), _pair(op, "dilations")
    oshape = static_shape(init.type)
    a = te.placeholder(tuple("n" if d is None else d for d in dshape), name="data")
    # depthwise: one (C,) slice of the kernel per tap (a read w[c, 1, 2] at constant indices
    # is no projected permutation, which linalg's vectorizer needs)
    taps_w = ({(ky, kx): te.placeholder((wshape[0],), name=f"kernel_{ky}_{kx}") for ky in range(kh) for kx in range(kw)}
              if kind == DEPTHWISE else None)
    top, left, _, _ = pads

    # padded once, then affine reads (row loads along the output width, the outer loop in
    # parallel): a window of stride 1; a strided window reads the input in place, clamped
    # (gathers, whose interior vectors the build loads as runs: compiler/gathers.py), but
    # for a narrow depthwise convolution, which reads its stride phases
    value_pad = pad_value if pad_value is not None else 0.0
    padded = None
    # (a stride-1 depthwise convolution of wide rows reads in place too: the padded copy
    # cost more than the clamped runs it replaces -- MobileNet-v2's 144 channels at 56 x 56,
    # one image, one thread, AVX-512: 0.40 -> 0.25 ms, eight images 3.6 -> 1.9; 32 at 112 x
    # 112 0.27 -> 0.19; 192 at 28 x 28 0.14 -> 0.12; AVX2 code on the same host 0.33 -> 0.29,
    # 0.28 -> 0.29, 0.13 -> 0.13 -- but rows of 14 and 7, whose vectors gather, 0.05 -> 0.17)
    if (sh, sw) == (1, 1) and not (kind == DEPTHWISE and reads_in_place(oshape[3])):
        # the padded rows rounded up to whole vectors (the pad's vectors all 8 lanes wide:
        # 114 columns went in 19-lane vectors, whose masks LLVM handles lane by lane); no
        # padding, no copy
        wide = (top, left, pads[2], pads[3] + (-(dshape[3] + left + pads[3]) % PAD_ROW_MULTIPLE))
        padded = pad_hw(a, wide if any(pads) else pads, value_pad, named=False)
    phases = (_phases(a, (kh, kw), (sh, sw), (dh, dw), pads, value_pad, oshape[2:])
              if kind == DEPTHWISE and (sh, sw) != (1, 1) and not reads_in_place(oshape[3]) else None)

    def tap(n: Any, c: Any, y: Any, x: Any, ky: int, kx: int) -> Any:
        if phases is not None:
            (py, qy), (px, qx) = divmod(ky * dh, sh)[::-1], divmod(kx * dw, sw)[::-1]
            value = phases[py, px][n, c, y + qy, x + qx]
        elif padded is not None:
            value = padded[n, c, y + ky * dh, x + kx * dw]
        else:
            value = padded_pixel(a, n, c, y * sh + ky * dh - top, x * sw + kx * dw - left, pads, pad_value)
        return value * taps_w[ky, kx][c] if taps_w is not None else value

    def body(n: Any, c: Any, y: Any, x: Any) -> Any:
        taps = [tap(n, c, y, x, ky, kx) for ky in range(kh) for kx in range(kw)]
        acc = None
        if (kind == MAX_POOL and start != -math.inf) or (kind != MAX_POOL and start != 0.0):
            acc = te.const(start, a.dtype)
        for t in taps:
            acc = t if acc is None else (te.max(acc, t) if kind == MAX_POOL else acc + t)
        return acc

    out = te.compute((a.shape[0], *oshape[1:]), body, name="window")
    block = ir.StringAttr(op.attributes["mlc.block"]).value if "mlc.block" in op.attributes else "window"
    hmod = te.create_prim_func([a, *(taps_w or {}).values(), out], name=name)
    hfunc = symbol_ops(hmod.mlir_module, defined=True)[name]
    rename_blocks(hfunc, "window", block)
    if padded is not None and any(pads):  # (narrow rows: a fill and a copy of the rows, not gathers)
        pad_by_copy(hfunc, hfunc.regions[0].blocks[0].arguments[0], (top, left), value_pad)
    slices = []
    if taps_w is not None:
        row = ir.RankedTensorType.get([wshape[0]], ir.F32Type.get())
        with ir.InsertionPoint(op), op.location:
            slices = [tensor.ExtractSliceOp(row, window, [], [], [], [0, ky, kx], [wshape[0], 1, 1], [1, 1, 1]).result
                      for ky, kx in taps_w]
    return [data, *slices, dest], hmod
