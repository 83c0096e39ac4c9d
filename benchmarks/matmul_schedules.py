"""The matmul schedules written with the course primitives (``mlc.Schedule``).

Shared by benchmarks/bench_matmul.py (times them at 1024) and
tests/python/test_schedule_perf_shape.py (checks their code shape at 256).
"""

from __future__ import annotations

import mlc_mlir as mlc

__all__ = ["primitive_schedule", "blocked_schedule"]


def primitive_schedule(mod: mlc.Module, *, block: str = "Y") -> mlc.Schedule:
    """8x32 register tile of ``block``: rows split by 8 (unrolled), columns by 32
    (vectorized), k by 256; the 8-row blocks run in parallel."""
    sch = mlc.Schedule(mod)
    b = sch.get_block(block)
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 32])
    k0, k1 = sch.split(k, [None, 256])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.parallel(i0)
    sch.vectorize(j1)
    sch.unroll(i1)
    sch.decompose_reduction(b, k0)
    return sch


def blocked_schedule(mod: mlc.Module, *, block: str = "Y", row_tiles: int = 32, k_block: int = 256,
                     vectorize_copy: bool = True) -> mlc.Schedule:
    """The same 8x32 register tile inside cache blocks: ``row_tiles`` x 8 rows per parallel
    block, k by ``k_block``, and the tile of B that the block's register tiles share copied
    into a local (contiguous) buffer, ``cache_read`` + ``compute_at`` (32 floats at a time
    when ``vectorize_copy``)."""
    sch = mlc.Schedule(mod)
    b = sch.get_block(block)
    i, j, k = sch.get_loops(b)
    i0, i1, i2 = sch.split(i, [None, row_tiles, 8])
    j0, j1 = sch.split(j, [None, 32])
    k0, k1 = sch.split(k, [None, k_block])
    sch.reorder(i0, k0, j0, i1, k1, i2, j1)
    sch.parallel(i0)
    sch.vectorize(j1)
    sch.unroll(i2)
    b_local = sch.cache_read(b, 1, "local")
    sch.compute_at(b_local, j0)
    if vectorize_copy:
        sch.vectorize(sch.get_loops(b_local)[-1])
    return sch
