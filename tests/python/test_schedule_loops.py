"""Loop primitives: split, reorder, fuse, parallel, vectorize, unroll (each runs, replays, errors)."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import ScheduleError
from mlc_mlir.schedule import Schedule
from mlc_mlir.testing import filecheck

from _schedule_util import check_mm_relu, check_schedule, dyn_add_text, loop_names, mm_relu


def split_reorder(jfactor=4):
    sch = Schedule(mm_relu())
    block_y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(j0, k, j1)
    return sch, block_y, (i, j0, k, j1)


def test_split_reorder_nest_and_names():
    sch, _, (i, j0, k, j1) = split_reorder(4)
    assert [lp.name for lp in (i, j0, k, j1)] == ["i", "j_0", "k", "j_1"]
    assert [lp.name for lp in sch.get_loops(sch.get_block("Y"))] == ["i", "j_0", "k", "j_1"]
    text = str(sch.mod)
    assert loop_names(sch.mod) == ["k", "j_0", "i"]          # printed innermost first
    filecheck(text, """
        CHECK: scf.for {{.+}} step %c4
        CHECK: linalg.matmul {mlc.block = "Y"} ins(%{{.+}}, %{{.+}} : tensor<1x1xf32>, tensor<1x4xf32>)
    """)
    check_mm_relu(sch)


def test_split_only_docstring_twin():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.split(j, factors=[None, 4])
    text = str(sch.mod)
    assert loop_names(sch.mod) == ["j_0", "i"]
    assert "tensor<1x128xf32>, tensor<128x4xf32>) outs" in text
    check_mm_relu(sch)


@pytest.mark.parametrize("factors", [[None, 9], [3, None, 5]])
def test_split_non_divisible_is_guarded(factors):
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    loops = sch.split(j, factors=factors)
    assert len(loops) == len(factors)
    assert "affine.min" in str(sch.mod)
    check_mm_relu(sch)


def test_split_errors():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(ScheduleError, match="at most one factor may be None"):
        sch.split(j, factors=[None, None])
    with pytest.raises(ScheduleError, match="product of factors"):
        sch.split(j, factors=[16, 4])
    with pytest.raises(ScheduleError, match="positive"):
        sch.split(j, factors=[0, None])
    with pytest.raises(ScheduleError, match="factors must be"):
        sch.split(j, factors=["4", None])
    with pytest.raises(ScheduleError, match="non-empty list"):
        sch.split(j, factors=[])
    sch.split(j, factors=[None, 4])
    with pytest.raises(ScheduleError, match="stale"):
        sch.split(j, factors=[None, 4])          # the course's "variable j no longer exists"
    with pytest.raises(ScheduleError, match="expected a loop"):
        sch.split("j", factors=[None, 4])
    assert len(sch.trace) == 3                   # failed calls are not recorded


def test_symbolic_split():
    mod = mlc.Module.parse(dyn_add_text())
    sch = Schedule(mod)
    i, j = sch.get_loops(sch.get_block("C"))
    assert i.name == "i"
    with pytest.raises(ScheduleError, match="symbolic extent"):
        sch.split(i, factors=[4, None])
    with pytest.raises(ScheduleError, match="symbolic extent"):
        sch.split(i, factors=[2, 4])
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(i0, j, i1)
    a = np.random.default_rng(0).standard_normal((10, 64), dtype=np.float32)
    check_schedule(sch, "add_one", [a, np.zeros_like(a)], a + 1)
    with pytest.raises(ScheduleError, match="dynamic extent"):
        sch.sample_perfect_tile(i0, n=2)


def test_reorder_errors():
    sch, _, (i, j0, k, j1) = split_reorder(4)
    ci, cj = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="one block"):
        sch.reorder(i, ci)
    with pytest.raises(ScheduleError, match="same dim would be inner-before-outer"):
        sch.reorder(j1, j0)
    with pytest.raises(ScheduleError, match="twice"):
        sch.reorder(k, k)
    sch.reorder(k, i)                            # k moves out, i takes k's place
    assert [lp.name for lp in sch.get_loops(sch.get_block("Y"))] == ["k", "j_0", "i", "j_1"]


def test_fuse_then_parallel():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    ij = sch.fuse(i, j)
    assert ij.name == "i_j_fused"
    sch.parallel(ij)
    filecheck(str(sch.mod), "CHECK: scf.forall (%{{[a-z0-9]+}}, %{{[a-z0-9]+}}) in (128, 128)")
    assert loop_names(sch.mod) == ["i_j_fused"]
    check_mm_relu(sch)


def test_fuse_serial_and_same_dim():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    j0, j1 = sch.split(j, factors=[None, 8])
    j_again = sch.fuse(j0, j1)                   # same dim: one loop again
    sch.reorder(j_again, i)
    assert [lp.name for lp in sch.get_loops(sch.get_block("Y"))] == ["j_0_j_1_fused", "i", "k"]
    ci, cj = sch.get_loops(sch.get_block("C"))
    sch.fuse(ci, cj)
    check_mm_relu(sch)


def test_fuse_errors():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(ScheduleError, match="consecutive"):
        sch.fuse(i, k)
    with pytest.raises(ScheduleError, match="at least one loop"):
        sch.fuse()
    ij = sch.fuse(i, j)
    with pytest.raises(ScheduleError, match="fusion of several dims"):
        sch.split(ij, factors=[None, 2])


def test_parallel_and_errors():
    sch, _, (i, j0, k, j1) = split_reorder(8)
    with pytest.raises(ScheduleError, match="reduction loop of block 'Y'"):
        sch.parallel(k)
    sch.parallel(i)
    with pytest.raises(ScheduleError, match="already parallel"):
        sch.parallel(i)
    assert "scf.forall" in str(sch.mod)
    check_mm_relu(sch)


@pytest.mark.parametrize("jfactor", [8, 9])
def test_vectorize(jfactor):
    sch, _, (i, j0, k, j1) = split_reorder(jfactor)
    sch.vectorize(j1)
    text = str(sch.mod)
    assert f"vector<1x{jfactor}x1xf32>" in text or f"vector<1x{jfactor}xf32>" in text
    check_mm_relu(sch)


def test_vectorize_elementwise_docstring_twin():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.vectorize(j1)
    text = str(sch.mod)
    assert "arith.maximumf" in text and "vector<1x8xf32>" in text
    assert loop_names(sch.mod) == ["j_0", "i"]
    check_mm_relu(sch)


def test_vectorize_errors():
    sch, _, (i, j0, k, j1) = split_reorder(8)
    with pytest.raises(ScheduleError, match="innermost"):
        sch.vectorize(j0)
    sch.vectorize(j1)
    with pytest.raises(ScheduleError, match="must stay the innermost"):
        sch.reorder(j1, k)
    sch2 = Schedule(mm_relu())
    i2, j2, k2 = sch2.get_loops(sch2.get_block("Y"))
    with pytest.raises(ScheduleError, match="reduction loop"):
        sch2.vectorize(k2)
    ci, cj = sch2.get_loops(sch2.get_block("C"))
    with pytest.raises(ScheduleError, match="fuses several dims"):
        sch2.vectorize(sch2.fuse(ci, cj))
    big = Schedule(mm_relu(1024))
    bi, bj = big.get_loops(big.get_block("C"))
    with pytest.raises(ScheduleError, match="1024 elements"):
        big.vectorize(bj)                          # one 1024-wide vector: refused


def test_unroll():
    sch, _, (i, j0, k, j1) = split_reorder(8)
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.unroll(k1)
    assert "k_1" not in loop_names(sch.mod)
    assert "k_0" in loop_names(sch.mod)
    check_mm_relu(sch)


def test_unroll_errors():
    sch, _, (i, j0, k, j1) = split_reorder(9)
    with pytest.raises(ScheduleError, match="dynamic trip count"):
        sch.unroll(j1)
    ci, cj = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="at most 256"):
        sch.unroll(sch.fuse(ci, cj))
    sch.parallel(i)
    with pytest.raises(ScheduleError, match="already parallel"):
        sch.unroll(i)


def test_bind_records_gpu_mapping():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="unknown thread axis"):
        sch.bind(i, "warp.x")
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    text = str(sch.mod)
    assert "#gpu.block<x>" in text and "#gpu.thread<x>" in text
    assert str(sch.trace).endswith('sch.bind(loop=l2, thread_axis="threadIdx.x")')
