"""Convolutions in bands of output rows: im2col ``(N, OH / R, K, R, OW)`` and the contraction
``(N, F, OH / R, R * OW)`` per band, each band's im2col computed just before its gemm
(``topi.nn.conv2d_gemm(band_rows=R)``, chosen by the default schedule's convolution strategy
for a batch of images whose im2col is large); the result viewed in NCHW through an
expand + collapse; equal to torch, with the epilogue (bias, residual add, ReLU) per image.
And one image's stride-1 convolution in packed tiles of wide pixels
(``topi.nn.conv2d_gemm(pixel_tile=L)``), each tile's im2col just before its gemm."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.errors import TEError
from mlc_mlir.schedule import Schedule
from mlc_mlir.schedule.conv_gemm import BAND_MIN_BYTES, band_rows
from mlc_mlir.context import mlc_context
from mlc_mlir.schedule.payload import compose_groups, read_blocks
from mlc_mlir.schedule.rule_common import contraction_of
from mlc_mlir.schedule.rules import apply_rules, default_schedule, window_strategies


@pytest.mark.parametrize("batch,c,hw,f,rows,stride", [(2, 3, 12, 8, 3, 1), (1, 4, 10, 6, 5, 1),
                                                      (2, 3, 16, 5, 2, 2), ("n", 2, 9, 4, 3, 1)])
def test_banded_conv2d_gemm_equals_torch(batch, c, hw, f, rows, stride):
    # the te form itself (no schedule, and under the default rules): bands of ``rows`` rows,
    # one image without a batch dim, a strided kernel (column phases), a symbolic batch
    x = te.placeholder((batch, c, hw, hw), name="x")
    w = te.placeholder((f, c * 9), name="w")
    y = topi.nn.conv2d_gemm(x, w, stride, 1, 1, gather=True, kernel_size=(3, 3), band_rows=rows)
    mod = te.create_prim_func([x, w, y], name="conv")
    ow = (hw + 2 - 3) // stride + 1
    # im2col (..., bands, K, rows, OW) and the contraction (..., F, bands, rows * OW)
    text = str(mod)
    assert f"x{c * 9}x{rows}x{ow}xf32>" in text and f"{f}x{ow // rows}x{rows * ow}xf32>" in text, text
    n = 3 if batch == "n" else batch
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((n, c, hw, hw)).astype("float32")
    wv = rng.standard_normal((f, c, 3, 3)).astype("float32")
    want = F.conv2d(torch.from_numpy(xv), torch.from_numpy(wv), stride=stride, padding=1).numpy()
    _check_unscheduled_and_default(mod, xv, wv, want)


def _check_unscheduled_and_default(mod, xv, wv, want):
    """``mod`` (``conv(x, w flattened, out)``) as it is and under the default rules equals ``want``."""
    for scheduled in (mod, default_schedule(mod)):
        out = np.full(want.shape, np.nan, "float32")
        mlc.build(scheduled)["conv"](xv, wv.reshape(wv.shape[0], -1), out)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_band_rows_must_divide_the_output_rows():
    x, w = te.placeholder((2, 3, 12, 12), name="x"), te.placeholder((8, 27), name="w")
    with pytest.raises(TEError, match="band_rows"):
        topi.nn.conv2d_gemm(x, w, 1, 1, 1, kernel_size=(3, 3), band_rows=5)
    with pytest.raises(TEError, match="band_rows"):
        topi.nn.conv2d_gemm(x, te.placeholder((8, 3, 3, 3), name="k"), 1, 1, 1, band_rows=4)


def test_band_rows_choice():
    # a large im2col per image (over 1 MB): the most rows whose pixels are whole 16-lane
    # vectors up to 224; a small im2col, or no such rows: whole images
    assert band_rows(576, 56, 56) == 4          # ResNet-18's 3x3 at 64 channels: 224 pixels
    assert band_rows(147, 112, 112) == 2        # its 7x7 stem
    assert band_rows(1152, 28, 28) == 4         # 128 channels: 112 pixels
    assert band_rows(2304, 14, 14) is None      # 7 rows = 98 pixels: not whole vectors
    assert band_rows(27, 112, 112) == 2         # MobileNet-v2's 3x3 stem of stride 2: 1.35 MB
    assert band_rows(27, 32, 32) is None        # 110 KB
    assert 27 * 32 * 32 * 4 <= BAND_MIN_BYTES < 27 * 112 * 112 * 4


def _resnet_block(batch, c, hw):
    """conv 3x3 (pad 1) + bias + residual + ReLU as legalization gives it (a named op)."""
    src = f"""
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#b = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
module {{
  func.func @k(%x: tensor<{batch}x{c}x{hw}x{hw}xf32>, %w: tensor<{c}x{c}x3x3xf32>, %bias: tensor<1x{c}x1x1xf32>,
               %res: tensor<{batch}x{c}x{hw}x{hw}xf32>, %out: tensor<{batch}x{c}x{hw}x{hw}xf32>)
      -> tensor<{batch}x{c}x{hw}x{hw}xf32> attributes {{mlc.prim_func}} {{
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<{batch}x{c}x{hw}x{hw}xf32>
    %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {{
    ^bb0(%a: index, %b2: index, %c2: index, %d: index):
      tensor.yield %z : f32
    }} : tensor<{batch}x{c}x{hw}x{hw}xf32> to tensor<{batch}x{c}x{hw + 2}x{hw + 2}xf32>
    %f = linalg.fill {{mlc.block_init = "conv2d"}} ins(%z : f32) outs(%e : tensor<{batch}x{c}x{hw}x{hw}xf32>)
        -> tensor<{batch}x{c}x{hw}x{hw}xf32>
    %y = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : tensor<2xi64>, mlc.block = "conv2d",
                                    strides = dense<1> : tensor<2xi64>}}
        ins(%p, %w : tensor<{batch}x{c}x{hw + 2}x{hw + 2}xf32>, tensor<{c}x{c}x3x3xf32>)
        outs(%f : tensor<{batch}x{c}x{hw}x{hw}xf32>) -> tensor<{batch}x{c}x{hw}x{hw}xf32>
    %r = linalg.generic {{indexing_maps = [#id, #b, #id, #id],
                         iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
        ins(%y, %bias, %res : tensor<{batch}x{c}x{hw}x{hw}xf32>, tensor<1x{c}x1x1xf32>,
                              tensor<{batch}x{c}x{hw}x{hw}xf32>)
        outs(%out : tensor<{batch}x{c}x{hw}x{hw}xf32>) attrs = {{mlc.block = "relu"}} {{
    ^bb0(%a: f32, %b3: f32, %s: f32, %o: f32):
      %0 = arith.addf %a, %b3 : f32
      %1 = arith.addf %0, %s : f32
      %2 = arith.maximumf %1, %z : f32
      linalg.yield %2 : f32
    }} -> tensor<{batch}x{c}x{hw}x{hw}xf32>
    return %r : tensor<{batch}x{c}x{hw}x{hw}xf32>
  }}
}}"""
    return mlc.Module.parse(src)


def _check_block(built, batch, c, hw, seed, scale=1.0):
    """Run ``_resnet_block``'s kernel ``k`` of ``built`` (a runtime module) on random data of
    ``batch`` images of ``c`` channels, ``hw`` x ``hw`` (the weights scaled by ``scale``) and
    compare with torch."""
    rng = np.random.default_rng(seed)
    xv, rv = (rng.standard_normal((batch, c, hw, hw)).astype("float32") for _ in range(2))
    wv = (rng.standard_normal((c, c, 3, 3)) * scale).astype("float32")
    bv = rng.standard_normal((1, c, 1, 1)).astype("float32")
    want = torch.relu(F.conv2d(torch.from_numpy(xv), torch.from_numpy(wv), padding=1) + torch.from_numpy(bv)
                      + torch.from_numpy(rv)).numpy()
    out = np.full(want.shape, np.nan, "float32")
    built["k"](xv, wv, bv, rv, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("batch", [2, 3])
def test_resnet_block_in_bands_equals_torch(batch):
    # 64 channels at 56 x 56: im2col (batch, 14, 576, 4, 56), computed per band at the gemm's
    # band loop; the bias + residual + ReLU per image; equal to torch (one image takes packed
    # tiles of wide pixels instead: test_resnet_block_in_tiles_equals_torch)
    mod = _resnet_block(batch, 64, 56)
    text = str(window_strategies(mod))
    lead = f"{batch}x" if batch > 1 else ""
    assert f"tensor<{lead}14x576x4x56xf32>" in text and f"tensor<{lead}64x14x224xf32>" in text, text
    sch = Schedule(window_strategies(mod))
    apply_rules(sch, "llvm -num-cores=2")
    trace = str(sch.trace)
    gemm_loops = [ln for ln in trace.splitlines() if ln.startswith("l") and "get_loops(block=b" in ln]
    assert gemm_loops and "sch.compute_at(block=" in trace, trace
    # loops (n, f, band, p, k): the third; one image (f, band, p, k): the second
    band_loop = gemm_loops[0].split(" = ")[0].split(", ")[2 if batch > 1 else 1]
    assert f"sch.compute_at(block=b" in trace and f"loop={band_loop})" in trace, trace
    rt = mlc.build(sch.mod)
    _check_block(rt, batch, 64, 56, 3, 0.05)
    # the band's im2col and the image's result are aligned_alloc'ed, not malloc'ed and aligned
    # by pointer arithmetic that LLVM's alias analysis cannot see through: the gemm's
    # accumulators then stayed in memory, stored at every k step (the banded 3x3 convolution at
    # 64 channels, batch 8: 28.7 ms; 14.9 with aligned_alloc)
    llvm_ir = rt.get_source("llvm")
    assert "@aligned_alloc(" in llvm_ir and "@malloc(" not in llvm_ir


def test_view_of_a_view_composes_its_groups():
    # (n, f, band, rows * ow) expanded to (n, f, band, rows, ow), collapsed to (n, f, oh, ow):
    # n and f kept, (oh, ow) against (band, rows * ow)
    expand = (((0,), (0,)), ((1,), (1,)), ((2,), (2,)), ((3, 4), (3,)))
    collapse = (((0,), (0,)), ((1,), (1,)), ((2,), (2, 3)), ((3,), (4,)))
    assert compose_groups(collapse, expand) == (((0,), (0,)), ((1,), (1,)), ((2, 3), (2, 3)))
    # one image: (f, band, p) expanded to (1, f, band, rows, ow): the unit batch dim joins f
    expand1 = (((0, 1), (0,)), ((2,), (1,)), ((3, 4), (2,)))
    assert compose_groups(collapse, expand1) == (((0, 1), (0,)), ((2, 3), (1, 2)))


def test_contraction_rows_are_the_dim_the_kernel_reads():
    # y[b, f, t, p] = sum(w[f, k] * col[b, t, k, p]): rows f (the output's second dim), batch (b, t)
    w = te.placeholder((8, 27), name="w")
    col = te.placeholder((2, 3, 27, 16), name="col")
    rk = te.reduce_axis((0, 27), "rk")
    y = te.compute((2, 8, 3, 16), lambda b, o, t, p: te.sum(w[o, rk] * col[b, t, rk, p], axis=rk), name="Y")
    mod = te.create_prim_func([w, col, y], name="g")
    with mlc_context():
        info = read_blocks(mod.mlir_module)[("g", "Y")]
    kind = contraction_of(info)
    assert (kind.i, kind.j, kind.batch) == (1, 3, (0, 2))


def test_resnet_block_in_tiles_equals_torch():
    # one image, stride 1 (topi.nn.conv2d_gemm(pixel_tile=16)): the input padded once with a
    # zero row more below (56 + 2 + 1 rows of 58), im2col in 203 tiles of 16 wide pixels
    # (56 x 58 = 3248 = 203 x 16) laid out (tile, C, KH, KW, 16), computed per tile at the
    # gemm's tile loop, the gemm (F, tiles, 16), its 56 real pixels of each row copied to NCHW;
    # the padded input viewed flat for im2col (affine reads), the gemm's result not (its
    # register tile's accumulators stay in registers); equal to torch
    mod = _resnet_block(1, 64, 56)
    text = str(window_strategies(mod))
    assert "tensor<1x64x59x58xf32>" in text and "tensor<203x64x3x3x16xf32>" in text, text
    assert "tensor<64x203x16xf32>" in text and "into tensor<1x64x3422xf32>" in text, text
    assert "x3248xf32>" not in text, text  # (no view of the gemm's result)
    # its 56 real pixels of each row read by tensor.extract (no floordiv map: a vectorized
    # copy, its epilogue computed on its rows; the gathers' offsets cancel to runs)
    assert "floordiv" not in text and "arith.divsi" in text, text
    sch = Schedule(window_strategies(mod))
    apply_rules(sch, "llvm -num-cores=2")
    trace = str(sch.trace)
    after_copy = trace.split('get_block(name="conv2d",')[1]
    assert "sch.vectorize(" in after_copy and "sch.reverse_compute_at(block=" in after_copy, trace
    gemm_loops = next(ln for ln in trace.splitlines() if ln.startswith("l") and "get_loops(block=b0)" in ln)
    tile_loop = gemm_loops.split(" = ")[0].split(", ")[1]  # loops (f, tile, lane, k)
    assert f"loop={tile_loop})" in next(ln for ln in trace.splitlines() if "compute_at(" in ln), trace
    _check_block(mlc.build(sch.mod), 1, 64, 56, 4, 0.05)


def test_tiles_of_rows_not_whole_vectors_are_copied_by_their_map():
    """Rows of 28 pixels (4-lane vectors: measured 2-5% slower as extracts than copied as
    scalar loops with the epilogue in rows of the collapsed image) keep the floordiv map."""
    text = str(window_strategies(_resnet_block(1, 16, 28)))
    assert "tensor<16x53x16xf32>" in text and "floordiv" in text, text


@pytest.mark.parametrize("batch,c,h,w,f,k,pad,dil,stride", [
    (1, 3, 9, 11, 5, 3, 1, 1, 1), (2, 4, 7, 6, 8, 3, 0, 1, 1), ("n", 2, 10, 9, 3, 5, 2, 1, 1),
    (1, 3, 12, 13, 4, 3, 2, 2, 1), (1, 2, 5, 5, 16, 1, 1, 1, 1),
    # stride phases: odd and even sizes, a 7x7 stem, a dilated tap, stride 3 and (2, 1), a
    # 1x1 of stride 2 without padding, a batch
    (1, 3, 9, 11, 5, 3, 1, 1, 2), (1, 4, 12, 12, 6, 3, 1, 1, 2), (1, 3, 15, 14, 4, 7, 3, 1, 2),
    (2, 2, 11, 10, 3, 3, 1, 2, 2), (1, 2, 13, 11, 3, 3, 1, 1, 3), ("n", 3, 8, 9, 5, 3, 1, 1, (2, 1)),
    (1, 4, 9, 9, 8, 1, 0, 1, 2)])
@pytest.mark.parametrize("tile", [16, 8])
def test_tiled_conv2d_gemm_equals_torch(batch, c, h, w, f, k, pad, dil, stride, tile):
    # odd sizes, no padding, a dilated 3x3, a 5x5, a padded 1x1, a batch and a symbolic one,
    # strides (2-D phases); unscheduled and under the default rules (gather or padded copy alike)
    x = te.placeholder((batch, c, h, w), name="x")
    wt = te.placeholder((f, c * k * k), name="w")
    n = 2 if batch == "n" else batch
    rng = np.random.default_rng(6)
    xv = rng.standard_normal((n, c, h, w)).astype("float32")
    wv = rng.standard_normal((f, c, k, k)).astype("float32")
    want = F.conv2d(torch.from_numpy(xv), torch.from_numpy(wv), padding=pad, dilation=dil, stride=stride).numpy()
    for gather in (True, False):
        y = topi.nn.conv2d_gemm(x, wt, stride, pad, dil, gather=gather, kernel_size=(k, k), pixel_tile=tile)
        assert y.shape[2:] == want.shape[2:]
        _check_unscheduled_and_default(te.create_prim_func([x, wt, y], name="conv"), xv, wv, want)


def test_pixel_tile_errors():
    x, w = te.placeholder((1, 3, 12, 12), name="x"), te.placeholder((8, 27), name="w")
    for kwargs in ({"pixel_tile": 0}, {"pixel_tile": 16, "band_rows": 2}, {"pixel_tile": 4.0}, {"pixel_tile": True}):
        with pytest.raises(TEError, match="pixel_tile"):
            topi.nn.conv2d_gemm(x, w, 1, 1, 1, kernel_size=(3, 3), **kwargs)
    with pytest.raises(TEError, match="pixel_tile"):
        topi.nn.conv2d_gemm(x, te.placeholder((8, 3, 3, 3), name="k"), 1, 1, 1, pixel_tile=16)


@pytest.mark.parametrize("batch,hw,tiled", [(1, 56, True), (1, 28, True), (1, 14, True), (1, 16, False),
                                            (1, 7, False), (2, 28, False)])
def test_tiles_for_one_image_where_they_waste_little(batch, hw, tiled):
    # 56 x 58 wide pixels for 56 x 56 (3.6% more), 28 x 30 in 53 tiles (8%): tiles; 14 x 16
    # for 196 pixels (14%, but 196 is no multiple of 16 either: MAX_WIDE_PARTIAL): tiles;
    # 16 x 18 for 256 (12.5%, whole tiles of plain pixels) and 7 x 9 in 4 tiles (64 for 49):
    # no tiles; a batch: no tiles (bands or whole images)
    text = str(window_strategies(_resnet_block(batch, 8, hw)))
    assert (f"x8x3x3x16xf32>" in text) == tiled, text


def test_tiles_as_wide_as_the_target_register_tile():
    """The packed tiles are the target's register tile wide (AVX2 16 pixels, AVX-512 32; AVX2's
    where no target is named), and whether a convolution takes them is judged at that width:
    24 x 24 (26 x 24 wide pixels: 624 -> 624 in tiles of 16, 640 of 32, 11% over 576) only at
    16; 20 x 20 (440 for 400 pixels, no multiple of 32: 448, within 1.2x) only at 32. A 32-wide
    tiling built for this host's rules equals torch."""
    from mlc_mlir.schedule.conv_gemm import pixel_tile, takes_pixel_tiles
    avx2, avx512 = "llvm -mcpu=haswell -num-cores=1", "llvm -mcpu=skylake-avx512 -num-cores=1"
    assert pixel_tile() == 16 == pixel_tile(avx2) and pixel_tile(avx512) == 32
    assert takes_pixel_tiles(1, (3, 3), (1, 1), 1, 24, (24, 24))
    assert not takes_pixel_tiles(1, (3, 3), (1, 1), 1, 24, (24, 24), tile=32)
    assert takes_pixel_tiles(1, (3, 3), (1, 1), 1, 20, (20, 20), tile=32)
    assert not takes_pixel_tiles(1, (3, 3), (1, 1), 1, 20, (20, 20))
    mod = _resnet_block(1, 8, 20)
    assert "x8x3x3x16xf32>" not in str(window_strategies(mod, avx2))
    text = str(window_strategies(mod, avx512))
    assert "tensor<14x8x3x3x32xf32>" in text and "tensor<8x14x32xf32>" in text, text  # 21 x 22 / 32 tiles
    sch = Schedule(window_strategies(mod, avx512))
    apply_rules(sch, "llvm -num-cores=1")
    _check_block(mlc.build(sch.mod), 1, 8, 20, 9)


