# RUN: %PYTHON %s | filecheck %s
"""Twins of the split / reorder / fuse+parallel / vectorize docstring examples."""

from mlc_mlir.schedule import Schedule

from _schedule_util import mm_relu  # tests/python/, on PYTHONPATH (lit.cfg.py)


def section(title, sch):
    print(f"// {title}")
    print(sch.mod)


sch = Schedule(mm_relu())
i, j, k = sch.get_loops(sch.get_block("Y"))
j0, j1 = sch.split(j, factors=[None, 4])
section("split", sch)
# CHECK-LABEL: // split
# CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c1
# CHECK: scf.for %[[J0:.+]] = %{{.+}} to %{{.+}} step %c4
# CHECK: linalg.matmul {mlc.block = "Y"} ins(%{{.+}}, %{{.+}} : tensor<1x128xf32>, tensor<128x4xf32>) outs(%{{.+}} : tensor<1x4xf32>)
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}

sch.reorder(j0, k, j1)
section("reorder", sch)
# CHECK-LABEL: // reorder
# CHECK: scf.for {{.+}} step %c1
# CHECK: scf.for {{.+}} step %c4
# CHECK: scf.for {{.+}} step %c1
# CHECK: linalg.matmul {mlc.block = "Y"} ins({{.+}} : tensor<1x1xf32>, tensor<1x4xf32>) outs({{.+}} : tensor<1x4xf32>)
# CHECK: } {mlc.loop = "k"}
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}

sch = Schedule(mm_relu())
i, j = sch.get_loops(sch.get_block("C"))
sch.parallel(sch.fuse(i, j))
section("fuse+parallel", sch)
# CHECK-LABEL: // fuse+parallel
# CHECK: scf.forall ({{.+}}, {{.+}}) in (128, 128) shared_outs
# CHECK: linalg.generic {{.+}} ins({{.+}} : tensor<1x1xf32>) outs({{.+}} : tensor<1x1xf32>) attrs = {mlc.block = "C"}
# CHECK: } {mlc.loop = "i_j_fused"}

sch = Schedule(mm_relu())
i, j = sch.get_loops(sch.get_block("C"))
j0, j1 = sch.split(j, factors=[None, 8])
sch.vectorize(j1)
section("vectorize", sch)
# CHECK-LABEL: // vectorize
# CHECK: vector.transfer_read {{.+}} : tensor<128x128xf32>, vector<1x8xf32>
# CHECK: arith.maximumf {{.+}} : vector<1x8xf32>
# CHECK: vector.transfer_write
# CHECK: } {mlc.loop = "j_0"}
# CHECK: } {mlc.loop = "i"}

sch = Schedule(mm_relu())
i, j, k = sch.get_loops(sch.get_block("Y"))
k0, k1 = sch.split(k, factors=[None, 4])
sch.unroll(k1)
section("unroll", sch)
# CHECK-LABEL: // unroll
# CHECK: scf.for
# CHECK-COUNT-4: linalg.matmul {mlc.block = "Y"}
# CHECK: } {mlc.loop = "k_0"}
# CHECK-NOT: k_1
