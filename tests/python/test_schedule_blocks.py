"""Block primitives: compute_at, reverse_compute_at, decompose_reduction, blockize."""

import pytest

from mlc_mlir import ScheduleError
from mlc_mlir.schedule import Schedule
from mlc_mlir.testing import filecheck

from _schedule_util import check_matmul, check_mm_relu, loop_names, matmul, mm_relu


def course_ch2(jfactor):
    """Course ch.2 ``transform(mod, jfactor)``."""
    sch = Schedule(mm_relu())
    block_y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(j0, k, j1)
    block_c = sch.get_block("C", "mm_relu")
    sch.reverse_compute_at(block_c, j0)
    return sch, block_y, (i, j0, k, j1)


@pytest.mark.parametrize("jfactor", [2, 4, 8, 9, 32])
def test_reverse_compute_at_jfactor_sweep(jfactor):
    sch, _, _ = course_ch2(jfactor)
    text = str(sch.mod)
    assert loop_names(sch.mod) == ["k", "j_0", "i"]
    assert text.count("mlc.block = \"C\"") == 1
    assert f"tensor<1x{jfactor}xf32>" in text or "tensor<1x?xf32>" in text
    assert ("affine.min" in text) == (128 % jfactor != 0)
    assert [lp.name for lp in sch.get_loops(sch.get_block("C"))] == ["i", "j_0", "ax0"]
    check_mm_relu(sch)


def test_decompose_reduction_after_reverse_compute_at():
    sch, block_y, (i, j0, k, j1) = course_ch2(4)
    init = sch.decompose_reduction(block_y, k)
    assert init.name == "Y_init"
    text = str(sch.mod)
    fill = text.index('linalg.fill {mlc.block_init = "Y"}')
    assert text.index('mlc.loop = "j_0"') > fill > text.index("scf.for")
    check_mm_relu(sch)
    with pytest.raises(ScheduleError, match="init block is not supported"):
        sch.get_loops(init)
    with pytest.raises(ScheduleError, match="already decomposed"):
        sch.decompose_reduction(block_y, k)


def test_decompose_reduction_course_ch4_schedule_mm():
    sch = Schedule(matmul())
    block_c = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_c)
    j_0, j_1 = sch.split(loop=j, factors=[None, 4])
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_c, k)
    text = str(sch.mod)
    filecheck(text, """
        CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
        CHECK: linalg.fill {mlc.block_init = "C"} ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<1x4xf32>)
    """)
    assert loop_names(sch.mod) == ["k", "j_0", "i"]
    check_matmul(sch)


def test_decompose_reduction_errors():
    sch = Schedule(mm_relu())
    block_y = sch.get_block("Y")
    i, j, k = sch.get_loops(block_y)
    sch.reorder(k, i)
    with pytest.raises(ScheduleError, match="reduction loop"):
        sch.decompose_reduction(block_y, j)
    with pytest.raises(ScheduleError, match="has no init"):
        sch.decompose_reduction(sch.get_block("C"), sch.get_loops(sch.get_block("C"))[0])
    with pytest.raises(ScheduleError, match="not a loop of block"):
        sch.decompose_reduction(block_y, sch.get_loops(sch.get_block("C"))[0])


def test_compute_at():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("Y"), j)
    assert [lp.name for lp in sch.get_loops(sch.get_block("Y"))] == ["i", "j", "ax0"]
    text = str(sch.mod)
    assert "tensor<1x128xf32>, tensor<128x1xf32>) outs" in text
    assert loop_names(sch.mod) == ["j", "i"]
    check_mm_relu(sch)


def test_compute_at_errors():
    sch = Schedule(mm_relu())
    block_y, block_c = sch.get_block("Y"), sch.get_block("C")
    yi, yj, yk = sch.get_loops(block_y)
    ci, cj = sch.get_loops(block_c)
    with pytest.raises(ScheduleError, match="reads the result of 'C'"):
        sch.compute_at(block_c, yj)
    with pytest.raises(ScheduleError, match="already under loop"):
        sch.compute_at(block_y, yj)
    with pytest.raises(ScheduleError, match="reduction loop of block 'Y'"):
        sch.reverse_compute_at(block_c, yk)
    with pytest.raises(ScheduleError, match="produces an input of 'Y'"):
        sch.reverse_compute_at(block_y, cj)
    sch.reverse_compute_at(block_c, yj)
    with pytest.raises(ScheduleError, match="shared by blocks"):
        sch.split(yj, factors=[None, 2])
    with pytest.raises(ScheduleError, match="already under loop j"):
        sch.compute_at(block_y, sch.get_loops(block_c)[-1])
    check_mm_relu(sch)


