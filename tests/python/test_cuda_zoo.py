"""The default GPU rules on the kernels of real models: batched matmuls (attention), pooling
and 4-d elementwise blocks bind their inner loops to blockIdx.x/y/z and keep a batch serial
in each thread. The schedules run on the CPU too (bound loops as loops) and equal NumPy
there; the GPT-2 block builds for CUDA everywhere and, with a GPU, equals torch."""

from __future__ import annotations

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.compiler.cuda import cuda_driver, device_arch
from mlc_mlir.schedule.gpu_rules import apply_gpu_rules, default_gpu_schedule

needs_gpu = pytest.mark.skipif(cuda_driver() is None or device_arch() is None, reason="needs a CUDA GPU")


def _batch_matmul(b: int, m: int, n: int, k: int) -> mlc.Module:
    A = te.placeholder((b, m, k), "float32", name="A")
    B = te.placeholder((b, k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((b, m, n), lambda x, i, j: te.sum(A[x, i, r] * B[x, r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C], name="main")


def _gpu_ruled(mod: mlc.Module) -> mlc.Schedule:
    sch = mlc.Schedule(mod)
    apply_gpu_rules(sch)
    return sch


def test_batch_matmul_binds_three_axes_and_runs_on_the_cpu(rng):
    sch = _gpu_ruled(_batch_matmul(3, 20, 40, 16))
    script = str(sch.trace)
    assert "blockIdx.y" in script and "blockIdx.z" in script and "fuse" not in script
    rt = mlc.build(sch.mod, target="llvm")
    a = rng.standard_normal((3, 20, 16), dtype=np.float32)
    b = rng.standard_normal((3, 16, 40), dtype=np.float32)
    c = np.zeros((3, 20, 40), np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_batch_of_four_dims_stays_serial_in_each_thread(rng):
    """A 4-d batched matmul (batch x heads x rows x columns): the batch loop is not bound."""
    A = te.placeholder((2, 3, 8, 5), "float32", name="A")
    B = te.placeholder((2, 3, 5, 6), "float32", name="B")
    r = te.reduce_axis((0, 5), name="r")
    C = te.compute((2, 3, 8, 6), lambda n, h, i, j: te.sum(A[n, h, i, r] * B[n, h, r, j], axis=r), name="C")
    sch = _gpu_ruled(te.create_prim_func([A, B, C], name="main"))
    assert str(sch.trace).count("bind") == 4  # z, y, x and threadIdx.x; the batch loop stays serial
    rt = mlc.build(sch.mod, target="llvm")
    a = rng.standard_normal((2, 3, 8, 5), dtype=np.float32)
    b = rng.standard_normal((2, 3, 5, 6), dtype=np.float32)
    c = np.zeros((2, 3, 8, 6), np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_max_pool_with_padding_builds_for_cuda_and_runs_on_the_cpu(rng):
    """The pad becomes a block (a kernel) of its own; its -inf is a constant outside the
    pad's region (inside it, upstream's pad tiling aborted the interpreter)."""
    X = te.placeholder((2, 4, 9, 9), "float32", name="X")
    Y = topi.nn.max_pool2d(X, 3, 2, padding=1)
    mod = te.create_prim_func([X, Y], name="main")
    assert "tensor.pad" in str(mod)
    scheduled = default_gpu_schedule(mod)
    assert "tensor.pad" not in str(scheduled) and "tensor.pad" in str(mod)  # (mod itself unchanged)
    assert mlc.build(scheduled, target="cuda").get_source("ptx").count(".visible .entry") == 2
    rt = mlc.build(scheduled, target="llvm")
    x = rng.standard_normal((2, 4, 9, 9), dtype=np.float32)
    y = np.zeros((2, 4, 5, 5), np.float32)
    rt["main"](x, y)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    ref = np.max([padded[:, :, i:i + 9:2, j:j + 9:2] for i in range(3) for j in range(3)], axis=0)
    np.testing.assert_array_equal(y, ref)


@pytest.fixture(scope="module")
def gpt2():
    torch = pytest.importorskip("torch")
    from mlc_mlir.testing import models as Z

    model = Z.seeded(Z.GPT2Block(d=64, n_head=4, block_size=16))
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(0))
    mod = mlc.frontend.from_exported_program(torch.export.export(model, (x,)))
    return model, x, mlc.graph.build(mod, target="cuda")


def test_gpt2_block_builds_for_cuda(gpt2):
    _, _, ex = gpt2
    ptx = ex.get_source("ptx")
    assert ptx.count(".visible .entry") >= 10  # a kernel per block


def _runs_like_torch(built) -> None:
    """The model built for CUDA, run on GPU 0, equals torch on the CPU."""
    import torch

    model, x, ex = built
    vm = mlc.graph.VirtualMachine(ex, mlc.cuda(0))
    out = vm["main"](mlc.runtime.array(x.numpy(), device=mlc.cuda(0))).numpy()
    with torch.no_grad():
        ref = model(x).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@needs_gpu
def test_gpt2_block_runs_on_the_gpu(gpt2):
    _runs_like_torch(gpt2)


@pytest.fixture(scope="module")
def resnet():
    torch = pytest.importorskip("torch")
    from mlc_mlir.testing import models as Z

    model = Z.seeded(Z.ResNet18(width=8, num_classes=10))
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    mod = mlc.frontend.from_exported_program(torch.export.export(model, (x,)))
    return model, x, mlc.graph.build(mod, target="cuda")


def test_resnet18_builds_for_cuda(resnet):
    """Convolutions and the max pool read their padded inputs from pad kernels."""
    _, _, ex = resnet
    assert ex.get_source("ptx").count(".visible .entry") >= 20


@needs_gpu
def test_resnet18_runs_on_the_gpu(resnet):
    _runs_like_torch(resnet)
