"""The convolution strategy of the default schedule: ``linalg.conv_2d_nchw_fchw`` -> im2col + a contraction.

Legalization gives a convolution as upstream's named op (after a ``tensor.pad`` of its
input); the rules tile contractions whose operands are read at plain loop dimensions,
which a convolution's ``y * stride + ky`` reads are not. Before the rules run,
:func:`convs_to_gemm` replaces each such op by the computes of
:func:`mlc_mlir.topi.nn.conv2d_gemm` (``gather=True``, the kernel flattened):

    %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {...}
    %y = linalg.conv_2d_nchw_fchw {mlc.block = "conv2d"} ins(%p, %w) outs(%zero)

becomes

    %w2 = tensor.collapse_shape %w [[0], [1, 2, 3]]         the kernel viewed (F, C*KH*KW)
    conv2d_pad      xp[c, row, col] = x[c, row - 1, col - 1] if inside, else 0
    conv2d_im2col   col[c*KH*KW + ky*KW + kx, i, j] = xp[c, i*s + ky, j*s + kx]
    conv2d_gemm     y[f, p] = sum_k w2[f, k] * col[k, p]     one reduction dim: a matmul
    %y = tensor.expand_shape y                               NCHW: a view, no copy

The input is padded once (a gather per element of the padded input, vectorized), then
``conv2d_im2col`` reads it at affine indices with no condition: along an output row a
stride-1 tap reads consecutive pixels, so the copy runs as rows (the outer loop in
parallel). With a column stride whose phases every tap reads (a 7x7 or 3x3 kernel of
stride 2), the padded input's columns are split in their phases
(``xp[c, row, kx % s, q]``, :func:`mlc_mlir.topi.conv._column_phases`) and each tap reads
a phase at unit stride: ResNet-18's 7x7 stem at batch 8, one thread, 24.7 -> 19.3 ms
(1.84M gathered pixels per image, 159K this way), MobileNet-v2's 3x3 stem 4.1 -> 3.4 ms. The contraction reads im2col at ``[k, p // OW, p % OW]``, which
:mod:`.index_maps` views as ``(K, OH * OW)``. Reading the unpadded input in place through
clamped gathers instead took 1.77 ms for ResNet-18's 3x3 convolution at 128 channels,
28x28 (1.44 ms this way; torch 0.8-1.2 ms on the same loaded host) and 2.14 ms for its
7x7 stem (1.56 ms); the ``tensor.pad`` copy before an im2col of ``floordiv`` reads took
1 ms of the 2.9 ms of the 64-channel layer. A 1x1 convolution of stride 1 has none (the
contraction reads the input viewed (C, H*W)). ``conv2d_gemm`` has one reduction dim, so
the large-contraction rule blocks it for the cache (with (C, KH, KW) as three reduction
dims the register-tile rule ran that 3x3 convolution's contraction at 2.2 ms; flat,
0.85 ms). The fused epilogue -- bias, ReLU, a residual add -- stays the generic after it,
reading the view. No elementwise fusion runs afterwards: it would inline the all-parallel
im2col into the contraction. Measured against upstream's
``transform.structured.convert_conv2d_to_img2col`` (same convolution, 2 cores): 6.7 ms
that way under the same rules (its im2col has ``floordiv`` maps no rule vectorizes); 1.4 ms
this way (torch: 0.8-0.9 ms).

One image's convolution of stride 1 (whose tiles waste little, :data:`MAX_WIDE`) takes
packed tiles of wide pixels instead (``topi.nn.conv2d_gemm(pixel_tile=pixel_tile(target))``,
:func:`mlc_mlir.topi.conv._tiled_gemm`): im2col ``(tiles, C, KH, KW, 16)`` computed per
tile at the contraction's tile loop, the contraction ``y[f, tile, lane]`` reading each
tile's panel contiguously, then a copy to NCHW. ResNet-18's 3x3 layers at one image, one
thread, interleaved: 64 channels at 56 x 56 3.53 -> 3.30 ms, 128 at 28 x 28 4.18 -> 3.91;
at batch 8 the copy and the epilogue cannot be computed per image (the copy reads the
tiles as a gather): 33.3 -> 35.2 ms, so batches keep the bands.

Convolutions this does not take (an init that is not a zero fill, a dynamic dimension other
than the batch, integer types) stay named ops: the build lowers them to loops.
The rewrite itself (:func:`.rewrite_named.rewrite_named`) is shared with the window
strategy (:mod:`.windows`).
"""