def test_lookup_errors():
    sch = Schedule(mm_relu())
    with pytest.raises(ScheduleError, match="no block named 'Z'"):
        sch.get_block("Z")
    with pytest.raises(ScheduleError, match="unknown function 'main'"):
        sch.get_block("Y", func_name="main")
    with pytest.raises(ScheduleError, match="expected a block"):
        sch.get_loops(42)
    assert [b.name for b in sch.get_consumers(sch.get_block("Y"))] == ["C"]
    assert [b.name for b in sch.get_producers("C")] == ["Y"]
    assert sch.get_producers("Y") == []


def test_parallel_after_reverse_compute_at_shared_loop():
    sch, block_y, (i, j0, k, j1) = course_ch2(8)
    sch.parallel(i)
    sch.vectorize(j1)
    assert "scf.forall" in str(sch.mod)
    check_mm_relu(sch)


def test_blockize():
    sch = Schedule(matmul())
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i, ii = sch.split(i, factors=[None, 16])
    j, ji = sch.split(j, factors=[None, 16])
    k, ki = sch.split(k, factors=[None, 16])
    sch.reorder(i, j, k, ii, ji, ki)
    outer = sch.blockize(ii)
    assert outer.name == "C_o"
    assert [lp.name for lp in sch.get_loops(outer)] == ["i_0", "j_0", "k_0"]
    text = str(sch.mod)
    filecheck(text, "CHECK: ins(%{{.+}}, %{{.+}} : tensor<16x16xf32>, tensor<16x16xf32>) outs")
    assert loop_names(sch.mod) == ["k_0", "j_0", "i_0"]
    with pytest.raises(ScheduleError, match="stale"):
        sch.split(ki, factors=[None, 2])
    sch.decompose_reduction(outer, k)
    check_matmul(sch)


def softmax(m=7, n=31):
    """Softmax over rows as te blocks M (row max), E (exp), S (row sum), C (E / S)."""
    from mlc_mlir import te

    a = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    mx = te.compute((m,), lambda i: te.max(a[i, k], axis=k), name="M")
    e = te.compute((m, n), lambda i, j: te.exp(a[i, j] - mx[i]), name="E")
    k2 = te.reduce_axis((0, n), name="k2")
    s = te.compute((m,), lambda i: te.sum(e[i, k2], axis=k2), name="S")
    c = te.compute((m, n), lambda i, j: e[i, j] / s[i], name="C")
    return te.create_prim_func([a, c], name="softmax")


@pytest.mark.parametrize("split_s", [False, True])
def test_compute_at_reduction_under_consumer_inner_loop(rng, split_s):
    """The row sum S computed at C's column loop j (it varies with i only: fused into i
    through C's row slice, then cloned into j); equals NumPy and replays."""
    import numpy as np

    import mlc_mlir as mlc

    sch = Schedule(softmax())
    i, j = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("S"), j)
    assert [lp.name for lp in sch.get_loops("S")] == ["i", "j", "ax0"]
    if split_s:
        sch.split(sch.get_loops("S")[-1], [None, 4])
    text = str(sch.mod)
    filecheck(text, """
    CHECK: scf.for
    CHECK: scf.for
    CHECK: linalg.generic {{.*}}mlc.block = "S"
    CHECK: linalg.generic {{.*}}mlc.block = "C"
    CHECK: {mlc.loop = "j"}
    CHECK: {mlc.loop = "i"}
    """)
    a = rng.standard_normal((7, 31)).astype("float32")
    out = np.zeros((7, 31), "float32")
    mlc.build(sch.mod)["softmax"](a, out)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert str(Schedule(softmax()).replay(sch.trace).mod) == text
