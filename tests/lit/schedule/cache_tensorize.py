# RUN: %PYTHON %s | filecheck %s
"""Course ch.6: blockize, special memory scopes (cache_read/cache_write), tensorize."""

from mlc_mlir.schedule import Schedule, TensorIntrin

from _schedule_util import matmul  # tests/python/, on PYTHONPATH (lit.cfg.py)

TensorIntrin.register("tmm16", """
func.func @tmm16_desc(%A: tensor<16x16xf32>, %B: tensor<16x16xf32>, %C: tensor<16x16xf32>) -> tensor<16x16xf32>
    attributes {mlc.prim_func} {
  %c = linalg.matmul {mlc.block = "tmm"} ins(%A, %B : tensor<16x16xf32>, tensor<16x16xf32>)
       outs(%C : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}""", """
func.func @tmm16_impl(%A: tensor<16x16xf32>, %B: tensor<16x16xf32>, %C: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %c = linalg.matmul ins(%A, %B : tensor<16x16xf32>, tensor<16x16xf32>) outs(%C : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}""")

sch = Schedule(matmul())
i, j, k = sch.get_loops(sch.get_block("C"))
i, ii = sch.split(i, factors=[None, 16])
j, ji = sch.split(j, factors=[None, 16])
k, ki = sch.split(k, factors=[None, 16])
sch.reorder(i, j, k, ii, ji, ki)
block_mm = sch.blockize(ii)
A_reg = sch.cache_read(block_mm, 0, storage_scope="global.A_reg")
B_reg = sch.cache_read(block_mm, 1, storage_scope="global.B_reg")
sch.compute_at(A_reg, k)
sch.compute_at(B_reg, k)
write_back_block = sch.cache_write(block_mm, 0, storage_scope="global.accumulator")
sch.reverse_compute_at(write_back_block, j)
sch.decompose_reduction(block_mm, k)
sch.tensorize(block_mm, "tmm16")
print(sch.mod)
# CHECK-LABEL: func.func @main
# CHECK: scf.for
# CHECK: scf.for
# CHECK: %[[ACC:.+]] = linalg.fill {mlc.block_init = "C"} {{.+}} -> tensor<16x16xf32>
# CHECK: %[[KL:.+]] = scf.for {{.+}} iter_args(%[[ACCI:.+]] = %[[ACC]])
# CHECK: %[[A:.+]] = linalg.copy {mlc.block = "arg0_global.A_reg", mlc.scope = "global.A_reg"} {{.+}} -> tensor<16x16xf32>
# CHECK: %[[B:.+]] = linalg.copy {mlc.block = "arg1_global.B_reg", mlc.scope = "global.B_reg"} {{.+}} -> tensor<16x16xf32>
# CHECK: func.call @tmm16_impl(%[[A]], %[[B]], %[[ACCI]]) {mlc.tensorized = "tmm16"}
# CHECK: } {mlc.loop = "k_0"}
# CHECK: linalg.copy {mlc.block = "C_global.accumulator", mlc.scope = "global.accumulator"} ins(%[[KL]] : tensor<16x16xf32>)
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i_0"}
# CHECK: func.func private @tmm16_impl