from __future__ import annotations

from typing import Any

from mlir import ir
from mlir.dialects import arith, tensor

from .. import te, topi
from ..ir import Module
from ..irutil import symbol_ops, walk_ops
from ..target import Target
from ..topi._util import padding4
from .rewrite_named import constant_fill, pad_by_copy, pad_hw_source, rename_blocks, rewrite_named, static_shape

__all__ = ["convs_to_gemm", "band_rows", "takes_pixel_tiles", "pixel_tile", "MAX_WIDE", "MAX_WIDE_PARTIAL",
           "TILE_PIXELS", "CONV_OP", "TILED_STRIDES", "BAND_MIN_BYTES", "BAND_MAX_PIXELS"]

CONV_OP = "linalg.conv_2d_nchw_fchw"
#: an image's im2col over this size is computed in bands of output rows (:func:`band_rows`;
#: MobileNet-v2's 3x3 stem of stride 2, 1.35 MB per image, batch 8, one thread: 3.6 -> 2.7 ms)
BAND_MIN_BYTES = 1 << 20
#: the most pixels of a band: the register-tile rule's columns (a band of 392 pixels took
#: the large-contraction rule: 2.4x slower)
BAND_MAX_PIXELS = 224
#: a stride-1 convolution's im2col is packed in tiles of this many wide pixels (the
#: register tile's columns; :func:`mlc_mlir.topi.conv._tiled_gemm`): AVX2's, where no target
#: is named; a target's own with one (:func:`pixel_tile`)
TILE_PIXELS = 16
#: ... when its tiles hold at most this many times the output pixels (the padded width's
#: columns past the output, and the last tile's tail, are computed and dropped: 7 x 7
#: outputs would compute 64 wide pixels for 49)
MAX_WIDE = 1.1
#: ... or this many where the output's pixels are no multiple of a tile (the contraction
#: on the plain pixels would end in a partial tile; the graph pass would store the weights
#: for the pixels as rows): ResNet-18's 256-channel 3x3 layers at 14 x 14 (224 wide pixels
#: for 196), one image, interleaved in one process, against the pixels as rows: 4.03-4.06
#: -> 3.69-3.82 ms on one thread, 2.84-3.04 -> 1.91-1.95 on two
MAX_WIDE_PARTIAL = 1.2
#: the strides that take the tiles. A stride of 2 can (``topi.nn.conv2d_gemm`` reads its
#: 2-D stride phases, :func:`mlc_mlir.topi.conv._tiled_gemm`) but measured no faster than
#: the bands or the pixels as rows: ResNet-18 at batch 1, one thread, interleaved, its 7x7
#: stem 4.5 -> 5.7 ms, 64 -> 128 channels at 28 x 28 2.15 -> 2.36, 128 -> 256 at 14 x 14
#: 2.39 -> 2.26, 256 -> 512 at 7 x 7 3.19 -> 3.13
TILED_STRIDES = frozenset({(1, 1)})
#: the kernel (F, C, KH, KW) viewed as (F, C * KH * KW)
_ROWS_FLAT = [[0], [1, 2, 3]]


def pixel_tile(target: Target | str | None = None) -> int:
    """The wide pixels of a packed tile for ``target``: its register tile's columns (AVX2 16,
    AVX-512 32), :data:`TILE_PIXELS` where no target is named. ResNet-18's 3x3 layers at one
    image, one thread, on an AVX-512 Xeon, interleaved: 64 channels at 56 x 56 1.82 -> 1.67
    ms in tiles of 32, 128 at 28 x 28 1.85 -> 1.63, 256 at 14 x 14 1.88 -> 1.64 (a 14 x 16
    register tile: one vector of accumulators per row)."""
    return TILE_PIXELS if target is None else Target.of(target).register_tile("float32")[1]


def convs_to_gemm(mod: Module, target: Target | str | None = None) -> Module:
    """``mod`` with every ``linalg.conv_2d_nchw_fchw`` it can take in im2col + contraction
    form (a copy; ``mod`` itself when it has none), packed tiles :func:`pixel_tile` wide."""
    tile = pixel_tile(target)
    return rewrite_named(mod, (CONV_OP,), lambda conv, name: _helper(conv, name, tile), "conv-to-gemm")


def _ints(attr: ir.Attribute) -> tuple[int, ...]:
    return tuple(int(v) for v in ir.DenseIntElementsAttr(attr))


