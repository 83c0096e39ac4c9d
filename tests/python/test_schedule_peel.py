"""``peel`` (full tiles only) and the register-tile schedule it makes expressible: mm_relu
128 with a 6x16 register tile (128 = 21 x 6 + 2 rows), the accumulator carried in vector
registers across k, relu applied to the tile (no timing here: benchmarks/bench_tune.py)."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.schedule import Schedule, Trace
from mlc_mlir.schedule.rules import apply_rules
from mlc_mlir.testing import check_mm_relu, filecheck
from mlc_mlir.testing.programs import inputs, mm_relu

from test_schedule_perf_shape import ir_after_stage


def register_tile(mod, mr=6, nr=16, *, peel=True):
    """Y in mr x nr register tiles (rows unrolled, columns vectorized), C on the tile."""
    sch = Schedule(mod)
    b = sch.get_block("Y")
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, mr])
    j0, j1 = sch.split(j, [None, nr])
    sch.reorder(i0, j0, k, i1, j1)
    if peel:
        sch.peel(i0)
    sch.vectorize(j1)
    sch.unroll(i1)
    c = sch.get_block("C")
    sch.reverse_compute_at(c, j0)
    ax0, ax1 = sch.get_loops(c)[-2:]
    sch.vectorize(ax1)
    sch.unroll(ax0)
    sch.decompose_reduction(b, k)
    return sch


def test_peel_gives_full_tiles_and_equals_numpy():
    sch = register_tile(mm_relu())
    # 21 full 6-row tiles, then the 2-row remainder; both unrolled
    filecheck(str(sch.mod), """
    CHECK: scf.for %{{.*}} = %c0 to %c126 step %c6
    CHECK: tensor.extract_slice {{.*}} [6, 16] [1, 1]
    CHECK: {mlc.loop = "i_0"}
    CHECK: tensor.extract_slice %{{.*}}[126, 0] [2, 128] [1, 1]
    CHECK: return
    """)
    check_mm_relu(sch)


def test_peeled_trace_prints_serializes_and_replays():
    sch = register_tile(mm_relu())
    assert "sch.peel(loop=l" in str(sch.trace)
    again = Schedule(mm_relu()).replay(Trace.from_json(sch.trace.as_json()))
    assert str(again.mod) == str(sch.mod)


def test_register_accumulator_is_loop_carried(capsys):
    after, rt = ir_after_stage(register_tile(mm_relu()).mod, "vector-opt", capsys)
    # main loop: the k loop carries the 6 rows of the 6x16 tile as vectors (2 x 8 lanes
    # after the x86 split, or 16 lanes), broadcast + FMA per row, relu on the registers
    filecheck(after, """
    CHECK: scf.for %{{.*}} = %c0 to %c126 step %c6
    CHECK: scf.for {{.*}} iter_args({{.*}}) -> ([[V:vector<(1x)?16xf32>]], [[V]], [[V]], [[V]], [[V]], [[V]])
    CHECK-COUNT-6: vector.fma {{.*}} : vector<16xf32>
    CHECK: scf.yield
    CHECK: arith.maximumf {{.*}} vector<
    """)
    a, b = inputs(128)
    c = np.zeros((128, 128), np.float32)
    rt["mm_relu"](a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_peel_is_a_no_op_when_the_step_divides():
    plain = register_tile(mm_relu(), mr=4, peel=False)
    peeled = register_tile(mm_relu(), mr=4)
    assert str(plain.mod) == str(peeled.mod)


@pytest.mark.parametrize("cores", [1, 2])
def test_rules_use_the_full_register_tile(cores):
    # the default rules: 6 rows (AVX2's register tile) with the remainder peeled, one block
    # of rows per core
    sch = Schedule(mm_relu())
    apply_rules(sch, f"llvm -mcpu=haswell -num-cores={cores}")
    text = str(sch.trace)
    assert "factors=[None, 6]" in text and "sch.peel(" in text
    check_mm_relu(sch)


def test_peel_errors():
    sch = Schedule(mm_relu())
    b = sch.get_block("Y")
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, 6])
    sch.peel(i0)
    with pytest.raises(mlc.ScheduleError, match="already peeled"):
        sch.peel(i0)
    with pytest.raises(mlc.ScheduleError, match="peeled"):
        sch.parallel(i0)
    with pytest.raises(mlc.ScheduleError, match="peeled"):
        sch.split(i0, [None, 2])
    j0, j1 = sch.split(j, [None, 16])
    sch.peel(j0)  # rows and columns may both be peeled (other dims)
    i10, _ = sch.split(i1, [None, 2])
    with pytest.raises(mlc.ScheduleError, match="both peel the same dim"):
        sch.peel(i10)
    sch.reverse_compute_at(sch.get_block("C"), i0)
    with pytest.raises(mlc.ScheduleError, match="shared"):
        sch.peel(sch.get_loops("C")[0])
