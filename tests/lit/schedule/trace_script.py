# RUN: %PYTHON %s | filecheck %s
"""Course ch.4: the printed trace with decisions, and the same schedule as a transform script."""

from mlc_mlir.schedule import Schedule, apply_transform_script

from _schedule_util import matmul  # tests/python/, on PYTHONPATH (lit.cfg.py)

sch = Schedule(matmul())
block_c = sch.get_block("C", "main")
i, j, k = sch.get_loops(block=block_c)
j_factors = sch.sample_perfect_tile(loop=j, n=2, decision=[32, 4])
j_0, j_1 = sch.split(loop=j, factors=j_factors)
sch.reorder(i, j_0, k, j_1)
sch.decompose_reduction(block_c, k)
print(sch.trace)
# CHECK: b0 = sch.get_block(name="C", func_name="main")
# CHECK-NEXT: l1, l2, l3 = sch.get_loops(block=b0)
# CHECK-NEXT: v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision=[32, 4])
# CHECK-NEXT: l6, l7 = sch.split(loop=l2, factors=[v4, v5])
# CHECK-NEXT: sch.reorder(l1, l6, l3, l7)
# CHECK-NEXT: b8 = sch.decompose_reduction(block=b0, loop=l3)

script = sch.trace.transform_script()
print(script)
# CHECK-LABEL: transform.named_sequence @__transform_main
# CHECK: transform.tune.knob<"sample_perfect_tile.v4_v5"> = [32, 4] from options = [{{.*}}[32, 4]{{.*}}]
# CHECK: %[[F:.+]] = transform.structured.match ops{["func.func"]} attributes {sym_name = "main"}
# CHECK: %[[C:.+]] = transform.structured.match attributes {mlc.block = "C"} in %[[F]]
# CHECK: %[[T1:.+]], %[[LI:.+]] = transform.structured.fuse %[[C]] tile_sizes [1, 0, 0]
# CHECK: %[[T2:.+]], %[[LJ:.+]] = transform.structured.fuse %[[T1]] tile_sizes [0, 4, 0]
# CHECK: transform.structured.tile_using_for %[[T2]] tile_sizes [0, 0, 1]
# CHECK: transform.annotate %[[LI]] "mlc.loop"
# CHECK: transform.apply_patterns.canonicalization

print("// same IR:", str(apply_transform_script(matmul(), script)) == str(sch.mod))
# CHECK: // same IR: True