@pytest.mark.parametrize("hw", [14, 13])
def test_tiles_at_a_padded_width_of_one_tile(monkeypatch, hw):
    # a padded width of exactly 16 (14 + 2): the copy to NCHW reads y[o, i, j] for j < 14 of
    # 16 lanes once the ranges fold its index, which linalg's verifier refuses: that fold is
    # not taken (the whole function otherwise kept its maps unfolded: im2col a gather, 27x
    # slower); im2col still reads the padded input viewed flat; equal to torch
    from mlc_mlir.schedule import conv_gemm
    monkeypatch.setattr(conv_gemm, "MAX_WIDE_PARTIAL", 2.0)  # (the waste alone would leave 13 x 13 untiled)
    mod = _resnet_block(1, 8, hw)
    text = str(window_strategies(mod))
    assert "x8x3x3x16xf32>" in text and f"into tensor<1x8x{(hw + 3) * (hw + 2)}xf32>" in text, text
    _check_block(mlc.build(default_schedule(mod)), 1, 8, hw, 7)


def test_takes_pixel_tiles_reads_any_padding_form(monkeypatch):
    from mlc_mlir.schedule import conv_gemm
    from mlc_mlir.schedule.conv_gemm import takes_pixel_tiles
    # one image of ResNet-18's 64-channel layer: 56 rows of 58 wide pixels, 203 tiles
    for pads in (1, (1, 1), (1, 1, 1, 1)):
        assert takes_pixel_tiles(1, (3, 3), (1, 1), pads, 56, (56, 56))
    assert not takes_pixel_tiles(2, (3, 3), (1, 1), 1, 56, (56, 56))  # a batch keeps the bands
    assert not takes_pixel_tiles(1, (1, 1), (1, 1), 0, 56, (56, 56))  # read as it is
    # stride 2 (its 2-D stride phases) only where TILED_STRIDES holds it: 256 -> 14 x 14 from
    # 28 x 28 is 14 rows of 15 wide pixels, 224 for 196 (within MAX_WIDE_PARTIAL)
    assert not takes_pixel_tiles(1, (3, 3), (2, 2), 1, 28, (14, 14))
    monkeypatch.setattr(conv_gemm, "TILED_STRIDES", frozenset({(1, 1), (2, 2)}))
    assert takes_pixel_tiles(1, (3, 3), (2, 2), 1, 28, (14, 14))
    with pytest.raises(TEError, match="padding"):
        takes_pixel_tiles(1, (3, 3), (1, 1), (1, 2, 3), 56, (56, 56))
