"""A convolution's im2col computed per batch item: ``compute_at`` through a reshape view
(the contraction reads the im2col ``(n, k, oh, ow)`` as ``(n, k, oh * ow)``) and the
default rules' ``im2col_at`` decision that uses it. Numbers against NumPy and torch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mlc_mlir as mlc
from mlc_mlir import ScheduleError, te, topi
from mlc_mlir.schedule.rules import apply_rules, window_strategies

N, K, H, W, M = 3, 4, 5, 6, 7


def _view_program(epilogue: bool = False) -> mlc.Module:
    """``P = 2 * x`` (n, k, h, w), read by a contraction ``Y[n, i, p] = sum_k A[i, k] * P[n, k, p]``
    through ``collapse_shape`` (p = h * w); with ``epilogue``, ``Z = max(Y, 0)`` read back
    as (n, i, h, w) through ``expand_shape`` is the result."""
    p = H * W
    res = f"tensor<{N}x{M}x{H}x{W}xf32>" if epilogue else f"tensor<{N}x{M}x{p}xf32>"
    ret = f"return %r : tensor<{N}x{M}x{p}xf32>"
    if epilogue:
        ret = f"""%ex = tensor.expand_shape %r [[0], [1], [2, 3]] output_shape [{N}, {M}, {H}, {W}] : tensor<{N}x{M}x{p}xf32> into {res}
    %z = linalg.generic {{indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}} ins(%ex : {res}) outs(%y : {res})
        attrs = {{mlc.block = "Z"}} {{
    ^bb0(%in: f32, %out: f32):
      %m = arith.maximumf %in, %cst : f32
      linalg.yield %m : f32
    }} -> {res}
    return %z : {res}"""
    return mlc.Module.parse(f"""
