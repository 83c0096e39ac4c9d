"""The course ch.6 GPU schedules (vector add, blocked matmul) used by the CUDA tests."""

from __future__ import annotations

import mlc_mlir as mlc
from mlc_mlir import te

__all__ = ["vector_add", "matmul_blocking"]


def vector_add(n: int = 1024, threads: int = 128) -> mlc.Schedule:
    """Course ch.6.1: ``C = A + B``, ``i`` split by ``threads`` and bound to blockIdx/threadIdx."""
    A = te.placeholder((n,), "float32", name="A")
    B = te.placeholder((n,), "float32", name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    sch = mlc.Schedule(te.create_prim_func([A, B, C], name="main"))
    (i,) = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, threads])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return sch


def matmul_blocking(n: int = 256, local: int = 8, block: int = 8, tile_k: int = 4) -> mlc.Schedule:
    """Course ch.6.3.1 ``blocking``: a ``local`` x ``local`` accumulator per thread, ``block``
    x ``block`` threads per block, ``k`` split by ``tile_k`` and unrolled."""
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = mlc.Schedule(te.create_prim_func([A, B, C], name="main"))
    block_C = sch.get_block("C")
    C_local = sch.cache_write(block_C, 0, "local")
    i, j, k = sch.get_loops(block_C)
    i0, i1, i2 = sch.split(i, factors=[None, block, local])
    j0, j1, j2 = sch.split(j, factors=[None, block, local])
    k0, k1 = sch.split(k, factors=[None, tile_k])
    sch.unroll(k1)
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(C_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    sch.decompose_reduction(block_C, k0)
    return sch
