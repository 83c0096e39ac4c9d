"""The course's ch.6 GPU schedules, written with the course primitives (``mlc.Schedule``).

Shared by benchmarks/bench_cuda.py (times them on a GPU) and tests/python/test_cuda_shared.py
(checks what they compile to, and runs them where a GPU is).
"""

from __future__ import annotations

import mlc_mlir as mlc
from mlc_mlir import te

__all__ = ["vector_add", "window_sum", "matmul", "matmul_shared"]


def vector_add(n: int, nthread: int = 256) -> mlc.Schedule:
    """``C = A + B``: ``i`` split by ``nthread``, bound to blockIdx.x / threadIdx.x."""
    A = te.placeholder((n,), "float32", name="A")
    B = te.placeholder((n,), "float32", name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    sch = mlc.Schedule(te.create_prim_func([A, B, C], name="main"))
    (i,) = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return sch


def window_sum(n: int, nthread: int = 128, shared: bool = True) -> mlc.Schedule:
    """Course ch.6.2: ``B[i] = A[i] + A[i+1] + A[i+2]`` with ``A`` read through shared memory."""
    A = te.placeholder((n + 2,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] + A[i + 1] + A[i + 2], name="C")
    sch = mlc.Schedule(te.create_prim_func([A, B], name="main"))
    block_C = sch.get_block("C")
    (i,) = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    if shared:
        A_shared = sch.cache_read(block_C, read_buffer_index=0, storage_scope="shared")
        sch.compute_at(A_shared, i1)
    return sch


def matmul(n: int) -> mlc.Module:
    """``C = A @ B`` on ``n x n`` float32 (block ``C``)."""
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C], name="main")


def _cache_read_and_coop_fetch(sch: mlc.Schedule, block, nthread: int, read_idx: int, read_loc, vec: int) -> None:
    read_cache = sch.cache_read(block=block, read_buffer_index=read_idx, storage_scope="shared")
    sch.compute_at(block=read_cache, loop=read_loc)
    # vectorized cooperative fetch
    inner0, inner1 = sch.get_loops(block=read_cache)[-2:]
    inner = sch.fuse(inner0, inner1)
    _, tx, v = sch.split(loop=inner, factors=[None, nthread, vec])
    sch.vectorize(v)
    sch.bind(tx, "threadIdx.x")


def matmul_shared(n: int, *, tile_local_y: int = 8, tile_local_x: int = 8, tile_block_y: int = 8,
                  tile_block_x: int = 8, tile_k: int = 8, vec: int = 4) -> mlc.Schedule:
    """Course ch.6.3 ``blocking_with_shared``: a ``tile_local_y x tile_local_x`` accumulator
    per thread in registers (``cache_write(..., "local")``), the block's tiles of A and B in
    shared memory fetched cooperatively with ``vec``-wide loads.

    One change from the course's code: ``fuse(i1, j1)`` comes before
    ``reverse_compute_at(C_local, ...)`` (fusing a loop shared by two blocks is not
    supported here); the loop nest is the same.
    """
    sch = mlc.Schedule(matmul(n))
    block_C = sch.get_block("C")
    C_local = sch.cache_write(block_C, 0, "local")
    i, j, k = sch.get_loops(block=block_C)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    tx = sch.fuse(i1, j1)
    sch.reverse_compute_at(C_local, tx)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    nthread = tile_block_y * tile_block_x
    _cache_read_and_coop_fetch(sch, block_C, nthread, 0, k0, vec)
    _cache_read_and_coop_fetch(sch, block_C, nthread, 1, k0, vec)
    sch.decompose_reduction(block_C, k0)
    return sch
