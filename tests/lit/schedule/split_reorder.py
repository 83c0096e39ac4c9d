# RUN: %PYTHON %s | filecheck %s
"""Twins of the split / reorder / fuse+parallel / vectorize docstring examples."""

from mlc_mlir.schedule import Schedule
from mlc_mlir.testing import run
from mlc_mlir.testing.programs import mm_relu


def split_j(factor):
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    j0, j1 = sch.split(j, factors=[None, factor])
    return sch, (i, j0, j1, k)


@run
def test_split():
    sch, _ = split_j(4)
    print(sch.mod)
# CHECK-LABEL: TEST: test_split
# CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c1
# CHECK: scf.for %[[J0:.+]] = %{{.+}} to %{{.+}} step %c4
# CHECK: linalg.matmul {mlc.block = "Y"} ins(%{{.+}}, %{{.+}} : tensor<1x128xf32>, tensor<128x4xf32>) outs(%{{.+}} : tensor<1x4xf32>)
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}


@run
def test_reorder():
    sch, (i, j0, j1, k) = split_j(4)
    sch.reorder(j0, k, j1)
    print(sch.mod)
# CHECK-LABEL: TEST: test_reorder
# CHECK: scf.for {{.+}} step %c1
# CHECK: scf.for {{.+}} step %c4
# CHECK: scf.for {{.+}} step %c1
# CHECK: linalg.matmul {mlc.block = "Y"} ins({{.+}} : tensor<1x1xf32>, tensor<1x4xf32>) outs({{.+}} : tensor<1x4xf32>)
# CHECK: } {mlc.loop = "k"}
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}


@run
def test_fuse_parallel():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    sch.parallel(sch.fuse(i, j))
    print(sch.mod)
# CHECK-LABEL: TEST: test_fuse_parallel
# CHECK: scf.forall ({{.+}}, {{.+}}) in (128, 128) shared_outs
# CHECK: linalg.generic {{.+}} ins({{.+}} : tensor<1x1xf32>) outs({{.+}} : tensor<1x1xf32>) attrs = {mlc.block = "C"}
# CHECK: } {mlc.loop = "i_j_fused"}


@run
def test_vectorize():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.vectorize(j1)
    print(sch.mod)
# CHECK-LABEL: TEST: test_vectorize
# CHECK: vector.transfer_read {{.+}} : tensor<128x128xf32>, vector<1x8xf32>
# CHECK: arith.maximumf {{.+}} : vector<1x8xf32>
# CHECK: vector.transfer_write
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}


@run
def test_unroll():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.unroll(k1)
    print(sch.mod)
# CHECK-LABEL: TEST: test_unroll
# CHECK: scf.for
# CHECK-COUNT-4: linalg.matmul {mlc.block = "Y"}
# CHECK: } {mlc.loop = "k_0"}
# CHECK-NOT: k_1