def _helper(conv: ir.Operation, name: str, tile: int) -> tuple[list[ir.Value], Module] | None:
    """([data, the kernel viewed (F, C * KH * KW), destination], a module holding the tensor
    program ``name`` computing the convolution), or None when this convolution is not one
    :func:`topi.nn.conv2d_gemm` computes."""
    kernel, init = conv.operands[1], conv.operands[2]
    data, pads, pad_value = pad_hw_source(conv.operands[0])
    if pad_value not in (None, 0.0):
        data, pads = conv.operands[0], (0, 0, 0, 0)
    fill = constant_fill(init)
    if fill is None or fill[1] != 0.0 or str(ir.RankedTensorType(init.type).element_type) != "f32":
        return None
    dest = fill[0]
    dshape, kshape = static_shape(data.type), static_shape(kernel.type)
    if None in dshape[1:] or None in kshape or str(ir.RankedTensorType(kernel.type).element_type) != "f32":
        return None
    f, c, kh, kw = kshape
    strides = _ints(conv.attributes["strides"])
    transposed = transposed_kernel(kernel)  # (C, KH, KW, F): the pixels as the gemm's rows
    w = te.placeholder((f, c * kh * kw) if transposed is None else (c * kh * kw, f), name="kernel")
    pointwise = (kh, kw) == (1, 1) and strides == (1, 1) and not any(pads)
    oh, ow = (static_shape(conv.results[0].type)[i] for i in (2, 3))
    tiled = tile if transposed is None and takes_pixel_tiles(dshape[0], (kh, kw), strides, pads, dshape[3],
                                                            (oh, ow), tile=tile) else None
    bands = None if pointwise or transposed is not None or tiled else band_rows(c * kh * kw, oh, ow)
    if pointwise:  # im2col would copy the input as it is: the contraction reads it viewed (C, H * W)
        batch = "n" if dshape[0] is None else dshape[0]
        a = te.placeholder((batch, c, dshape[2] * dshape[3]) if batch != 1 else (c, dshape[2] * dshape[3]), name="data")
        y = _pointwise_gemm(a, w, dshape[2], dshape[3], pixels_as_rows=transposed is not None)
    else:
        a = te.placeholder(tuple("n" if d is None else d for d in dshape), name="data")
        y = topi.nn.conv2d_gemm(a, w, strides, pads, _ints(conv.attributes["dilations"]), gather=True,
                                kernel_size=(kh, kw), band_rows=bands, pixels_as_rows=transposed is not None,
                                pixel_tile=tiled)
    block = ir.StringAttr(conv.attributes["mlc.block"]).value if "mlc.block" in conv.attributes else "conv2d"
    hmod = te.create_prim_func([a, w, y], name=name)
    hfunc = symbol_ops(hmod.mlir_module, defined=True)[name]
    if transposed is None and tiled is None:  # (pixels as rows, tiles: the last compute copies y to NCHW)
        _view_result(hfunc, banded=bands is not None)
    rename_blocks(hfunc, "conv2d", block)
    if not pointwise:  # (narrow rows: the padded copy a fill and a copy of the rows, not gathers)
        pad_by_copy(hfunc, hfunc.regions[0].blocks[0].arguments[0], pads[:2], 0.0)
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(conv), conv.location:
        if transposed is None:
            flat = tensor.CollapseShapeOp(ir.RankedTensorType.get([f, c * kh * kw], f32), kernel, _ROWS_FLAT).result
        else:
            flat = tensor.CollapseShapeOp(ir.RankedTensorType.get([c * kh * kw, f], f32), transposed,
                                          [[0, 1, 2], [3]]).result
        if pointwise:
            pixels = dshape[2] * dshape[3]
            view = ([c, pixels], [[0, 1], [2, 3]]) if dshape[0] == 1 else \
                ([ir.ShapedType.get_dynamic_size() if dshape[0] is None else dshape[0], c, pixels], [[0], [1], [2, 3]])
            data = tensor.CollapseShapeOp(ir.RankedTensorType.get(view[0], f32), data, view[1]).result
    return [data, flat, dest], hmod


