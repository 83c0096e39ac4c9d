# RUN: %PYTHON %s | filecheck %s
"""Loop nests that numbers alone do not check (issue 13's missed planted bugs): a
non-dividing three-way split, and decompose_reduction at a loop above the first
reduction loop (the init must land outside ``j_0``, on the whole 1x128 row)."""

from _schedule_util import matmul, mm_relu  # tests/python is on lit's PYTHONPATH

from mlc_mlir.schedule import Schedule  # noqa: E402

sch = Schedule(mm_relu())
i, j = sch.get_loops(sch.get_block("C"))
print("// factors", [lp.name for lp in sch.split(j, [3, None, 5])])
print(sch.mod)
# 3 x ceil(128 / 15) = 9 x 5: j_0 steps by 45 over 128 (3 trips, the last partial),
# j_1 steps by 5 up to min(128 - j_0, 45), j_2 (5) stays inside the op.
# CHECK-LABEL: // factors ['j_0', 'j_1', 'j_2']
# CHECK: #[[OUTER:.+]] = affine_map<(d0) -> (-d0 + 128, 45)>
# CHECK: #[[INNER:.+]] = affine_map<(d0)[s0] -> (-d0 + s0, 5)>
# CHECK-DAG: %[[C45:.+]] = arith.constant 45 : index
# CHECK-DAG: %[[C5:.+]] = arith.constant 5 : index
# CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
# CHECK: scf.for %[[J0:.+]] = %{{.+}} to %[[C128]] step %[[C45]]
# CHECK: %[[T0:.+]] = affine.min #[[OUTER]](%[[J0]])
# CHECK: scf.for %[[J1:.+]] = %{{.+}} to %[[T0]] step %[[C5]]
# CHECK: affine.min #[[INNER]](%[[J1]])[%[[T0]]]
# CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<1x?xf32>) outs(%{{.+}} : tensor<1x?xf32>) attrs = {mlc.block = "C"}
# CHECK: } {mlc.loop = "j_1"}
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}

sch = Schedule(matmul())
block = sch.get_block("C")
i, j, k = sch.get_loops(block)
j0, j1 = sch.split(j, [None, 8])
sch.reorder(j0, k, j1)
sch.decompose_reduction(block, j0)
print("// decompose at j_0")
print(sch.mod)
# CHECK-LABEL: // decompose at j_0
# CHECK: scf.for
# CHECK: linalg.fill {mlc.block_init = "C"} {{.+}} -> tensor<1x128xf32>
# CHECK-NEXT: scf.for {{.+}} step %c8
# CHECK: scf.for {{.+}} step %c1
# CHECK-NOT: linalg.fill
# CHECK: linalg.matmul {mlc.block = "C"} {{.+}} outs(%{{.+}} : tensor<1x8xf32>)
# CHECK: } {mlc.loop = "k"}
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}
