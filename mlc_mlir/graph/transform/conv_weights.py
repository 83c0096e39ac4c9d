"""``transpose-conv-weights``: constant convolution weights stored for a contraction with the
output pixels as rows (the weights' layout chosen at build time, as TVM's ``AlterOpLayout``
packs x86 convolution kernels once instead of at every call).

The default schedule computes a convolution as im2col + a contraction
(:mod:`mlc_mlir.schedule.conv_gemm`): ``y[f, p] = sum(w[f, k] * col[k, p])``, the output
channels as the register tile's rows and the pixels as its vector columns. When the pixels
are no multiple of the 16-column tile (14 x 14 = 196: twelve full tiles, a narrow one, rows
of B off the cache lines), the same contraction with the roles swapped,
``y[p, f] = sum(col[k, p] * w[k, f])``, runs much faster: ResNet-18's 256-channel 3x3
convolution at 14 x 14 as gemms, one thread, interleaved in one process, 67-71 GFLOP/s
against 41-45. That form reads the weights as ``(C * KH * KW, F)``, the output channels
contiguous: this pass stores each such constant weight transposed, ``(C, KH, KW, F)``, behind
a ``permute_dims`` back to OIHW::

    %w = "mlc.constant"() {value = dense_resource<...>} : () -> tensor<256x256x3x3xf32>
    %y = "mlc.conv2d"(%x, %w) {...}

becomes::

    %wt = "mlc.constant"() {value = dense_resource<...>} : () -> tensor<256x3x3x256xf32>
    %w = "mlc.permute_dims"(%wt) {axes = array<i64: 3, 0, 1, 2>} : (...) -> tensor<256x256x3x3xf32>
    %y = "mlc.conv2d"(%x, %w) {...}

The transpose fuses into the convolution's kernel (FuseOps takes data movement before an
OUT_EWISE op in), where the convolution strategy reads the stored tensor directly and the
transpose is dead: nothing is transposed at run time. (Folding constants again afterwards
would undo it, at no cost but the speed.)

Taken (:func:`pixels_as_rows`): ``groups == 1`` convolutions of a constant float32 OIHW
weight, not 1x1, whose output has more than :data:`MIN_PIXELS` pixels per image (or an
im2col of at most :data:`SMALL_IM2COL_BYTES`), no multiple of :data:`PIXEL_TILE`, and a
multiple of :data:`CHANNEL_MULTIPLE` output channels; not the ones the default schedule
computes in packed tiles of wide pixels (one image, stride 1:
:func:`mlc_mlir.schedule.conv_gemm.takes_pixel_tiles`), which read the weights as they are.
None where the target's register tile is wider than :data:`PIXEL_TILE` (AVX-512's 14 x 32):
there the pixels as the tile's columns measured faster for each of ResNet-18's
convolutions that AVX2 takes as rows (an AVX-512 Xeon, 2 MB L2, one thread, kernels alone:
at batch 8, 256 channels at 14 x 14 16.6-16.8 -> 13.9-14.2 ms, the stride-2 layers 128 ->
256 7.8 -> 6.9 and 256 -> 512 9.5 -> 7.7; at batch 1 the stride-2 ones 0.97 -> 0.88 and
1.14 -> 0.94).
"""

from __future__ import annotations

import logging

import numpy as np
from mlir import ir

from ...errors import GraphError
from ...ir import Module
from ...schedule.conv_gemm import pixel_tile, takes_pixel_tiles
from ...target import Target
from ..builder.emit import constant_attr
from ..ir.analysis import clone_module, op_attrs
from .fold_constant import constant_op, constant_value, rewrite_graph_ops

__all__ = ["transpose_conv_weights", "pixels_as_rows", "MIN_PIXELS", "SMALL_IM2COL_BYTES", "PIXEL_TILE",
           "CHANNEL_MULTIPLE", "AXES"]

log = logging.getLogger("mlc_mlir.graph.conv_weights")

#: pixels per image above which the pixels-as-rows form is taken (7 x 7 = 49 measured mixed:
#: 512 x 4608 x 49 57 against 46 GFLOP/s the other way, 512 x 2304 x 49 41 against 49)
MIN_PIXELS = 64
#: ... or at most that many whose im2col (float32, one image) is at most this many bytes:
#: it stays in a 512 KB L2 while the gemm re-reads it for each block of output channels.
#: ResNet-18's 256 -> 512 stride-2 layer (2304 x 49, 451 KB), one image, interleaved in one
#: process: 2.75 -> 2.30 ms on one thread, 1.97 -> 1.67 on two, batch 8 29.9 -> 25.7 ms; its
#: 512-channel layers at 7 x 7 (903 KB) not: 5.6 -> 8.0 ms
SMALL_IM2COL_BYTES = 512 << 10
#: the columns of the AVX2 register tile: a multiple of it keeps the pixels as columns
#: (3136 and 784 pixels: 48 / 48 and 66 / 47 GFLOP/s, pixels as columns / as rows); on
#: AVX-512 too (one vector: ResNet-18's 64 -> 128 channel stride-2 layer, 784 pixels, one
#: image, one thread: 0.84 ms as columns, 1.23 as rows)
PIXEL_TILE = 16
#: the output channels are the tile's vector columns: whole 8-lane vectors of them
CHANNEL_MULTIPLE = 8
#: the transpose from the stored (C, KH, KW, F) back to OIHW
AXES = (3, 0, 1, 2)


