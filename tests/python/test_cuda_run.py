"""CUDA kernels run on the GPU and compared with NumPy (skipped without a CUDA driver)."""

import numpy as np
import pytest
from _cuda_util import matmul_blocking, vector_add

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.compiler.cuda import cuda_driver, device_arch

pytestmark = pytest.mark.skipif(cuda_driver() is None or device_arch() is None, reason="needs a CUDA GPU")


def test_vector_add(rng):
    rt = mlc.build(vector_add(1024, 128).mod, target="cuda")
    a, b = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
    c = np.zeros(1024, np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_partial_tiles(rng):
    rt = mlc.build(vector_add(1000, 128).mod, target="cuda")
    a, b = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    c = np.full(1000, -1.0, np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_matmul_blocking(rng):
    rt = mlc.build(matmul_blocking(256).mod, target="cuda")
    a, b = rng.random((256, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    c = np.zeros((256, 256), np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    timing = rt.time_evaluator("main", mlc.cuda(0), number=3)(a, b, c)
    assert timing.mean > 0


def test_two_kernels_with_math(rng):
    A = te.placeholder((1024,), "float32", name="A")
    B = te.compute((1024,), lambda i: te.exp(A[i]), name="B")
    C = te.compute((1024,), lambda i: B[i] + 1.0, name="C")
    sch = mlc.Schedule(te.create_prim_func([A, C], name="two"))
    for block in ("B", "C"):
        (i,) = sch.get_loops(sch.get_block(block))
        i0, i1 = sch.split(i, factors=[None, 256])
        sch.bind(i0, "blockIdx.x")
        sch.bind(i1, "threadIdx.x")
    rt = mlc.build(sch.mod, target="cuda")
    a = rng.random(1024, dtype=np.float32)
    c = np.zeros(1024, np.float32)
    rt["two"](a, c)
    np.testing.assert_allclose(c, np.exp(a) + 1.0, rtol=1e-5)
