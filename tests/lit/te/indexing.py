# RUN: %PYTHON %s | filecheck %s
"""Index expressions become indexing maps; extents linalg cannot infer get extra operands."""

from mlc_mlir import te
from mlc_mlir.testing import run


# inputs shared by the cases
A = te.placeholder((16, 16), name="A")
V = te.placeholder((128,), name="V")


@run
def test_affine():
    T = te.compute((16, 16), lambda i, j: A[j, i], name="T")
    S = te.compute((8,), lambda i: A[2 * i + 1, 15 - i], name="S")
    U = te.compute((16, 4), lambda i, j: A[i // 2, j % 4 + 4 * (i % 2)], name="U")
    print(te.create_prim_func([A, T, S, U], name="affine"))
# CHECK-LABEL: TEST: test_affine
# CHECK-DAG: #[[TRANSPOSE:.+]] = affine_map<(d0, d1) -> (d1, d0)>
# CHECK-DAG: #[[STRIDED:.+]] = affine_map<(d0) -> (d0 * 2 + 1, -d0 + 15)>
# CHECK-DAG: #[[DIVMOD:.+]] = affine_map<(d0, d1) -> (d0 floordiv 2, d1 mod 4 + (d0 mod 2) * 4)>
# CHECK-LABEL: func.func @affine(
# CHECK: linalg.generic {indexing_maps = [#[[TRANSPOSE]], {{.*}} attrs = {mlc.block = "T"}
# CHECK: linalg.generic {indexing_maps = [#[[STRIDED]], {{.*}} attrs = {mlc.block = "S"}
# CHECK: linalg.generic {indexing_maps = [#[[DIVMOD]], {{.*}} attrs = {mlc.block = "U"}


@run
def test_offset():
    # A reduce axis over (2, 8) is loop d1 shifted by 2.
    k = te.reduce_axis((2, 8), "k")
    P = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name="P")
    print(te.create_prim_func([A, P], name="offset"))
    # d1 indexes no dimension alone, so a shape-only operand gives linalg its extent, 6.
# CHECK-LABEL: TEST: test_offset
# CHECK-DAG: #[[SHIFT:.+]] = affine_map<(d0, d1) -> (d0, d1 + 2)>
# CHECK-DAG: #[[KDIM:.+]] = affine_map<(d0, d1) -> (d1)>
# CHECK-LABEL: func.func @offset(
# CHECK: %[[SHAPE:.+]] = tensor.empty() : tensor<6xi8>
# CHECK: linalg.generic {indexing_maps = [#[[SHIFT]], #[[KDIM]], {{.*}}]
# CHECK-SAME: ins(%{{.+}}, %[[SHAPE]] : tensor<16x16xf32>, tensor<6xi8>)
# CHECK-SAME: attrs = {mlc.block = "P"}


@run
def test_prefix():
    # Reading a prefix: a loop must not take its extent from a longer tensor, so A is sliced.
    H = te.compute((64,), lambda i: V[i] * 2, name="H")
    print(te.create_prim_func([V, H], name="prefix"))
# CHECK-LABEL: TEST: test_prefix
# CHECK-LABEL: func.func @prefix(
# CHECK-SAME: %[[V:[^:]+]]: tensor<128xf32>
# CHECK: %[[SLICE:.+]] = tensor.extract_slice %[[V]][0] [64] [1] : tensor<128xf32> to tensor<64xf32>
# CHECK: linalg.generic {{.*}} ins(%[[SLICE]] : tensor<64xf32>) {{.*}} attrs = {mlc.block = "H"}
