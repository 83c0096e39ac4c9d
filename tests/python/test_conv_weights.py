"""Convolutions with the pixels as the gemm's rows (graph/transform/conv_weights.py,
schedule/conv_gemm.py): the graph pass stores qualifying constant weights (C, KH, KW, F)
behind a permute_dims, the convolution strategy reads them so and computes
y[p, f] = sum(col[k, p] * w[k, f]), transposed back to NCHW. Models built so equal torch; the
kernels take that form only for a transposed weight."""

import numpy as np
import pytest
import torch

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.errors import TEError
from mlc_mlir.graph.transform import optimize as opt
from mlc_mlir.graph.transform.conv_weights import pixels_as_rows, transpose_conv_weights
from mlc_mlir.ir import Module
from mlc_mlir.schedule.rules import apply_rules, window_strategies


class Net(torch.nn.Module):
    """3x3 convolutions to 14 x 14 (stride 1 and 2, taken), a residual add, a 1x1 (left
    alone) and a 7 x 7 output whose im2col is small (taken)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.b = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.c = torch.nn.Conv2d(16, 24, 1)
        self.d = torch.nn.Conv2d(24, 16, 3, stride=2, padding=1)

    def forward(self, x):
        y = torch.relu(self.a(x))
        z = torch.relu(self.b(y) + y)
        return self.d(self.c(z))


def _graph(batch):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(batch, 8, 28, 28)
    return model, x, mlc.frontend.from_exported_program(torch.export.export(model, (x,)))


def _ops(mod, name):
    return [line for line in str(mod).splitlines() if f'"{name}"' in line]


@pytest.mark.parametrize("batch", [1, 2])
def test_pass_transposes_the_qualifying_weights_only(batch):
    _, _, mod = _graph(batch)
    out = transpose_conv_weights(opt.optimize(mod, opt_level=0))
    perms = _ops(out, "mlc.permute_dims")
    # a (8 -> 16, 14 x 14, stride 2), b (16 -> 16, 14 x 14) and d (24 -> 16, 7 x 7: a 42 KB
    # im2col); not c (1x1); nor b for one image (stride 1: packed tiles of wide pixels, which
    # read the weights as they are)
    assert len(perms) == (2 if batch == 1 else 3) and all("axes = array<i64: 3, 0, 1, 2>" in p for p in perms)
    assert any("tensor<8x3x3x16xf32>" in line for line in _ops(out, "mlc.constant"))
    assert not _ops(mod, "mlc.permute_dims")  # the input is left untouched
    assert pixels_as_rows((1, 256, 14, 14), (256, 256, 3, 3))
    assert not pixels_as_rows((1, 256, 14, 14), (256, 256, 1, 1))
    assert not pixels_as_rows((1, 64, 56, 56), (64, 64, 3, 3))
    assert not pixels_as_rows((1, 512, 7, 7), (512, 512, 3, 3))  # a 903 KB im2col
    assert pixels_as_rows((1, 512, 7, 7), (512, 256, 3, 3))  # 451 KB: ResNet-18's stride-2 layer
    assert not pixels_as_rows((1, 20, 14, 14), (20, 8, 3, 3))  # channels no multiple of 8


def test_pass_judges_the_tiles_at_the_target_width():
    """One image at 11 x 11 (121 pixels, stride 1; 11 rows of 13 wide pixels, 143): tiles of
    16 hold 144 (within 1.2x of 121: taken), so AVX2's weights stay as they are; at 32 (160)
    they would be stored for the pixels as rows, but an AVX-512 target keeps every weight
    as it is (there the pixels as columns measured faster); no target named: AVX2's. The
    batch-2 graph of ``Net`` (three qualifying weights on AVX2) keeps all on AVX-512.
    graph.build judges for the host; the result equals torch."""
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(1, 8, 11, 11)
    mod = opt.optimize(mlc.frontend.from_exported_program(torch.export.export(model, (x,))), opt_level=0)
    avx2, avx512 = "llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"
    assert not _ops(transpose_conv_weights(mod), "mlc.permute_dims")
    assert not _ops(transpose_conv_weights(mod, avx2), "mlc.permute_dims")
    assert not _ops(transpose_conv_weights(mod, avx512), "mlc.permute_dims")
    net = opt.optimize(_graph(2)[2], opt_level=0)
    assert len(_ops(transpose_conv_weights(net, avx2), "mlc.permute_dims")) == 3
    assert not _ops(transpose_conv_weights(net, avx512), "mlc.permute_dims")
    ref = model(x).detach().numpy()
    ex = mlc.graph.build(mlc.frontend.from_exported_program(torch.export.export(model, (x,))), "llvm")
    assert "fused_permute_dims_conv2d" not in str(ex.optimized)
    out = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](mlc.runtime.array(x.numpy())).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_build_runs_the_stage():
    assert "transpose-conv-weights" in [s.name for s in opt.optimization_stages(2)]
    assert "transpose-conv-weights" not in [s.name for s in opt.optimization_stages(1)]


@pytest.mark.parametrize("batch", [1, 3])
def test_models_built_so_equal_torch(batch):
    # (an AVX2 target: an AVX-512 one keeps the weights as they are)
    model, x, mod = _graph(batch)
    ex = mlc.graph.build(mod, "llvm -mcpu=haswell")
    assert "fused_permute_dims_conv2d" in str(ex.optimized)  # the transpose fused into the kernel
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    out = vm["main"](mlc.runtime.array(x.numpy())).numpy()
    ref = model(x).detach().numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_cuda_builds_keep_the_oihw_weights():
    # (the stored layout serves the CPU rules' convolution strategy; compiled only, no GPU needed)
    _, _, mod = _graph(1)
    ex = mlc.graph.build(mod, "cuda")
    assert "permute_dims" not in str(ex.optimized) and "conv2d" in str(ex.optimized)


def _conv_kernel(batch, perm, ks=3):
    """A tensor program: the weight given (C, KH, KW, F) and transposed by ``perm`` into
    what conv2d reads, as the fused kernel has it."""
    x = te.placeholder((batch, 16, 14, 14), name="x")
    stored = te.placeholder((16, ks, ks, 32) if perm == (3, 0, 1, 2) else (32, 16, ks, ks), name="w")
    w = topi.transpose(stored, perm)
    y = topi.nn.conv2d(x, w, 1, ks // 2)
    return te.create_prim_func([x, stored, y], name="main")


@pytest.mark.parametrize("batch,ks", [(1, 3), (2, 3), (1, 1), (2, 1)])
def test_strategy_reads_the_stored_weights_with_pixels_as_rows(batch, ks):
    """3x3 through im2col; 1x1 (the graph pass leaves those, a user's transpose does not)
    reading the input viewed (C, H * W)."""
    rng = np.random.default_rng(batch)
    mod = window_strategies(_conv_kernel(batch, (3, 0, 1, 2), ks))
    text = str(mod)
    gemm = next(line for line in text.splitlines() if 'mlc.block = "conv2d_gemm"' in line)
    rows = "196x32" if batch == 1 else f"{batch}x196x32"
    assert f": tensor<{rows}xf32>) attrs" in gemm  # (its outs)
    assert "linalg.transpose" not in text and 'mlc.block = "permute_dims"' not in text
    sch = mlc.Schedule(mod)
    apply_rules(sch, "llvm")
    f = mlc.build(sch.mod, "llvm")["main"]
    x = rng.standard_normal((batch, 16, 14, 14), dtype=np.float32)
    w = rng.standard_normal((32, 16, ks, ks), dtype=np.float32)
    out = np.zeros((batch, 32, 14, 14), np.float32)
    f(x, np.ascontiguousarray(w.transpose(1, 2, 3, 0)), out)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=ks // 2).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_other_transposes_keep_the_channels_as_rows():
    # (an OIHW weight transposed to itself in another order: not the stored form; one image
    # of stride 1 in packed tiles of wide pixels, 14 of 16, the channels as rows too)
    for batch, out in ((1, "32x14x16"), (2, "2x32x196")):
        mod = window_strategies(_conv_kernel(batch, (0, 1, 3, 2)))
        gemm = next(line for line in str(mod).splitlines() if 'mlc.block = "conv2d_gemm"' in line)
        assert f": tensor<{out}xf32>) attrs" in gemm, gemm


def test_conv2d_gemm_pixels_as_rows_needs_a_flat_kernel():
    x = te.placeholder((1, 4, 6, 6), name="x")
    with pytest.raises(TEError, match="pixels_as_rows needs a flattened kernel"):
        topi.nn.conv2d_gemm(x, te.placeholder((8, 4, 3, 3), name="w"), 1, 1, pixels_as_rows=True)
    with pytest.raises(TEError, match="pixels_as_rows needs a flattened kernel"):
        topi.nn.conv2d_gemm(x, te.placeholder((36, 8), name="w"), 1, 1, kernel_size=(3, 3), band_rows=3,
                            pixels_as_rows=True)


def test_pass_rejects_a_non_module():
    with pytest.raises(mlc.MlcError, match="expects an mlc.Module"):
        transpose_conv_weights("module {}")
    assert isinstance(transpose_conv_weights(Module.parse("module {}")), Module)
