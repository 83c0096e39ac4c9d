# RUN: %PYTHON %s | filecheck %s
# The course's ch.5 BlockBuilder example: emit_te creates the tensor program and the
# call_tir in one step; the parameters are given at the end.
import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.testing import run


def te_matmul(A, B):
    k = te.reduce_axis((0, A.shape[1]), "k")
    return te.compute((A.shape[0], B.shape[1]), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")


def te_relu(A):
    return te.compute(A.shape, lambda *i: te.max(A(*i), 0), name="relu")


@run
def test_emit_te():
    A = Var("A", (128, 128), "float32")
    B = Var("B", (128, 128), "float32")
    bb = BlockBuilder()
    with bb.function("main"):
        with bb.dataflow():
            C = bb.emit_te(te_matmul, A, B)
            D = bb.emit_te(te_relu, C)
            R = bb.emit_output(D)
        bb.emit_func_output(R, params=[A, B])
    mod = bb.get()
    print(mod.script())
# CHECK-LABEL: TEST: test_emit_te
# CHECK-LABEL: func.func @te_matmul
# CHECK-SAME: {mlc.name = "A", mlc.shape = [128, 128]}
# CHECK-SAME: attributes {mlc.prim_func}
# CHECK: linalg.generic
# CHECK-SAME: mlc.block = "matmul"
# CHECK-LABEL: func.func @te_relu
# CHECK: mlc.block = "relu"
# CHECK-LABEL: func.func @main
# CHECK-SAME: {mlc.name = "A"}
# CHECK-SAME: attributes {mlc.graph}
# CHECK: %[[GV:.+]] = "mlc.dataflow"() ({
# CHECK: %lv0 = "mlc.call_tir"(%A, %B) {callee = @te_matmul
# CHECK: %lv1 = "mlc.call_tir"(%lv0) {callee = @te_relu
# CHECK: "mlc.output"(%lv1)
# CHECK-NEXT: omp.terminator
# CHECK: return %[[GV]]


def symbolic_module():
    """Symbolic batch, a second emit_te of the same te function (a new program), graph ops."""
    x = Var("x", ("n", 16), "float32")
    w = Var("w", (16, 16), "float32")
    bb = BlockBuilder()
    with bb.function("f", params=[x, w]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_matmul, x, w)
            lv1 = bb.emit_te(te_matmul, lv0, w)
            gv = bb.emit_output(op.add(lv1, mlc.graph.const(np.ones(16, "float32"))))
        bb.emit_func_output(gv)
    return bb.get()


@run
def test_symbolic_batch():
    print(symbolic_module().script())
# CHECK-LABEL: TEST: test_symbolic_batch
# CHECK-LABEL: func.func @te_matmul
# CHECK-SAME: mlc.shape = ["n", 16]
# CHECK-LABEL: func.func @te_matmul1
# CHECK-LABEL: func.func @f
# CHECK: "mlc.call_tir"(%x, %w) {callee = @te_matmul, mlc.shape = ["n", 16]
# CHECK: "mlc.call_tir"(%lv0, %w) {callee = @te_matmul1, mlc.shape = ["n", 16]
# CHECK: "mlc.constant"() {value = dense<1.000000e+00> : tensor<16xf32>}
# CHECK: "mlc.add"


@run
def test_bind_params():
    # BindParams: the bound weight becomes a dense_resource constant named after it.
    bound = mlc.graph.transform.BindParams("f", {"w": np.eye(16, dtype="float32")})(symbolic_module())
    print(bound["f"])
# CHECK-LABEL: TEST: test_bind_params
# CHECK-LABEL: func.func @f(%arg0: tensor<?x16xf32> {mlc.name = "x", mlc.shape = ["n", 16]}) -> tensor<?x16xf32>
# CHECK: "mlc.constant"() {value = dense_resource<w{{.*}}> : tensor<16x16xf32>}
