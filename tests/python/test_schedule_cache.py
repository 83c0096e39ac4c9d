"""cache_read / cache_write with scopes, blockize + tensorize (course ch.6)."""

import pytest

from mlc_mlir import ScheduleError
from mlc_mlir.schedule import Schedule, TensorIntrin, apply_transform_script
from mlc_mlir.testing import filecheck

from _schedule_util import check_matmul, check_mm_relu, matmul, mm_relu

DESC = """
func.func @tmm16_desc(%A: tensor<16x16xf32>, %B: tensor<16x16xf32>, %C: tensor<16x16xf32>) -> tensor<16x16xf32>
    attributes {mlc.prim_func} {
  %c = linalg.matmul {mlc.block = "tmm"} ins(%A, %B : tensor<16x16xf32>, tensor<16x16xf32>)
       outs(%C : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}"""
IMPL = """
func.func @tmm16_impl(%A: tensor<16x16xf32>, %B: tensor<16x16xf32>, %C: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %c = linalg.matmul ins(%A, %B : tensor<16x16xf32>, tensor<16x16xf32>) outs(%C : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}"""


def blockized_matmul():
    sch = Schedule(matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    i, ii = sch.split(i, factors=[None, 16])
    j, ji = sch.split(j, factors=[None, 16])
    k, ki = sch.split(k, factors=[None, 16])
    sch.reorder(i, j, k, ii, ji, ki)
    return sch, sch.blockize(ii), (i, j, k)


def test_cache_read_global_scope_tag():
    sch = Schedule(mm_relu())
    a_shared = sch.cache_read(sch.get_block("Y"), 0, "shared")
    assert a_shared.name == "A_shared"
    text = str(sch.mod)
    assert 'linalg.copy {mlc.block = "A_shared", mlc.scope = "shared"}' in text
    assert [lp.name for lp in sch.get_loops(a_shared)] == ["ax0", "ax1"]
    assert [b.name for b in sch.get_producers(sch.get_block("Y"))] == ["A_shared"]
    check_mm_relu(sch)


def test_cache_write_moves_init_and_writes_back():
    sch = Schedule(mm_relu())
    block_y = sch.get_block("Y")
    y_local = sch.cache_write(block_y, 0, "local")
    assert y_local.name == "Y_local"
    assert [b.name for b in sch.get_consumers(y_local)] == ["C"]
    i, j, k = sch.get_loops(block_y)
    sch.reverse_compute_at(y_local, j)
    sch.decompose_reduction(block_y, k)
    text = str(sch.mod)
    assert 'linalg.copy {mlc.block = "Y_local", mlc.scope = "local"}' in text
    assert text.index('mlc.block_init = "Y"') > text.index("scf.for")
    check_mm_relu(sch)


def test_cache_errors():
    sch = Schedule(mm_relu())
    block_y = sch.get_block("Y")
    with pytest.raises(ScheduleError, match="out of range"):
        sch.cache_read(block_y, 2, "shared")
    with pytest.raises(ScheduleError, match="out of range"):
        sch.cache_write(block_y, 1, "local")
    with pytest.raises(ScheduleError, match="non-empty str"):
        sch.cache_read(block_y, 0, "")
    sch.cache_write(block_y, 0, "local")
    with pytest.raises(ScheduleError, match="already exists"):
        sch.cache_write(block_y, 0, "local")


def test_course_ch6_special_scopes_and_tensorize():
    TensorIntrin.register("tmm16", DESC, IMPL, override=True)
    sch, block_mm, (i, j, k) = blockized_matmul()
    a_reg = sch.cache_read(block_mm, 0, storage_scope="global.A_reg")
    b_reg = sch.cache_read(block_mm, 1, storage_scope="global.B_reg")
    sch.compute_at(a_reg, k)
    sch.compute_at(b_reg, k)
    write_back = sch.cache_write(block_mm, 0, storage_scope="global.accumulator")
    sch.reverse_compute_at(write_back, j)
    sch.decompose_reduction(block_mm, k)
    text = str(sch.mod)
    filecheck(text, 'CHECK: mlc.scope = "global.A_reg"} ins(%{{.+}} : tensor<16x16xf32>)')
    assert 'mlc.blockize = "C_o"' in text
    check_matmul(sch)
    sch.tensorize(block_mm, "tmm16")
    text = str(sch.mod)
    assert 'func.call @tmm16_impl(' in text and "func.func private @tmm16_impl" in text
    check_matmul(sch)
    assert str(apply_transform_script(matmul(), sch.trace.transform_script())) == text


def test_tensorize_errors():
    TensorIntrin.register("tmm16", DESC, IMPL, override=True)
    with pytest.raises(ScheduleError, match="already registered"):
        TensorIntrin.register("tmm16", DESC, IMPL)
    with pytest.raises(ScheduleError, match="unknown tensor intrinsic"):
        TensorIntrin.get("nope")
    bad_impl = IMPL.replace("tensor<16x16xf32>", "tensor<8x8xf32>")
    with pytest.raises(ScheduleError, match="expected"):
        TensorIntrin.register("bad", DESC, bad_impl)
    sch, block_mm, (i, j, k) = blockized_matmul()
    with pytest.raises(ScheduleError, match="decompose_reduction first"):
        sch.tensorize(block_mm, "tmm16")
    sch.decompose_reduction(block_mm, k)
    with pytest.raises(ScheduleError, match="unknown tensor intrinsic"):
        sch.tensorize(block_mm, "tmm8")
    sch2 = Schedule(matmul())
    ci, cj, ck = sch2.get_loops(sch2.get_block("C"))
    with pytest.raises(ScheduleError, match="not blockized"):
        sch2.tensorize(sch2.get_block("C"), "tmm16")
    ci0, ci1 = sch2.split(ci, factors=[None, 8])
    sch2.reorder(ci0, cj, ck, ci1)
    sch2.decompose_reduction(sch2.get_block("C"), ck)
    with pytest.raises(ScheduleError, match="does not match intrinsic"):
        sch2.tensorize(sch2.blockize(ci1), "tmm16")


def test_tensorize_loop_blockizes_first():
    TensorIntrin.register("tmm16", DESC, IMPL, override=True)
    sch = Schedule(matmul())
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i, ii = sch.split(i, factors=[None, 16])
    j, ji = sch.split(j, factors=[None, 16])
    k, ki = sch.split(k, factors=[None, 16])
    sch.reorder(i, j, k, ii, ji, ki)
    sch.decompose_reduction(block, k)
    sch.tensorize(ii, "tmm16")
    assert "func.call @tmm16_impl" in str(sch.mod)
    check_matmul(sch)
