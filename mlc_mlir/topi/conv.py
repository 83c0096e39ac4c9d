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
from .pad import pad_hw, padded_pixel

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
                gather: bool = False, kernel_size: Any = None, band_rows: int | None = None,
                pixels_as_rows: bool = False, pixel_tile: int | None = None) -> Any:
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
    schedule's convolution strategy). With a flattened kernel, the input is padded once
    and read at affine indices either way (:func:`_rows_gemm`).

    A ``kernel`` of rank 2, ``(F, C * KH * KW)`` (the OIHW kernel's rows flattened, as
    ``tensor.collapse_shape`` views it), with ``kernel_size=(KH, KW)``: im2col is
    ``col[c * KH * KW + ky * KW + kx, i, j]`` and the contraction has one reduction dim, a
    plain ``(F, K) x (K, P)`` matmul (per image) that the large-contraction rule blocks
    for the cache. With three reduction dims (the rank-4 kernel) the rules' register tile
    ran ResNet-18's 3x3 convolution at 64 channels, 56x56 in 2.2 ms; flat, 0.85 ms.

    ``band_rows`` (with a flattened kernel): im2col and the contraction in bands of that
    many output rows (:func:`_rows_gemm`).

    ``pixels_as_rows=True`` (with a flattened kernel given transposed, ``(C * KH * KW, F)``):
    the contraction is ``y[p, f] = sum(col[k, p] * kernel[k, f])`` (per image ``y[n, p, f]``),
    the output pixels its rows and the channels its columns, and ``conv2d`` transposes ``y``
    back to NCHW. Output pixels that are no multiple of the vector tile (14 x 14 = 196) then
    sit in the register tile's rows, the channels in its vectors: ResNet-18's 256-channel 3x3
    convolution at 14 x 14 as gemms, one thread, interleaved: 67-71 GFLOP/s this way
    against 41-45 with the pixels as columns (see :mod:`mlc_mlir.graph.transform.conv_weights`).

    ``pixel_tile=L`` (a flattened kernel): im2col packed in tiles of ``L`` *wide* pixels
    (:func:`_tiled_gemm`): ``col[t, c, ky, kx, l]``, the contraction ``y[f, t, l]`` reading
    each tile's ``K x L`` panel contiguously; a stride other than 1 reads the padded
    input's 2-D stride phases.

    Raises:
        TEError: as :func:`conv2d`; a rank-2 kernel without ``kernel_size`` or whose
            columns are not ``C * KH * KW``; ``band_rows`` that do not divide the output rows;
            ``pixels_as_rows`` with a rank-4 kernel or with ``band_rows``; ``pixel_tile``
            with a rank-4 kernel, ``band_rows`` or ``pixels_as_rows``, or not a positive int.
    """
    check_tensor(data, "nn.conv2d_gemm", "data")
    check_tensor(kernel, "nn.conv2d_gemm", "kernel")
    flat = len(kernel.shape) == 2
    if len(data.shape) != 4 or len(kernel.shape) not in (2, 4):
        raise TEError(f"topi.nn.conv2d_gemm: needs NCHW data and an OIHW kernel of rank 4 (or 2, flattened), "
                      f"got shapes {shape_names(data.shape)} and {shape_names(kernel.shape)}")
    (sh, sw), (dh, dw) = window_pair(strides, "nn.conv2d", "strides"), window_pair(dilation, "nn.conv2d", "dilation")
    pads = padding4(padding, "nn.conv2d")
    n = data.shape[0]
    c, h, w = (static_dim(d, "nn.conv2d", "data channels and spatial sizes") for d in data.shape[1:])
    if flat:
        f, cols = (static_dim(d, "nn.conv2d", "kernel dimensions") for d in kernel.shape)
        if pixels_as_rows:
            f, cols = cols, f
        if kernel_size is None:
            raise TEError("topi.nn.conv2d_gemm: a flattened (rank-2) kernel needs kernel_size=(KH, KW)")
        kh, kw = window_pair(kernel_size, "nn.conv2d_gemm", "kernel_size")
        if cols != c * kh * kw:
            raise TEError(f"topi.nn.conv2d_gemm: a flattened kernel has C * KH * KW = {c * kh * kw} columns "
                          f"for {c} channels and a {kh}x{kw} window, got {cols}")
        kc = c
    else:
        f, kc, kh, kw = (static_dim(d, "nn.conv2d", "kernel dimensions") for d in kernel.shape)
    if c != kc:
        raise TEError(f"topi.nn.conv2d_gemm: data has {c} channels, kernel expects {kc}")
    top, left, bottom, right = pads
    oh = window_out_size(h + top + bottom, kh, sh, dh, "nn.conv2d")
    ow = window_out_size(w + left + right, kw, sw, dw, "nn.conv2d")
    if band_rows is not None and (not flat or not isinstance(band_rows, int) or band_rows < 1 or oh % band_rows):
        raise TEError(f"topi.nn.conv2d_gemm: band_rows needs a flattened kernel and must divide the {oh} output "
                      f"rows, got {band_rows!r}")
    if pixels_as_rows and (not flat or band_rows is not None):
        raise TEError("topi.nn.conv2d_gemm: pixels_as_rows needs a flattened kernel (C * KH * KW, F) and no band_rows")
    if pixel_tile is not None and (not flat or band_rows is not None or pixels_as_rows
                                   or not isinstance(pixel_tile, int) or isinstance(pixel_tile, bool)
                                   or pixel_tile < 1):
        raise TEError(f"topi.nn.conv2d_gemm: pixel_tile needs a flattened kernel (F, C * KH * KW), no band_rows "
                      f"and no pixels_as_rows, and must be a positive int, got {pixel_tile!r}")
    if pixel_tile is not None:
        return _tiled_gemm(data, kernel, pads, (kh, kw), (sh, sw), (dh, dw), (oh, ow), pixel_tile, gather)
    src = data if gather else pad_hw(data, pads, 0.0, named=False)  # a generic, fused into im2col
    pixels = oh * ow
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    one = te.reduce_axis((0, 1), "one")

    def tap(b: Any, ch: Any, ky: Any, kx: Any, p: Any) -> Any:
        row, col = p // ow * sh + ky * dh, p % ow * sw + kx * dw
        if not gather:
            return src[b, ch, row, col]
        # the padding read in place: no padded copy of the input (a tensor.pad's copy took
        # 1 ms of ResNet-18's 2.9 ms 3x3 convolution at 64 channels, 56x56)
        conds = [cond for cond, pad in ((row >= top, top), (row < top + h, bottom), (col >= left, left),
                                        (col < left + w, right)) if pad]
        read = src[b, ch, row - top if top else row, col - left if left else col]
        return te.if_then_else(te.all(*conds), read, 0.0) if conds else read

    def im2col(value: Any) -> Any:
        return value if gather else te.sum(value, axis=one)

    if flat:
        if sw > 1 and len({kx * dw % sw for kx in range(kw)}) == sw:
            # the padded input's columns split in their stride phases (every phase read: a
            # 1x1 kernel of stride 2 reads one): unit-stride rows for im2col
            phased = _column_phases(data, pads, sw)
            return _rows_gemm(n, f, oh, ow, kh * kw * c, kernel,
                              lambda b, r, i, j: im2col(phased[b, r // (kh * kw), i * sh + r // kw % kh * dh,
                                                               r % kw * dw % sw, j + r % kw * dw // sw]), band_rows,
                              pixels_as_rows)
        padded = pad_hw(data, pads, 0.0, named=False)
        return _rows_gemm(n, f, oh, ow, kh * kw * c, kernel,
                          lambda b, r, i, j: im2col(padded[b, r // (kh * kw), i * sh + r // kw % kh * dh,
                                                           j * sw + r % kw * dw]), band_rows, pixels_as_rows)

    if isinstance(n, int) and n == 1:
        col = te.compute((c, kh, kw, pixels), lambda ch, ky, kx, p: im2col(tap(0, ch, ky, kx, p)), name="im2col")
        y = te.compute((f, n * pixels), lambda o, p: te.sum(kernel[o, rc, ry, rx] * col[rc, ry, rx, p],
                                                            axis=[rc, ry, rx]), name="conv2d_gemm")
        return te.compute((n, f, oh, ow), lambda b, o, i, j: y[o, b * pixels + i * ow + j], name="conv2d")
    col = te.compute((n, c, kh, kw, pixels), lambda b, ch, ky, kx, p: im2col(tap(b, ch, ky, kx, p)), name="im2col")
    y = te.compute((n, f, pixels), lambda b, o, p: te.sum(kernel[o, rc, ry, rx] * col[b, rc, ry, rx, p],
                                                          axis=[rc, ry, rx]), name="conv2d_gemm")
    return te.compute((n, f, oh, ow), lambda b, o, i, j: y[b, o, i * ow + j], name="conv2d")


def _tiled_gemm(data: Any, kernel: Any, pads: tuple[int, int, int, int], ksize: tuple[int, int],
                strides: tuple[int, int], dil: tuple[int, int], out: tuple[int, int], tile: int, gather: bool) -> Any:
    """A convolution with a flattened kernel ``(F, K)`` as a contraction over packed tiles of
    *wide* pixels. At stride 1, output pixel ``(i, j)`` is wide pixel ``q = i * WP + j`` of
    the padded input's width ``WP``, and tap ``(c, ky, kx)`` of wide pixel ``q`` is element
    ``ky * DH * WP + kx * DW + q`` of channel ``c`` of the padded input read flat. So a tile
    of ``L`` consecutive wide pixels reads ``L`` consecutive elements per tap, whatever the
    rows it spans: im2col ``col[(n,) t, c, ky, kx, l]`` is a copy of contiguous runs (the
    index maps view the padded input flat, :mod:`mlc_mlir.schedule.index_maps`), laid out so
    that the contraction ``y[(n,) f, t, l] = sum(kernel[f, k] * col[t, k, l])`` (``col``
    read through a view with ``k = (c, ky, kx)``) reads each tile's ``K x L`` panel
    contiguously (the panel of a BLAS kernel's packed B), and the rules compute each tile's
    im2col just before its gemm (the tile dim is read by B and the result only, as a band
    is). ``conv2d`` copies the ``OW`` real pixels of each row of ``y`` (read at
    ``q // L, q % L``, a gather: a view of ``y`` would keep the gemm's accumulators in
    memory) to NCHW; the ``WP - OW`` wide pixels per row past the output (and the last
    tile's tail) are computed and dropped. The input gets zero rows below its padding so
    that the last tile's taps stay inside it.

    With a stride ``(SH, SW)`` other than 1 the padded input is split in its 2-D stride
    phases, ``ph[(n,) c, py, px, r, u] = padded[c, SH * r + py, SW * u + px]`` (one compute
    reading the input in place, zero outside it), each phase ``WQ = ceil(WP / SW)`` wide:
    output pixel ``(i, j)`` is wide pixel ``q = i * WQ + j`` and its tap ``(ky, kx)`` reads
    element ``q + (ky * DH // SH) * WQ + kx * DW // SW`` of phase ``(ky * DH % SH, kx * DW %
    SW)`` read flat: linear in ``q`` again, so a tile reads consecutive elements per tap."""
    top, left, bottom, right = pads
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = ksize, strides, dil, out
    n = data.shape[0]
    c, h, w = data.shape[1:]
    f, k = kernel.shape  # (k = c * kh * kw)
    wp = w + left + right
    wq = -(-wp // sw)
    tiles = -(-oh * wq // tile)
    # one past the last element read of a (phase) plane
    last = (kh - 1) * dh // sh * wq + (kw - 1) * dw // sw + tiles * tile
    one = te.reduce_axis((0, 1), "one")
    if (sh, sw) == (1, 1):
        extra = max(0, -(-last // wp) - (h + top + bottom))
        padded = pad_hw(data, (top, left, bottom + extra, right), 0.0, named=False)

        def at(b: Any, ch: Any, ky: Any, kx: Any, q: Any) -> Any:
            q = q + ky * (dh * wp) + kx * dw
            return padded[b, ch, q // wp, q % wp]
    else:
        phases = _stride_phases(data, pads, (sh, sw), -(-last // wq), wq)

        def at(b: Any, ch: Any, ky: Any, kx: Any, q: Any) -> Any:
            q = q + ky * dh // sh * wq + kx * dw // sw
            return phases[b, ch, ky * dh % sh, kx * dw % sw, q // wq, q % wq]

    def read(b: Any, t: Any, ch: Any, ky: Any, kx: Any, lane: Any) -> Any:
        value = at(b, ch, ky, kx, t * tile + lane)
        return value if gather else te.sum(value, axis=one)

    def tap(rk: Any) -> tuple[Any, Any, Any]:
        return rk // (kh * kw), rk // kw % kh, rk % kw

    rk = te.reduce_axis((0, k), "rk")
    if isinstance(n, int) and n == 1:
        col = te.compute((tiles, c, kh, kw, tile), lambda t, ch, ky, kx, lane: read(0, t, ch, ky, kx, lane),
                         name="im2col")
        y = te.compute((f, tiles, tile), lambda o, t, lane: te.sum(kernel[o, rk] * col[(t, *tap(rk), lane)], axis=rk),
                       name="conv2d_gemm")
        return te.compute((n, f, oh, ow), lambda b, o, i, j: y[o, (i * wq + j) // tile, (i * wq + j) % tile],
                          name="conv2d")
    col = te.compute((n, tiles, c, kh, kw, tile), lambda b, t, ch, ky, kx, lane: read(b, t, ch, ky, kx, lane),
                     name="im2col")
    y = te.compute((n, f, tiles, tile),
                   lambda b, o, t, lane: te.sum(kernel[o, rk] * col[(b, t, *tap(rk), lane)], axis=rk),
                   name="conv2d_gemm")
    return te.compute((n, f, oh, ow), lambda b, o, i, j: y[b, o, (i * wq + j) // tile, (i * wq + j) % tile],
                      name="conv2d")


def _column_phases(data: Any, pads: tuple[int, int, int, int], sw: int) -> Any:
    """The zero-padded ``data`` (NCHW) with its columns split in ``sw`` phases:
    ``out[b, c, row, px, q] = padded[b, c, row, q * sw + px]``. A convolution of column
    stride ``sw`` reads its tap ``kx`` at ``[.., kx % sw, j + kx // sw]``: consecutive
    along the output row, so im2col copies rows instead of gathering every other pixel
    (ResNet-18's 7x7 stem at batch 8, one thread: 1.84M gathered elements per image
    against the 159K of the phases)."""
    top, left, bottom, right = pads
    _, _, h, w = data.shape
    hp, wp = h + top + bottom, w + left + right
    q = -(-wp // sw)  # (a last column past the padding is never read: im2col reads inside it)

    def body(b: Any, ch: Any, row: Any, px: Any, col_q: Any) -> Any:
        return padded_pixel(data, b, ch, row - top, col_q * sw + px - left, pads, 0.0)

    return te.compute((data.shape[0], data.shape[1], hp, sw, q), body, name="pad")


def _stride_phases(data: Any, pads: tuple[int, int, int, int], strides: tuple[int, int], rows: int, cols: int) -> Any:
    """The zero-padded ``data`` (NCHW) split in its 2-D stride phases, ``rows x cols`` each:
    ``out[b, c, py, px, r, u] = padded[b, c, r * SH + py, u * SW + px]``, zero past the
    padded input too (:func:`_tiled_gemm`)."""
    top, left, _, _ = pads
    (sh, sw), (_, _, h, w) = strides, data.shape
    # a side is guarded where the phases reach past the input on it
    guard = (top, left, int(rows * sh - top > h), int(cols * sw - left > w))

    def body(b: Any, ch: Any, py: Any, px: Any, r: Any, u: Any) -> Any:
        return padded_pixel(data, b, ch, r * sh + py - top, u * sw + px - left, guard, 0.0)

    return te.compute((data.shape[0], data.shape[1], sh, sw, rows, cols), body, name="pad")


def _rows_gemm(n: Any, f: int, oh: int, ow: int, k: int, kernel: Any, tap: Any, band_rows: int | None = None,
               pixels_as_rows: bool = False) -> Any:
    """:func:`conv2d_gemm` with a flattened kernel ``(F, K)``: the input padded once (a
    compute of its own; fused into im2col without ``gather``), then im2col ``(K, OH, OW)``
    (per image, ``tap(b, r, i, j)``) reading it at
    affine indices, no condition: along an output row a stride-1 tap reads consecutive
    pixels, a row copy rather than a gather per element (the clamped reads of the padding
    read in place were gathers). The contraction reads im2col at ``[rk, p // OW, p % OW]``,
    which the default schedule views as ``(K, OH * OW)`` (:mod:`mlc_mlir.schedule.index_maps`).

    With ``band_rows`` R (fewer than OH): im2col ``(N, OH / R, K, R, OW)`` and the contraction
    ``y[b, f, t, p] = sum(kernel[f, k] * col[b, t, k, p // OW, p % OW])`` per band ``t`` of
    R output rows, ``(N, F, OH / R, R * OW)`` (the same memory as NCHW; one image: no batch
    dim): a band's im2col
    (K x R * OW) can be computed just before its gemm and stay in cache (per image, the
    64-channel 3x3 convolution's 7.2 MB im2col came back from L3).

    ``pixels_as_rows``: ``kernel`` is ``(K, F)`` and the contraction ``y[(n,) p, f]``, read
    back transposed (:func:`conv2d_gemm`)."""
    pixels = oh * ow
    rk = te.reduce_axis((0, k), "rk")
    if pixels_as_rows:
        if isinstance(n, int) and n == 1:
            col = te.compute((k, oh, ow), lambda r, i, j: tap(0, r, i, j), name="im2col")
            y = te.compute((pixels, f), lambda p, o: te.sum(col[rk, p // ow, p % ow] * kernel[rk, o], axis=rk),
                           name="conv2d_gemm")
            return te.compute((n, f, oh, ow), lambda b, o, i, j: y[i * ow + j, o], name="conv2d")
        col = te.compute((n, k, oh, ow), lambda b, r, i, j: tap(b, r, i, j), name="im2col")
        y = te.compute((n, pixels, f), lambda b, p, o: te.sum(col[b, rk, p // ow, p % ow] * kernel[rk, o], axis=rk),
                       name="conv2d_gemm")
        return te.compute((n, f, oh, ow), lambda b, o, i, j: y[b, i * ow + j, o], name="conv2d")
    if band_rows is not None and band_rows < oh:
        rows, bands = band_rows, oh // band_rows
        if isinstance(n, int) and n == 1:  # (no unit batch dim: (band, K, R, OW) and (F, band, R * OW))
            col = te.compute((bands, k, rows, ow), lambda t, r, i, j: tap(0, r, t * rows + i, j), name="im2col")
            y = te.compute((f, bands, rows * ow),
                           lambda o, t, p: te.sum(kernel[o, rk] * col[t, rk, p // ow, p % ow], axis=rk),
                           name="conv2d_gemm")
            return te.compute((n, f, oh, ow), lambda b, o, i, j: y[o, i // rows, i % rows * ow + j], name="conv2d")
        col = te.compute((n, bands, k, rows, ow), lambda b, t, r, i, j: tap(b, r, t * rows + i, j), name="im2col")
        y = te.compute((n, f, bands, rows * ow),
                       lambda b, o, t, p: te.sum(kernel[o, rk] * col[b, t, rk, p // ow, p % ow], axis=rk),
                       name="conv2d_gemm")
        return te.compute((n, f, oh, ow), lambda b, o, i, j: y[b, o, i // rows, i % rows * ow + j], name="conv2d")
    if isinstance(n, int) and n == 1:
        col = te.compute((k, oh, ow), lambda r, i, j: tap(0, r, i, j), name="im2col")
        y = te.compute((f, pixels), lambda o, p: te.sum(kernel[o, rk] * col[rk, p // ow, p % ow], axis=rk),
                       name="conv2d_gemm")
        return te.compute((n, f, oh, ow), lambda b, o, i, j: y[o, i * ow + j], name="conv2d")
    col = te.compute((n, k, oh, ow), lambda b, r, i, j: tap(b, r, i, j), name="im2col")
    y = te.compute((n, f, pixels), lambda b, o, p: te.sum(kernel[o, rk] * col[b, rk, p // ow, p % ow], axis=rk),
                   name="conv2d_gemm")
    return te.compute((n, f, oh, ow), lambda b, o, i, j: y[b, o, i * ow + j], name="conv2d")
