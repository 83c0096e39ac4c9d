# RUN: %PYTHON %s | filecheck %s
# mod.show() of graphs: Relax-like text (dataflow blocks, call_tir with its output type,
# constants summarized), no MLIR noise; a PyExprMutator rewrite printed the same way.
import numpy as np

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir import te

x = relax.Var("x", ("n", 4))
w = relax.const(np.ones((8, 4), "float32"))
bb = relax.BlockBuilder()
with bb.function("main", [x]):
    with bb.dataflow():
        lv0 = bb.emit(relax.op.matmul(x, relax.op.permute_dims(w)))
        lv1 = bb.emit(relax.op.nn.relu(lv0))
        gv = bb.emit_output(lv1)
    bb.emit_func_output(gv)
mod = bb.get()
mod.show()
# CHECK-LABEL: def main(x: Tensor((n, 4), float32)) -> Tensor((n, 8), float32):
# CHECK-NEXT:     with dataflow():
# CHECK-NEXT:         lv2 = permute_dims(c0, axes=(1, 0)) {{ *}}# (4, 8) float32
# CHECK-NEXT:         lv0 = matmul(x, lv2) {{ *}}# (n, 8) float32
# CHECK-NEXT:         gv0 = relu(lv0) {{ *}}# (n, 8) float32
# CHECK-NEXT:         output(gv0)
# CHECK-NEXT:     return gv0
# CHECK-NEXT:     # constants: c0 (8, 4) float32
# CHECK-NOT: omp.terminator
# CHECK-NOT: operandSegmentSizes

legal = relax.transform.LegalizeOps()(mod)
legal["main"].show()
# CHECK-LABEL: def main(x: Tensor((n, 4), float32))
# CHECK: [[MM:lv[0-9]+]] = call_tir(@matmul, (x, lv{{[0-9]+}}), out=(n, 8) float32)
# CHECK: gv0 = call_tir(@relu, ([[MM]],), out=(n, 8) float32)


@relax.expr_functor.mutator
class ReluToSigmoid(relax.PyExprMutator):
    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        if call.op == mlc.ir.Op.get("relax.nn.relu"):
            return relax.Call(mlc.ir.Op.get("relax.sigmoid"), call.args)
        return call


ReluToSigmoid().visit_expr(mod["main"]).show()
# CHECK-LABEL: def main(x: Tensor((n, 4), float32))
# CHECK: gv0 = sigmoid(lv0)
# CHECK: output(gv0)
