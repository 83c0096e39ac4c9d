# RUN: %PYTHON %s | filecheck %s
"""Symbolic sizes: the course's linear0 / relu0 (ch.3) with X: (1, "m"), W: ("n", "m")."""

from mlc_mlir import te
from mlc_mlir.testing import run


@run
def test_linear0():
    X = te.placeholder((1, "m"), name="X")
    W = te.placeholder(("n", "m"), name="W")
    B = te.placeholder(("n",), name="B")
    k = te.reduce_axis((0, "m"), "k")
    Y = te.compute((1, "n"), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    Z = te.compute((1, "n"), lambda i, j: Y[i, j] + B[j], name="Z")
    print(te.create_prim_func([X, W, B, Z], name="linear0"))
    # The local Y gets its size "n" from W, the first argument with that dimension.
# CHECK-LABEL: TEST: test_linear0
# CHECK-DAG: #[[MAP_X:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
# CHECK-DAG: #[[MAP_W:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
# CHECK-DAG: #[[BCAST:.+]] = affine_map<(d0, d1) -> (d1)>
# CHECK-LABEL: func.func @linear0(
# CHECK-SAME: %[[X:.+]]: tensor<1x?xf32> {mlc.name = "X", mlc.shape = [1, "m"]}
# CHECK-SAME: %[[W:.+]]: tensor<?x?xf32> {mlc.name = "W", mlc.shape = ["n", "m"]}
# CHECK-SAME: %[[B:.+]]: tensor<?xf32> {mlc.name = "B", mlc.shape = ["n"]}
# CHECK-SAME: %[[Z:.+]]: tensor<1x?xf32> {mlc.name = "Z", mlc.shape = [1, "n"]}) -> tensor<1x?xf32>
# CHECK: %[[C0:.+]] = arith.constant 0 : index
# CHECK: %[[N:.+]] = tensor.dim %[[W]], %[[C0]] : tensor<?x?xf32>
# CHECK: %[[E:.+]] = tensor.empty(%[[N]]) : tensor<1x?xf32>
# CHECK: %[[INIT:.+]] = linalg.fill {mlc.block_init = "Y"} {{.*}} outs(%[[E]] : tensor<1x?xf32>)
# CHECK: %[[YV:.+]] = linalg.generic {indexing_maps = [#[[MAP_X]], #[[MAP_W]], {{.*}}]
# CHECK-SAME: ins(%[[X]], %[[W]] : tensor<1x?xf32>, tensor<?x?xf32>) outs(%[[INIT]] : tensor<1x?xf32>) attrs = {mlc.block = "Y"}
# CHECK: %[[ZV:.+]] = linalg.generic {indexing_maps = [{{.*}}, #[[BCAST]], {{.*}}]
# CHECK-SAME: ins(%[[YV]], %[[B]] : tensor<1x?xf32>, tensor<?xf32>) outs(%[[Z]] : tensor<1x?xf32>) attrs = {mlc.block = "Z"}
# CHECK: return %[[ZV]] : tensor<1x?xf32>


@run
def test_normalize():
    # te.var and a string name the same symbol; a symbolic size may be used as a value.
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    R = te.compute(("n",), lambda i: A[i] / n, name="R")
    print(te.create_prim_func([A, R], name="normalize"))
# CHECK-LABEL: TEST: test_normalize
# CHECK-LABEL: func.func @normalize(
# CHECK-SAME: %[[A:.+]]: tensor<?xf32> {mlc.name = "A", mlc.shape = ["n"]}
# CHECK: %[[N:.+]] = tensor.dim %[[A]], %{{.+}} : tensor<?xf32>
# CHECK: linalg.generic
# CHECK: %[[NI:.+]] = arith.index_cast %[[N]] : index to i32
# CHECK: %[[NF:.+]] = arith.sitofp %[[NI]] : i32 to f32
# CHECK: arith.divf %{{.+}}, %[[NF]] : f32
