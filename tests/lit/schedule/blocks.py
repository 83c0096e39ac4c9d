# RUN: %PYTHON %s | filecheck %s
"""Twins of the compute_at / reverse_compute_at / decompose_reduction / blockize examples."""

from mlc_mlir.schedule import Schedule

from _schedule_util import matmul, mm_relu  # tests/python/, on PYTHONPATH (lit.cfg.py)


def course_ch2(jfactor):
    sch = Schedule(mm_relu())
    block_y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_block("C", "mm_relu"), j0)
    return sch, block_y, k


sch, block_y, k = course_ch2(4)
print("// reverse_compute_at")
print(sch.mod)
# CHECK-LABEL: // reverse_compute_at
# CHECK: scf.for {{.+}} step %c1
# CHECK: scf.for {{.+}} step %c4
# CHECK: %[[FILL:.+]] = linalg.fill {mlc.block_init = "Y"} {{.+}} -> tensor<1x4xf32>
# CHECK: %[[K:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[FILL]])
# CHECK: linalg.matmul {mlc.block = "Y"} {{.+}} -> tensor<1x4xf32>
# CHECK: } {mlc.loop = "k"}
# CHECK: linalg.generic {{.+}} ins(%[[K]] : tensor<1x4xf32>) {{.+}} attrs = {mlc.block = "C"}
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}

sch.decompose_reduction(block_y, k)
print("// decompose after reverse_compute_at")
print(sch.mod)
# CHECK-LABEL: // decompose after reverse_compute_at
# CHECK: linalg.fill {mlc.block_init = "Y"} {{.+}} -> tensor<1x4xf32>
# CHECK: } {mlc.loop = "j_0"}

sch, _, _ = course_ch2(9)
print("// jfactor 9")
print(sch.mod)
# CHECK-LABEL: // jfactor 9
# CHECK: scf.for %[[J0:.+]] = %{{.+}} to %{{.+}} step %c9
# CHECK: %[[W:.+]] = affine.min #{{.+}}(%[[J0]])
# CHECK: linalg.matmul {mlc.block = "Y"} {{.+}} -> tensor<1x?xf32>
# CHECK: linalg.generic {{.+}} outs({{.+}} : tensor<1x?xf32>) attrs = {mlc.block = "C"}

sch = Schedule(matmul())
block_c = sch.get_block("C", "main")
i, j, k = sch.get_loops(block=block_c)
j_0, j_1 = sch.split(loop=j, factors=[None, 4])
sch.reorder(i, j_0, k, j_1)
sch.decompose_reduction(block_c, k)
print("// decompose_reduction ch4")
print(sch.mod)
# CHECK-LABEL: // decompose_reduction ch4
# CHECK: scf.for {{.+}} step %c1
# CHECK: scf.for {{.+}} step %c4
# CHECK: %[[F:.+]] = linalg.fill {mlc.block_init = "C"} {{.+}} -> tensor<1x4xf32>
# CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[F]])
# CHECK: linalg.matmul {mlc.block = "C"} {{.+}} -> tensor<1x4xf32>
# CHECK: } {mlc.loop = "k"}
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}

sch = Schedule(mm_relu())
i, j = sch.get_loops(sch.get_block("C"))
sch.compute_at(sch.get_block("Y"), j)
print("// compute_at")
print(sch.mod)
# CHECK-LABEL: // compute_at
# CHECK: linalg.fill {mlc.block_init = "Y"} {{.+}} -> tensor<1x1xf32>
# CHECK: linalg.matmul {mlc.block = "Y"} ins({{.+}} : tensor<1x128xf32>, tensor<128x1xf32>)
# CHECK: linalg.generic {{.+}} attrs = {mlc.block = "C"}
# CHECK: } {mlc.loop = "j"}
# CHECK: } {mlc.loop = "i"}

sch = Schedule(matmul())
i, j, k = sch.get_loops(sch.get_block("C"))
i, ii = sch.split(i, factors=[None, 16])
j, ji = sch.split(j, factors=[None, 16])
k, ki = sch.split(k, factors=[None, 16])
sch.reorder(i, j, k, ii, ji, ki)
sch.blockize(ii)
print("// blockize")
print(sch.mod)
# CHECK-LABEL: // blockize
# CHECK: linalg.matmul {mlc.block = "C", mlc.blockize = "C_o"} ins({{.+}} : tensor<16x16xf32>, tensor<16x16xf32>) outs({{.+}} : tensor<16x16xf32>)
# CHECK: } {mlc.loop = "k_0"}
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i_0"}
