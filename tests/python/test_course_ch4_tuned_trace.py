"""Course ch.4.5: the auto-scheduled trace printed by ``print(sch_tuned.trace)`` replays
verbatim (our block names) and equals NumPy: the "root" block, annotate/unannotate,
enter_postproc, get_child_blocks, fuse of loops shared after reverse_compute_at and of
interleaved tile loops (fuse(i_0, j_0, i_1, j_1))."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.testing import filecheck


def my_module():
    A = te.placeholder((128, 128), name="A")
    B = te.placeholder((128, 128), name="B")
    k = te.reduce_axis((0, 128), "k")
    C = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C], name="main")


def tuned_trace(sch):
    """The course's printed trace, line for line."""
    b0 = sch.get_block(name="C", func_name="main")
    b1 = sch.get_block(name="root", func_name="main")
    sch.annotate(block_or_loop=b0, ann_key="meta_schedule.tiling_structure", ann_val="SSRSRS")
    l2, l3, l4 = sch.get_loops(block=b0)
    v5, v6, v7, v8 = sch.sample_perfect_tile(loop=l2, n=4, max_innermost_factor=64, decision=[4, 1, 32, 1])
    l9, l10, l11, l12 = sch.split(loop=l2, factors=[v5, v6, v7, v8], preserve_unit_iters=True)
    v13, v14, v15, v16 = sch.sample_perfect_tile(loop=l3, n=4, max_innermost_factor=64, decision=[4, 1, 8, 4])
    l17, l18, l19, l20 = sch.split(loop=l3, factors=[v13, v14, v15, v16], preserve_unit_iters=True)
    v21, v22 = sch.sample_perfect_tile(loop=l4, n=2, max_innermost_factor=64, decision=[64, 2])
    l23, l24 = sch.split(loop=l4, factors=[v21, v22], preserve_unit_iters=True)
    sch.reorder(l9, l17, l10, l18, l23, l11, l19, l24, l12, l20)
    b25 = sch.cache_write(block=b0, write_buffer_index=0, storage_scope="global")
    sch.reverse_compute_at(block=b25, loop=l18, preserve_unit_loops=True)
    sch.annotate(block_or_loop=b1, ann_key="meta_schedule.parallel", ann_val=16)
    sch.annotate(block_or_loop=b1, ann_key="meta_schedule.vectorize", ann_val=64)
    v26 = sch.sample_categorical(candidates=[0, 16, 64, 512], probs=[0.25, 0.25, 0.25, 0.25], decision=1)
    sch.annotate(block_or_loop=b1, ann_key="meta_schedule.unroll_explicit", ann_val=v26)
    sch.enter_postproc()
    b27 = sch.get_block(name="root", func_name="main")
    sch.unannotate(block_or_loop=b27, ann_key="meta_schedule.parallel")
    sch.unannotate(block_or_loop=b27, ann_key="meta_schedule.vectorize")
    sch.unannotate(block_or_loop=b27, ann_key="meta_schedule.unroll_explicit")
    b28, b29 = sch.get_child_blocks(b27)
    l30, l31, l32, l33, l34, l35, l36, l37, l38, l39 = sch.get_loops(block=b28)
    l40 = sch.fuse(l30, l31, l32, l33, preserve_unit_iters=True)
    sch.parallel(loop=l40)
    l41 = sch.fuse(l39, preserve_unit_iters=True)
    sch.vectorize(loop=l41)
    sch.annotate(block_or_loop=l40, ann_key="pragma_auto_unroll_max_step", ann_val=16)
    sch.annotate(block_or_loop=l40, ann_key="pragma_unroll_explicit", ann_val=1)
    l42, l43, l44 = sch.get_loops(block=b29)
    l45 = sch.fuse(l44, preserve_unit_iters=True)
    sch.vectorize(loop=l45)
    sch.annotate(block_or_loop=l42, ann_key="pragma_auto_unroll_max_step", ann_val=16)
    sch.annotate(block_or_loop=l42, ann_key="pragma_unroll_explicit", ann_val=1)
    b46 = sch.get_block(name="C", func_name="main")
    l47, l48, l49, l50, l51, l52, l53 = sch.get_loops(block=b46)
    b54 = sch.decompose_reduction(block=b46, loop=l48)
    return sch


def test_tuned_trace_replays_and_equals_numpy():
    mod = my_module()
    sch = tuned_trace(mlc.Schedule(mod))
    text = str(sch.mod)
    filecheck(text, """
        CHECK: scf.forall (%{{[a-z0-9]+}}, %{{[a-z0-9]+}}) in (4, 4)
        CHECK: vector.transfer_read {{.*}} vector<1x32xf32>
        CHECK: } {mlc.loop = "i_0_j_0_i_1_j_1_fused"
    """)
    rng = np.random.default_rng(0)
    a, b = rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    mlc.build(sch.mod)["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    # the printed trace is the course's, with our spellings
    printed = str(sch.trace)
    for line in ('b1 = sch.get_block(name="root", func_name="main")',
                 'sch.annotate(block_or_loop=b1, ann_key="meta_schedule.unroll_explicit", ann_val=v26)',
                 "sch.enter_postproc()", "b28, b29 = sch.get_child_blocks(block=b27)",
                 "l40 = sch.fuse(l30, l31, l32, l33)", "b54 = sch.decompose_reduction(block=b46, loop=l48)"):
        assert line in printed
    # replaying the trace gives the same module
    assert str(sch.trace.apply(mod).mod) == text


def test_annotations_are_kept_and_removed():
    sch = mlc.Schedule(my_module())
    root = sch.get_block("root")
    sch.annotate(root, "meta_schedule.parallel", 16)
    assert sch.annotations(root) == {"meta_schedule.parallel": 16}
    sch.unannotate(root, "meta_schedule.parallel")
    assert sch.annotations(root) == {}
    with pytest.raises(mlc.ScheduleError, match="has no annotation 'meta_schedule.parallel'"):
        sch.unannotate(root, "meta_schedule.parallel")
    with pytest.raises(mlc.ScheduleError, match="ann_val must be"):
        sch.annotate(root, "x", [1, 2])
    with pytest.raises(mlc.ScheduleError, match="root block .* has no loops"):
        sch.get_loops(root)
    assert [b.name for b in sch.get_child_blocks(root)] == ["C"]
    assert sch.get_child_blocks(sch.get_block("C")) == []


def test_fuse_interleaved_non_unit_loops_is_refused():
    sch = mlc.Schedule(my_module())
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [4, 32])
    j0, j1 = sch.split(j, [4, 32])
    sch.reorder(i0, j0, i1, j1)
    with pytest.raises(mlc.ScheduleError, match="dim 0 is iterated by two loops"):
        sch.fuse(i0, j0, i1, j1)


def test_fuse_shared_loops_after_compute_at_runs():
    A = te.placeholder((64, 64), name="A")
    Y = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="Y")
    C = te.compute((64, 64), lambda i, j: te.max(Y[i, j], 0.0), name="C")
    mod = te.create_prim_func([A, C], name="main")
    sch = mlc.Schedule(mod)
    i, j = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, [None, 16])
    sch.compute_at(sch.get_block("Y"), j0)
    fused = sch.fuse(i, j0)
    sch.parallel(fused)
    assert "scf.forall" in str(sch.mod)
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    out = np.zeros_like(a)
    mlc.build(sch.mod)["main"](a, out)
    np.testing.assert_allclose(out, np.maximum(a * 2, 0))
    assert str(sch.trace.apply(mod).mod) == str(sch.mod)
