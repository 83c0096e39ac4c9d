"""The matmul schedules of the benchmarks, their register tile derived from the target.

Two kinds: schedules written with the course primitives (``mlc.Schedule``:
:func:`primitive_schedule`, :func:`blocked_schedule`) and hand-written transform scripts
(``schedules/*.mlir``, templates rendered by :func:`render_script`). Each takes its
register tile ``MR x NR`` from :func:`register_tile`: the target's
(:meth:`mlc_mlir.target.Target.register_tile`, AVX2 f32 6 x 16, AVX-512 14 x 32) with the
rows cut to a divisor of the block so that every tile is full.

Shared by benchmarks/bench_matmul.py (times them) and tests/python/test_schedule_perf_shape.py,
tests/python/test_bench_schedules.py (check their code and results).
"""

from __future__ import annotations

from pathlib import Path

import mlc_mlir as mlc
from mlc_mlir.target import Target
from mlc_mlir.testing.programs import matmul_text as programs_matmul_text
from mlc_mlir.testing.programs import mm_relu_text

__all__ = ["register_tile", "render_script", "matmul_blocking", "primitive_schedule", "blocked_schedule"]

SCHEDULES = Path(__file__).resolve().parent / "schedules"


def register_tile(target: Target | str | None = None, rows: int | None = None) -> tuple[int, int]:
    """(MR, NR): the target's f32 register tile, MR cut to the largest divisor of ``rows``."""
    mr, nr = Target.of(target).register_tile("float32")
    if rows is not None:
        mr = max(d for d in range(1, mr + 1) if rows % d == 0)
    return mr, nr


def render_script(name: str, target: Target | str | None = None, n: int | None = None) -> str:
    """The transform script ``schedules/<name>`` with the target's register tile filled in.

    ``mm_relu128.mlir`` (``n`` = 128 rows by default): rows [0, SPLIT) in MR x NR tiles,
    the rest in MR2 x NR tiles (SPLIT the largest multiple of MR leaving a multiple of 4
    rows); ``mm_relu128_parallel.mlir``: rows [0, SPLIT) (a multiple of MR x cores) in an
    scf.forall with one block of rows per core, the rest after it.
    ``matmul1024.mlir`` (``n`` = 1024): see :func:`matmul_blocking`.
    """
    text = (SCHEDULES / name).read_text()
    if "@NC@" in text:
        subs = matmul_blocking(target, 1024 if n is None else n)
    else:
        subs = _mm_relu_tiles(text, target, 128 if n is None else n)
    for key, value in subs.items():
        text = text.replace(f"@{key}@", str(value))
    return text


def _mm_relu_tiles(text: str, target: Target | str | None, n: int) -> dict[str, int]:
    tgt = Target.of(target)
    mr, nr = register_tile(tgt)
    if "@ROWS@" in text:  # rows [0, SPLIT) in a forall, one block per core; the rest after it
        cores = tgt.num_cores
        split = max(s for s in range(0, n + 1, mr * cores) if (n - s) % 4 == 0)
        mr2 = 4 if split < n else mr
        if split == n:  # keep the script's shape: the last MR rows after the forall
            split, mr2 = n - mr * cores, mr
        return {"MR": mr, "NR": nr, "SPLIT": split, "MR2": mr2, "ROWS": split // cores}
    split = max(s for s in range(0, n + 1, mr) if (n - s) % 4 == 0)
    mr2 = 4 if split < n else mr
    if split == n:  # every row in MR x NR tiles: split off nothing but keep the script's shape
        split, mr2 = n - mr, mr
    return {"MR": mr, "NR": nr, "SPLIT": split, "MR2": mr2}


def matmul_blocking(target: Target | str | None = None, n: int = 1024, *, nc: int = 128,
                    kc: int = 512) -> dict[str, int]:
    """The parameters of ``schedules/matmul1024.mlir`` for an ``n`` x ``n`` x ``n`` matmul.

    MR x NR: the target's register tile, every tile full: rows [0, SPLIT) with SPLIT the
    largest multiple of MR x cores below ``n`` (at least one MR x cores block is left to the
    remainder so the script keeps its shape), ROWS = SPLIT / cores rows per thread, the
    REST = ``n`` - SPLIT rows in MR2 x NR tiles (MR2 the largest divisor of REST up to MR).
    NC x KC: the packed B panel (``nc``, ``kc`` cut to divisors of ``n``; 128 x 512 = 256 KiB,
    half of a Zen 3 L2: 1.04-1.08x NumPy's one-thread time against 1.08-1.09x for 512 x 256
    or 256 x 256, one process, machine shared).
    """
    tgt = Target.of(target)
    mr, nr = tgt.register_tile("float32")
    block = mr * tgt.num_cores
    split = (n - 1) // block * block
    if split <= 0:
        raise ValueError(f"matmul_blocking: n={n} is smaller than one block of {block} rows")
    rest = n - split
    mr2 = max(d for d in range(1, mr + 1) if rest % d == 0)
    nc, kc = (max(d for d in range(nr, min(size, n) + 1, nr) if n % d == 0) for size in (nc, kc))
    return {"MR": mr, "NR": nr, "SPLIT": split, "ROWS": split // tgt.num_cores, "REST": rest, "MR2": mr2,
            "NC": nc, "KC": kc}


def primitive_schedule(mod: mlc.Module, *, block: str = "Y", target: Target | str | None = None,
                       k_block: int = 256) -> mlc.Schedule:
    """MR x NR register tile of ``block`` (MR rows unrolled, NR columns vectorized), k by
    ``k_block``; the MR-row blocks run in parallel."""
    sch = mlc.Schedule(mod)
    b = sch.get_block(block)
    i, j, k = sch.get_loops(b)
    mr, nr = register_tile(target, rows=256)
    i0, i1 = sch.split(i, [None, mr])
    j0, j1 = sch.split(j, [None, nr])
    k0, k1 = sch.split(k, [None, k_block])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.parallel(i0)
    sch.vectorize(j1)
    sch.unroll(i1)
    sch.decompose_reduction(b, k0)
    return sch


def blocked_schedule(mod: mlc.Module, *, block: str = "Y", row_tiles: int = 32, k_block: int = 256,
                     vectorize_copy: bool = True, target: Target | str | None = None) -> mlc.Schedule:
    """The same register tile inside cache blocks: ``row_tiles`` x MR rows per parallel
    block, k by ``k_block``, and the tile of B that the block's register tiles share copied
    into a local (contiguous) buffer, ``cache_read`` + ``compute_at`` (NR floats at a time
    when ``vectorize_copy``)."""
    sch = mlc.Schedule(mod)
    b = sch.get_block(block)
    i, j, k = sch.get_loops(b)
    mr, nr = register_tile(target, rows=256)
    i0, i1, i2 = sch.split(i, [None, row_tiles, mr])
    j0, j1 = sch.split(j, [None, nr])
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


def matmul_text(n: int, relu: bool) -> str:
    """``main(A, B, C)``: C = A @ B (block ``Y``), or C = max(A @ B, 0) (blocks ``Y``, ``C``):
    the programs of :mod:`mlc_mlir.testing.programs` (the tests' own definitions)."""
    return mm_relu_text(n, name="main") if relu else programs_matmul_text(n, block="Y")
