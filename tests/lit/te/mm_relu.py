# RUN: %PYTHON %s | filecheck %s
"""te.create_prim_func on the course's mm_relu (ch.2) and matmul + relu (ch.5)."""

from mlc_mlir import te
from mlc_mlir.testing import run


# inputs shared by the cases
A = te.placeholder((128, 128), "float32", name="A")
B = te.placeholder((128, 128), "float32", name="B")


@run
def test_mm_relu():
    k = te.reduce_axis((0, 128), "k")
    Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((128, 128), lambda i, j: te.max(Y[i, j], 0), name="C")
    print(te.create_prim_func([A, B, C], name="mm_relu"))
# CHECK-LABEL: TEST: test_mm_relu
# CHECK-DAG: #[[MAP_A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
# CHECK-DAG: #[[MAP_B:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
# CHECK-DAG: #[[MAP_Y:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
# CHECK-DAG: #[[ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
# CHECK-LABEL: func.func @mm_relu(
# CHECK-SAME: %[[A:.+]]: tensor<128x128xf32> {mlc.name = "A", mlc.shape = [128, 128]}
# CHECK-SAME: %[[B:.+]]: tensor<128x128xf32> {mlc.name = "B", mlc.shape = [128, 128]}
# CHECK-SAME: %[[C:.+]]: tensor<128x128xf32> {mlc.name = "C", mlc.shape = [128, 128]}
# CHECK-SAME: -> tensor<128x128xf32> attributes {mlc.prim_func}
# CHECK: %[[E:.+]] = tensor.empty() : tensor<128x128xf32>
# CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
# CHECK: %[[INIT:.+]] = linalg.fill {mlc.block_init = "Y"} ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<128x128xf32>)
# CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[MAP_A]], #[[MAP_B]], #[[MAP_Y]]], iterator_types = ["parallel", "parallel", "reduction"]}
# CHECK-SAME: ins(%[[A]], %[[B]] : {{.*}}) outs(%[[INIT]] : tensor<128x128xf32>) attrs = {mlc.block = "Y"}
# CHECK: ^bb0(%[[a:.+]]: f32, %[[b:.+]]: f32, %[[acc:.+]]: f32):
# CHECK: %[[P:.+]] = arith.mulf %[[a]], %[[b]] : f32
# CHECK: %[[S:.+]] = arith.addf %[[acc]], %[[P]] : f32
# CHECK: linalg.yield %[[S]] : f32
# CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
# CHECK-SAME: ins(%[[Y]] : tensor<128x128xf32>) outs(%[[C]] : tensor<128x128xf32>) attrs = {mlc.block = "C"}
# CHECK: arith.maximumf
# CHECK: return %[[R]] : tensor<128x128xf32>


def te_matmul(A: te.Tensor, B: te.Tensor) -> te.Tensor:
    assert A.shape[1] == B.shape[0]
    n, m = A.shape[0], B.shape[1]
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")


def te_relu(A: te.Tensor) -> te.Tensor:
    return te.compute(A.shape, lambda *i: te.max(A(*i), 0), name="relu")


@run
def test_main():
    # Only the inputs and the output are listed: matmul becomes a local tensor.
    D = te_relu(te_matmul(A, B))
    print(te.create_prim_func([A, B, D]))
# CHECK-LABEL: TEST: test_main
# CHECK-LABEL: func.func @main(
# CHECK-SAME: %[[D:[^:]+]]: tensor<128x128xf32> {mlc.name = "relu", mlc.shape = [128, 128]}) -> tensor<128x128xf32>
# CHECK: %[[E:.+]] = tensor.empty() : tensor<128x128xf32>
# CHECK: linalg.fill {mlc.block_init = "matmul"} {{.*}} outs(%[[E]] :
# CHECK: %[[MM:.+]] = linalg.generic {{.*}} attrs = {mlc.block = "matmul"}
# CHECK: %[[R:.+]] = linalg.generic {{.*}} ins(%[[MM]] : tensor<128x128xf32>) outs(%[[D]] : tensor<128x128xf32>) attrs = {mlc.block = "relu"}
# CHECK: return %[[R]]


@run
def test_mm_and_relu():
    # Listing the intermediate too makes it an argument (an output) that relu reads back.
    C = te_matmul(A, B)
    D = te_relu(C)
    print(te.create_prim_func([A, B, C, D], name="mm_and_relu"))
# CHECK-LABEL: TEST: test_mm_and_relu
# CHECK-LABEL: func.func @mm_and_relu(
# CHECK-SAME: %[[C:[^:]+]]: tensor<128x128xf32> {mlc.name = "matmul", mlc.shape = [128, 128]}
# CHECK-SAME: %[[D:[^:]+]]: tensor<128x128xf32> {mlc.name = "relu", mlc.shape = [128, 128]})
# CHECK-SAME: -> (tensor<128x128xf32>, tensor<128x128xf32>)
# CHECK-NOT: tensor.empty
# CHECK: %[[INIT:.+]] = linalg.fill {mlc.block_init = "matmul"} {{.*}} outs(%[[C]] :
# CHECK: %[[MM:.+]] = linalg.generic {{.*}} outs(%[[INIT]] : {{.*}} attrs = {mlc.block = "matmul"}
# CHECK: %[[R:.+]] = linalg.generic {{.*}} ins(%[[MM]] : {{.*}} outs(%[[D]] : {{.*}} attrs = {mlc.block = "relu"}
# CHECK: return %[[MM]], %[[R]]
