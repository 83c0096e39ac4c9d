"""sample_perfect_tile: every tiling multiplies to the extent, for several n and extents."""

from __future__ import annotations

import itertools
import math

import pytest

from mlc_mlir.schedule import Schedule
from mlc_mlir.schedule.sampling import perfect_tilings

from _schedule_util import check_matmul, matmul


def _brute(extent: int, n: int, limit: int) -> list[tuple[int, ...]]:
    divs = [d for d in range(1, extent + 1) if extent % d == 0]
    return sorted(t for t in itertools.product(divs, repeat=n) if math.prod(t) == extent and t[-1] <= limit)


@pytest.mark.parametrize("extent", [1, 12, 17, 64, 96])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_perfect_tilings_are_exactly_the_tilings(extent, n):
    assert perfect_tilings(extent, n, 16) == _brute(extent, n, 16)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_sampled_tiles_multiply_to_the_extent(n):
    for seed in range(8):
        sch = Schedule(matmul(96), seed=seed)
        i, j, k = sch.get_loops(sch.get_block("C"))
        factors = sch.sample_perfect_tile(j, n=n, max_innermost_factor=8)
        values = [int(f) for f in factors]
        assert len(values) == n and math.prod(values) == 96 and values[-1] <= 8, values
        assert f"decision={values}" in str(sch.trace)


def test_sampled_split_runs_and_replays():
    sch = Schedule(matmul(96), seed=3)
    i, j, k = sch.get_loops(sch.get_block("C"))
    loops = sch.split(j, sch.sample_perfect_tile(j, n=3, max_innermost_factor=8))
    assert len(loops) == 3
    check_matmul(sch, 96)