def pixels_as_rows(out_shape: tuple[int, ...], weight_shape: tuple[int, ...]) -> bool:
    """Whether a convolution of output shape ``(N, F, OH, OW)`` and OIHW weights of
    ``weight_shape`` takes the pixels-as-rows form. Not 1x1 kernels: MobileNet-v2's 1x1
    convolutions at 14 x 14 measured the same at batch 1 and 7-14% slower at batch 8 (one
    thread, old / new builds interleaved in one process)."""
    pixels = out_shape[2] * out_shape[3]
    im2col = weight_shape[1] * weight_shape[2] * weight_shape[3] * pixels * 4
    return ((pixels > MIN_PIXELS or im2col <= SMALL_IM2COL_BYTES) and pixels % PIXEL_TILE != 0
            and weight_shape[0] % CHANNEL_MULTIPLE == 0 and weight_shape[2] * weight_shape[3] > 1)


def _pixel_tiles(conv: ir.Operation, weight_shape: tuple[int, ...], tile: int) -> bool:
    """Whether the default schedule computes ``conv`` in packed tiles of wide pixels, which
    read the weights as they are (:func:`mlc_mlir.schedule.conv_gemm.takes_pixel_tiles`)."""
    data = ir.RankedTensorType(conv.operands[0].type)
    out = ir.RankedTensorType(conv.results[0].type)
    if data.rank != 4 or data.is_dynamic_dim(0) or data.is_dynamic_dim(3):
        return False
    attrs = op_attrs(conv, None)
    return takes_pixel_tiles(data.get_dim_size(0), tuple(weight_shape[2:]), tuple(attrs.get("strides", (1, 1))),
                             tuple(attrs.get("padding", (0, 0, 0, 0))), data.get_dim_size(3),
                             (out.get_dim_size(2), out.get_dim_size(3)), tile=tile)


def transpose_conv_weights(mod: Module, target: Target | str | None = None) -> Module:
    """A copy of ``mod`` with the weights of its qualifying convolutions stored transposed
    (see the module doc); ``target`` as in :func:`transpose_in_place`.

    Raises:
        GraphError: ``mod`` is not an ``mlc.Module``.
    """
    if not isinstance(mod, Module):
        raise GraphError(f"transpose_conv_weights expects an mlc.Module, got {type(mod).__name__}")
    work = clone_module(mod)
    transpose_in_place(work, target)
    return work


def transpose_in_place(mod: Module, target: Target | str | None = None) -> int:
    """Rewrite ``mod``'s qualifying convolutions in place; returns how many. ``target``: none
    where its register tile is wider than :data:`PIXEL_TILE` (see the module doc); else the
    width of the packed tiles that :func:`_pixel_tiles` convolutions take
    (:func:`mlc_mlir.schedule.conv_gemm.pixel_tile`)."""
    tile = pixel_tile(target)
    if tile > PIXEL_TILE:
        return 0
    done = rewrite_graph_ops(mod, lambda op: op.name == "mlc.conv2d", lambda op, blobs: _rewrite(op, blobs, tile))
    if done:
        log.info("transpose-conv-weights: %d convolution weight(s) stored (C, KH, KW, F)", done)
    return done


def _rewrite(conv: ir.Operation, blobs: dict[str, bytes], tile: int) -> bool:
    if "groups" in conv.attributes and ir.IntegerAttr(conv.attributes["groups"]).value != 1:
        return False
    out = ir.RankedTensorType(conv.results[0].type)
    if out.rank != 4 or any(out.is_dynamic_dim(d) for d in (1, 2, 3)):
        return False
    const = constant_op(conv.operands[1])
    w = None if const is None else constant_value(const, blobs)
    if w is None or w.ndim != 4 or w.dtype != np.float32:
        return False
    if not pixels_as_rows(tuple(out.get_dim_size(d) for d in range(4)), w.shape) or _pixel_tiles(conv, w.shape, tile):
        return False
    wt = np.ascontiguousarray(w.transpose(1, 2, 3, 0))
    w_type = ir.RankedTensorType(conv.operands[1].type)
    wt_type = ir.RankedTensorType.get(list(wt.shape), w_type.element_type)
    with ir.InsertionPoint(conv), conv.location:
        stored = ir.Operation.create("mlc.constant", results=[wt_type],
                                     attributes={"value": constant_attr(wt, "conv_weight_cf", wt_type)})
        back = ir.Operation.create("mlc.permute_dims", results=[w_type], operands=[stored.results[0]],
                                   attributes={"axes": ir.DenseI64ArrayAttr.get(list(AXES))})
    conv.operands[1] = back.results[0]
    return True
