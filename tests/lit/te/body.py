# RUN: %PYTHON %s | filecheck %s
"""Compute bodies: axes as values, casts, conditions, math functions, integer division."""

from mlc_mlir import te
from mlc_mlir.testing import run


# inputs shared by the cases
A = te.placeholder((8,), "float32", name="A")
I = te.placeholder((8,), "int32", name="I")


@run
def test_select():
    C = te.compute((8,), lambda i: te.if_then_else(A[i] > 0, te.sigmoid(A[i]), i.astype("float32")), name="C")
    print(te.create_prim_func([A, C], name="select"))
# CHECK-LABEL: TEST: test_select
# CHECK-LABEL: func.func @select(
# CHECK: linalg.generic
# CHECK: ^bb0(%[[X:.+]]: f32, %{{.+}}: f32):
# CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
# CHECK: %[[POS:.+]] = arith.cmpf ogt, %[[X]], %[[ZERO]] : f32
# CHECK: %[[NEG:.+]] = arith.negf %[[X]] : f32
# CHECK: %[[EXP:.+]] = math.exp %[[NEG]] : f32
# CHECK: %[[SIG:.+]] = arith.divf %{{.+}}, %{{.+}} : f32
# CHECK: %[[IDX:.+]] = linalg.index 0 : index
# CHECK: %[[I32:.+]] = arith.index_cast %[[IDX]] : index to i32
# CHECK: %[[IF:.+]] = arith.sitofp %[[I32]] : i32 to f32
# CHECK: %[[R:.+]] = arith.select %[[POS]], %[[SIG]], %[[IF]] : f32
# CHECK: linalg.yield %[[R]] : f32


@run
def test_intdiv():
    D = te.compute((8,), lambda i: (I[i] // 3 + I[i] % 3).astype("int64"), name="D")
    print(te.create_prim_func([I, D], name="intdiv"))
# CHECK-LABEL: TEST: test_intdiv
# CHECK-LABEL: func.func @intdiv(
# CHECK: ^bb0(%[[X:.+]]: i32, %{{.+}}: i64):
# CHECK: %[[Q:.+]] = arith.floordivsi %[[X]], %[[THREE:.+]] : i32
# CHECK: %[[Q2:.+]] = arith.floordivsi %[[X]], %[[THREE]] : i32
# CHECK: %[[M:.+]] = arith.muli %[[Q2]], %[[THREE]] : i32
# CHECK: %[[REM:.+]] = arith.subi %[[X]], %[[M]] : i32
# CHECK: %[[S:.+]] = arith.addi %[[Q]], %[[REM]] : i32
# CHECK: %[[W:.+]] = arith.extsi %[[S]] : i32 to i64
# CHECK: linalg.yield %[[W]] : i64


@run
def test_maxes():
    # Reductions start from their identity: -inf for a float max, INT_MIN for an int max.
    k = te.reduce_axis((0, 8), "k")
    M = te.compute((1,), lambda i: te.max(A[k], axis=k), name="M")
    N = te.compute((1,), lambda i: te.max(I[k], axis=k), name="N")
    print(te.create_prim_func([A, I, M, N], name="maxes"))
# CHECK-LABEL: TEST: test_maxes
# CHECK-LABEL: func.func @maxes(
# CHECK: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
# CHECK: linalg.fill {mlc.block_init = "M"} ins(%[[NINF]] : f32)
# CHECK: arith.maximumf
# CHECK: %[[IMIN:.+]] = arith.constant -2147483648 : i32
# CHECK: linalg.fill {mlc.block_init = "N"} ins(%[[IMIN]] : i32)
# CHECK: arith.maxsi
