"""Traces (printing, replay, decisions), sampling, transform scripts."""

import pytest

import mlc_mlir as mlc
from mlc_mlir import ScheduleError
from mlc_mlir.schedule import Schedule, apply_transform_script
from mlc_mlir.testing import filecheck

from _schedule_util import check_matmul, matmul, mm_relu


def stochastic_schedule_mm(sch):
    """Course ch.4."""
    block_c = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_c)
    j_factors = sch.sample_perfect_tile(loop=j, n=2)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_c, k)
    return sch


def test_trace_prints_like_the_course():
    sch = stochastic_schedule_mm(Schedule(matmul(), seed=3))
    lines = str(sch.trace).splitlines()
    d = sch.trace.decisions[2]
    assert lines == [
        'b0 = sch.get_block(name="C", func_name="main")',
        "l1, l2, l3 = sch.get_loops(block=b0)",
        f"v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision={d})",
        "l6, l7 = sch.split(loop=l2, factors=[v4, v5])",
        "sch.reorder(l1, l6, l3, l7)",
        "b8 = sch.decompose_reduction(block=b0, loop=l3)",
    ]
    check_matmul(sch)


def test_sampling_is_reproducible_and_perfect():
    seen = set()
    for seed in range(8):
        a = stochastic_schedule_mm(Schedule(matmul(), seed=seed))
        b = stochastic_schedule_mm(Schedule(matmul(), seed=seed))
        assert a.trace.decisions == b.trace.decisions
        assert str(a.mod) == str(b.mod)
        outer, inner = a.trace.decisions[2]
        assert outer * inner == 128 and inner <= 16
        seen.add(inner)
    assert len(seen) > 1


def test_with_decisions_replays_other_tiling():
    sch = stochastic_schedule_mm(Schedule(matmul(), seed=0))
    other = sch.trace.with_decisions({2: [32, 4]}).apply(matmul())
    direct = Schedule(matmul())
    block_c = direct.get_block("C", "main")
    i, j, k = direct.get_loops(block_c)
    j0, j1 = direct.split(j, factors=[32, 4])
    direct.reorder(i, j0, k, j1)
    direct.decompose_reduction(block_c, k)
    filecheck(str(other.mod), """
        CHECK: %[[C4:.+]] = arith.constant 4 : index
        CHECK: scf.for {{.*}} step %[[C4]]
    """)
    assert "decision=[32, 4]" in str(other.trace)
    check_matmul(other)
    with pytest.raises(ScheduleError, match="not a sampling instruction"):
        sch.trace.with_decisions({0: [1, 128]})
    with pytest.raises(ScheduleError, match="not a tiling"):
        sch.trace.with_decisions({2: [3, 4]}).apply()


def test_sample_perfect_tile_errors_and_options():
    sch = Schedule(matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    v = sch.sample_perfect_tile(j, n=3, max_innermost_factor=4, decision=[8, 4, 4])
    assert [int(x) for x in v] == [8, 4, 4]
    with pytest.raises(ScheduleError, match="not a tiling"):
        sch.sample_perfect_tile(j, n=2, max_innermost_factor=4, decision=[16, 8])
    with pytest.raises(ScheduleError, match="n must be"):
        sch.sample_perfect_tile(j, n=0)


def test_sample_categorical():
    sch = Schedule(matmul(), seed=1)
    v = sch.sample_categorical(candidates=[0, 16, 64, 512], probs=[0.25, 0.25, 0.25, 0.25], decision=1)
    assert int(v) == 16
    assert str(sch.trace).endswith(
        "v0 = sch.sample_categorical(candidates=[0, 16, 64, 512], probs=[0.25, 0.25, 0.25, 0.25], decision=1)")
    assert 'transform.tune.knob<"sample_categorical.v0"> = 16 : i64 from options = [0, 16, 64, 512]' in \
        sch.transform_script()
    with pytest.raises(ScheduleError, match="sum to 1"):
        sch.sample_categorical([1, 2], [0.5, 0.6])
    with pytest.raises(ScheduleError, match="2 candidates but 1"):
        sch.sample_categorical([1, 2], [1.0])
    with pytest.raises(ScheduleError, match="index"):
        sch.sample_categorical([1, 2], [0.5, 0.5], decision=2)


def test_transform_script_round_trip():
    sch = stochastic_schedule_mm(Schedule(matmul(), seed=5))
    script = sch.trace.transform_script()
    assert "transform.tune.knob<\"sample_perfect_tile.v4_v5\">" in script
    assert "transform.structured.fuse" in script and "transform.structured.tile_using_for" in script
    again = apply_transform_script(matmul(), script)
    assert str(again) == str(sch.mod)


def test_apply_transform_script_hand_written():
    script = """
    module attributes {transform.with_named_sequence} {
      transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
        %c = transform.structured.match attributes{mlc.block = "C"} in %root
            : (!transform.any_op) -> !transform.any_op
        %t, %l = transform.structured.tile_using_for %c tile_sizes [0, 4]
            : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
        transform.yield
      }
    }"""
    mod = matmul()
    out = apply_transform_script(mod, script)
    assert "scf.for" in str(out) and "scf.for" not in str(mod)
    a = mlc.Module.parse(str(out))
    from _schedule_util import inputs, run
    import numpy as np
    x, y = inputs()
    np.testing.assert_allclose(run(a, "main", x, y, np.zeros((128, 128), np.float32)), x @ y, rtol=1e-4, atol=1e-4)


def test_apply_transform_script_errors():
    mod = matmul()
    with pytest.raises(ScheduleError, match="does not parse"):
        apply_transform_script(mod, "module {")
    with pytest.raises(ScheduleError, match="with_named_sequence"):
        apply_transform_script(mod, "module {}")
    with pytest.raises(ScheduleError, match="no `transform.named_sequence @__transform_main`"):
        apply_transform_script(mod, "module attributes {transform.with_named_sequence} {}")
    bad = """
    module attributes {transform.with_named_sequence} {
      transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
        %k = transform.tune.knob<"unset"> options = [1, 2] -> !transform.any_param
        transform.yield
      }
    }"""
    with pytest.raises(ScheduleError, match="transform script failed"):
        apply_transform_script(mod, bad)
    with pytest.raises(ScheduleError, match="expects an mlc.Module"):
        apply_transform_script("x", bad)


def test_schedule_rejects_bad_input_and_copy_is_independent():
    with pytest.raises(ScheduleError, match="expects an mlc.Module"):
        Schedule("func.func")
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    other = sch.copy()
    sch.split(j, factors=[None, 4])
    assert len(other.trace) == 2 and len(sch.trace) == 3
    assert "scf.for" not in str(other.mod)


def test_deferred_applies_once():
    sch = Schedule(mm_relu())
    with sch.deferred():
        i, j, k = sch.get_loops(sch.get_block("Y"))
        j0, j1 = sch.split(j, factors=[None, 8])
        sch.reorder(j0, k, j1)
    filecheck(str(sch.mod), """
        CHECK: %[[C8:.+]] = arith.constant 8 : index
        CHECK: scf.for {{.*}} step %[[C8]]
    """)