module {{
  func.func @f(%x: tensor<{N}x{K}x{H}x{W}xf32>, %a: tensor<{M}x{K}xf32>, %y: {res}) -> {res} attributes {{mlc.prim_func}} {{
    %cst = arith.constant 0.0 : f32
    %two = arith.constant 2.0 : f32
    %e = tensor.empty() : tensor<{N}x{K}x{H}x{W}xf32>
    %pr = linalg.generic {{indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}} ins(%x : tensor<{N}x{K}x{H}x{W}xf32>)
        outs(%e : tensor<{N}x{K}x{H}x{W}xf32>) attrs = {{mlc.block = "P"}} {{
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %two : f32
      linalg.yield %m : f32
    }} -> tensor<{N}x{K}x{H}x{W}xf32>
    %v = tensor.collapse_shape %pr [[0], [1], [2, 3]] : tensor<{N}x{K}x{H}x{W}xf32> into tensor<{N}x{K}x{p}xf32>
    %ey = tensor.empty() : tensor<{N}x{M}x{p}xf32>
    %f = linalg.fill {{mlc.block_init = "Y"}} ins(%cst : f32) outs(%ey : tensor<{N}x{M}x{p}xf32>) -> tensor<{N}x{M}x{p}xf32>
    %r = linalg.generic {{indexing_maps = [affine_map<(n, i, q, k) -> (i, k)>, affine_map<(n, i, q, k) -> (n, k, q)>,
        affine_map<(n, i, q, k) -> (n, i, q)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
        ins(%a, %v : tensor<{M}x{K}xf32>, tensor<{N}x{K}x{p}xf32>) outs(%f : tensor<{N}x{M}x{p}xf32>) attrs = {{mlc.block = "Y"}} {{
    ^bb0(%u: f32, %w: f32, %o: f32):
      %s = arith.mulf %u, %w : f32
      %t = arith.addf %o, %s : f32
      linalg.yield %t : f32
    }} -> tensor<{N}x{M}x{p}xf32>
    {ret}
  }}
}}""")


def _run_view(mod: mlc.Module) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N, K, H, W), dtype=np.float32)
    a = rng.standard_normal((M, K), dtype=np.float32)
    y = np.zeros((N, M, H * W), np.float32)
    mlc.build(mod)["f"](x, a, y)
    want = np.einsum("ik,nkq->niq", a, 2 * x.reshape(N, K, H * W))
    return np.asarray(y), want


def test_compute_at_through_a_reshape_view_computes_one_item_per_iteration():
    sch = mlc.Schedule(_view_program())
    n, i, q, k = sch.get_loops(sch.get_block("Y"))
    sch.compute_at(sch.get_block("P"), n)
    loops = sch.get_loops(sch.get_block("P"))
    assert [lp.name for lp in loops][0] == n.name and len(loops) == 4  # n shared, then (k, h, w)
    text = str(sch.mod)
    # the producer's tile (one item) inside the loop, reshaped there
    assert "tensor<1x4x5x6xf32>" in text and "tensor.collapse_shape" in text.split("scf.for")[1]
    y, want = _run_view(sch.mod)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_compute_at_through_a_reshape_view_refuses_to_tile_the_reshaped_dim():
    sch = mlc.Schedule(_view_program())
    n, i, q, k = sch.get_loops(sch.get_block("Y"))
    sch.reorder(n, q, i, k)
    with pytest.raises(ScheduleError, match="through a reshape.*reshaped dim"):
        sch.compute_at(sch.get_block("P"), q)
    # the schedule is unchanged by the refusal: at n it still works
    sch.compute_at(sch.get_block("P"), n)
    y, want = _run_view(sch.mod)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_reverse_compute_at_through_a_reshape_view():
    """A consumer reading the contraction's result through ``expand_shape`` computed at the
    contraction's batch loop; tiling the reshaped dim there is refused."""
    p = H * W
    sch = mlc.Schedule(_view_program(epilogue=True))
    n, i, q, k = sch.get_loops(sch.get_block("Y"))
    sch.reorder(n, q, i, k)
    with pytest.raises(ScheduleError, match="through a reshape.*reshaped dim"):
        sch.reverse_compute_at(sch.get_block("Z"), q)
    sch.compute_at(sch.get_block("P"), n)
    sch.reverse_compute_at(sch.get_block("Z"), n)
    assert [lp.name for lp in sch.get_loops(sch.get_block("Z"))][0] == n.name
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N, K, H, W), dtype=np.float32)
    a = rng.standard_normal((M, K), dtype=np.float32)
    out = np.zeros((N, M, H, W), np.float32)
    mlc.build(sch.mod)["f"](x, a, out)
    want = np.maximum(np.einsum("ik,nkq->niq", a, 2 * x.reshape(N, K, p)), 0).reshape(N, M, H, W)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


def _conv(batch: int, c: int, hw: int, f: int) -> mlc.Module:
    x, w = te.placeholder((batch, c, hw, hw), name="x"), te.placeholder((f, c, 3, 3), name="w")
    b = te.placeholder((f,), name="b")
    conv = topi.nn.conv2d(x, w, 1, 1)
    y = topi.nn.relu(te.compute(conv.shape, lambda n, c, i, j: conv[n, c, i, j] + b[c], name="bias"))
    return mlc.Module.parse(str(te.create_prim_func([x, w, b, y], name="conv")))


@pytest.mark.parametrize("shape", [(2, 64, 28, 64), (3, 32, 7, 48)], ids=["blocked", "register_tile"])
@pytest.mark.parametrize("at", [1, 0])
def test_rules_compute_a_convs_im2col_per_image_and_equal_torch(shape, at):
    """Both contraction rules (cache blocks for 64 x 576 x 784, the register tile for
    48 x 288 x 49) take decision ``im2col_at``: 1 (the default) computes the im2col at the
    batch loop, one image per iteration; 0 the whole batch's first. Both equal torch."""
    batch, c, hw, f = shape
    sch = mlc.Schedule(window_strategies(_conv(batch, c, hw, f)))
    apply_rules(sch, decide={"im2col_at": at})
    trace = str(sch.trace)
    im2col = sch.get_block("conv2d_im2col", "conv")
    gemm = sch.get_block("conv2d_gemm", "conv")
    shared = sch.get_loops(im2col)[0].uid == sch.get_loops(gemm)[0].uid
    assert shared == bool(at), trace
    if at:  # the epilogue (bias, ReLU, read through the NCHW view) per image as well
        assert "reverse_compute_at" in trace, trace
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((batch, c, hw, hw), dtype=np.float32)
    wv = rng.standard_normal((f, c, 3, 3), dtype=np.float32)
    bv = rng.standard_normal((f,), dtype=np.float32)
    out = np.zeros((batch, f, hw, hw), np.float32)
    mlc.build(sch.mod)["conv"](xv, wv, bv, out)
    want = torch.relu(F.conv2d(torch.from_numpy(xv), torch.from_numpy(wv), torch.from_numpy(bv), padding=1)).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