def takes_pixel_tiles(batch: int | None, kernel_hw: tuple[int, int], strides: tuple[int, ...],
                      pads: Any, in_width: int, out_hw: tuple[int, int], *, tile: int = TILE_PIXELS) -> bool:
    """Whether a convolution (one image of width ``in_width``, padded ``pads``: an int, ``(h,
    w)`` or ``(top, left, bottom, right)``, to ``out_hw``) takes packed tiles of wide pixels
    (``topi.nn.conv2d_gemm``'s ``pixel_tile``): one image, a stride of
    :data:`TILED_STRIDES`, not a 1x1 convolution without padding (its contraction reads the
    input as it is), and tiles of ``tile`` wide pixels holding at most :data:`MAX_WIDE` times
    the output pixels (:data:`MAX_WIDE_PARTIAL` where the pixels are no multiple of a tile). The graph pass
    :mod:`mlc_mlir.graph.transform.conv_weights` leaves these convolutions' weights as they
    are.

    Raises:
        TEError: ``pads`` of another length."""
    (kh, kw), (oh, ow) = kernel_hw, out_hw
    pads = padding4(pads, "takes_pixel_tiles")
    if batch != 1 or tuple(strides) not in TILED_STRIDES or ((kh, kw) == (1, 1) and not any(pads)):
        return False
    limit = MAX_WIDE if oh * ow % tile == 0 else MAX_WIDE_PARTIAL
    return _wide_pixels(oh, -(-(in_width + pads[1] + pads[3]) // strides[1]), tile) <= limit * oh * ow


def _wide_pixels(oh: int, wq: int, tile: int) -> int:
    """The pixels of ``tile``-wide tiles over ``oh`` rows of ``wq`` wide pixels."""
    return -(-oh * wq // tile) * tile


def band_rows(k: int, oh: int, ow: int) -> int | None:
    """The output rows of a band of a convolution's im2col (:func:`topi.nn.conv2d_gemm`'s
    ``band_rows``), or None for a whole image: bands when an image's im2col (K x OH * OW)
    is more than :data:`BAND_MIN_BYTES`, of the most rows whose pixels are whole 16-lane
    vectors up to :data:`BAND_MAX_PIXELS`. Each band's im2col is then computed just before
    its gemm and read from cache. Emerald Rapids, one thread, interleaved: ResNet-18's 3x3
    convolution at 64 channels, 56 x 56 (with bias and ReLU), batch 8, 17.3 -> 12.7 ms in
    bands of 4 rows (224 pixels; 2 rows 16.0, 7 rows 35.7: the blocked rule's 392
    columns), one image 2.6 -> 1.9 ms; its 7x7 stem 19.9 -> 16.3 ms at batch 8 in bands of 2
    rows; at 128 channels, 28 x 28, in bands of 4 rows (112 pixels) 18.5 -> 14.9 ms at
    batch 8, 2.1 -> 1.4 ms for one image; at 256 channels, 14 x 14, 18.2 -> 21.1 in 7 rows
    (98 pixels: none). (Before the hoisting of accumulators saw through the result's
    expand + collapse views, :func:`mlc_mlir.compiler.vector_opt.reshapes_as_casts`, bands
    were slower where the result was not a per-image buffer: one image 2.8 -> 3.7 ms, the
    128-channel layer with its peeled tiles 16.9 -> 26.8.)"""
    if k * oh * ow * 4 <= BAND_MIN_BYTES:
        return None
    fits = [r for r in range(1, oh) if oh % r == 0 and r * ow <= BAND_MAX_PIXELS and r * ow % 16 == 0]
    return max(fits) if fits else None


def transposed_kernel(kernel: ir.Value) -> ir.Value | None:
    """The ``(C, KH, KW, F)`` tensor whose transpose ``kernel`` ``(F, C, KH, KW)`` is (a
    ``linalg.transpose``, or a generic that only reads it at ``[c, y, x, f]``): the weights
    the graph pass :mod:`mlc_mlir.graph.transform.conv_weights` stored so, for a contraction
    with the pixels as rows. None for any other kernel."""
    owner = kernel.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation
    if op.name == "linalg.transpose":
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        return op.operands[0] if perm == [3, 0, 1, 2] else None
    if op.name != "linalg.generic" or len(op.operands) != 2 or len(op.regions[0].blocks) != 1:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    if (len(maps) != 2 or maps[1] != ir.AffineMap.get_identity(4) or maps[0] != ir.AffineMap.get_permutation([1, 2, 3, 0])
            or len(ops) != 1 or ops[0].operation.name != "linalg.yield" or ops[0].operands[0] != body.arguments[0]):
        return None
    return op.operands[0]


def _pointwise_gemm(data: te.Tensor, kernel: te.Tensor, h: int, w: int, *, pixels_as_rows: bool = False) -> te.Tensor:
    """A 1x1 convolution of stride 1 without padding on ``data`` viewed (C, H * W) (per
    image: (N, C, H * W)): the contraction ``conv2d_gemm`` and ``conv2d``, the result in NCHW
    (a copy that :func:`_view_result` replaces by a view), as :func:`topi.nn.conv2d_gemm` names them.
    ``pixels_as_rows``: ``kernel`` is (C, F), ``y[(n,) p, f]`` transposed back to NCHW."""
    if pixels_as_rows:
        k, f = kernel.shape
        rk = te.reduce_axis((0, k), "rk")
        if len(data.shape) == 2:
            y = te.compute((h * w, f), lambda p, o: te.sum(data[rk, p] * kernel[rk, o], axis=rk), name="conv2d_gemm")
            return te.compute((1, f, h, w), lambda b, o, i, j: y[i * w + j, o], name="conv2d")
        y = te.compute((data.shape[0], h * w, f), lambda b, p, o: te.sum(data[b, rk, p] * kernel[rk, o], axis=rk),
                       name="conv2d_gemm")
        return te.compute((data.shape[0], f, h, w), lambda b, o, i, j: y[b, i * w + j, o], name="conv2d")
    f, k = kernel.shape
    rk = te.reduce_axis((0, k), "rk")
    if len(data.shape) == 2:
        y = te.compute((f, h * w), lambda o, p: te.sum(kernel[o, rk] * data[rk, p], axis=rk), name="conv2d_gemm")
        return te.compute((1, f, h, w), lambda b, o, i, j: y[o, i * w + j], name="conv2d")
    y = te.compute((data.shape[0], f, h * w), lambda b, o, p: te.sum(kernel[o, rk] * data[b, rk, p], axis=rk),
                   name="conv2d_gemm")
    return te.compute((data.shape[0], f, h, w), lambda b, o, i, j: y[b, o, i * w + j], name="conv2d")


def _view_result(hfunc: ir.Operation, *, banded: bool = False) -> None:
    """The last compute of ``conv2d_gemm`` (``y[f, p]`` copied to NCHW; per image
    ``y[n, f, p]``; ``banded``, ``y[n, f, band, p]`` or ``y[f, band, p]``) replaced by a
    view of ``y`` (``tensor.expand_shape``; banded, then a ``collapse_shape``): the pixels are
    already in NCHW order (a copy's read ``y[o, i * ow + j]`` is no plain index, so no
    rule vectorized it: 64 x 56 x 56 copied element by element)."""
    copy = next(op for op in walk_ops(hfunc, ("linalg.generic",))
                if "mlc.block" in op.attributes and ir.StringAttr(op.attributes["mlc.block"]).value == "conv2d")
    y = copy.operands[0]
    rank = ir.RankedTensorType(y.type).rank
    out = _out_shape(copy.results[0].type)
    with ir.InsertionPoint(copy), copy.location:
        dynamic = [tensor.DimOp(y, arith.ConstantOp(ir.IndexType.get(), 0).result).result
                   for d in static_shape(copy.results[0].type) if d is None]  # only the batch can be
        if banded:  # (n, f, band, rows * ow), one image (f, band, rows * ow): viewed (n, f, band, rows, ow), then NCHW
            bands = static_shape(y.type)[-2]
            rows = [out[0], out[1], bands, out[2] // bands, out[3]]
            five = ir.RankedTensorType.get(rows, ir.RankedTensorType(y.type).element_type)
            groups = [[0], [1], [2], [3, 4]] if rank == 4 else [[0, 1], [2], [3, 4]]
            split = tensor.ExpandShapeOp(five, y, groups, dynamic, rows).result
            view = tensor.CollapseShapeOp(copy.results[0].type, split, [[0], [1], [2, 3], [4]]).result
        else:
            groups = [[0, 1], [2, 3]] if rank == 2 else [[0], [1], [2, 3]]
            view = tensor.ExpandShapeOp(copy.results[0].type, y, groups, dynamic, out).result
    copy.results[0].replace_all_uses_with(view)
    copy.erase()


def _out_shape(t: ir.Type) -> list[int]:
    st = ir.RankedTensorType(t)
    return [ir.ShapedType.get_dynamic_size() if st.is_dynamic_dim(i) else st.get_dim_size(i) for i in range(st.rank)]
