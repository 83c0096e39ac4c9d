# RUN: %PYTHON %s | filecheck %s
# The course ch.7 rewrites from Python: a pattern function on mlc.add (run by MLIR's
# greedy driver), remove_all_unused, and FuseDenseAddPass as a course-style module pass.
import numpy as np

import mlc_mlir as mlc
from mlc_mlir.graph import BlockBuilder, Var, op, rewrite
from mlc_mlir.testing import run


@rewrite.pattern("add")
def ewise_fma(add):
    mul = add.args[0]
    if mul.op != "multiply":
        return None
    return op.ewise_fma(mul.args[0], mul.args[1], add.args[1])


def fma_module():
    x, y = Var("x", (3, 4)), Var("y", (3, 4))
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(op.multiply(x, y))
            gv0 = bb.emit_output(op.add(lv0, y))
        bb.emit_func_output(gv0)
    mod = bb.get()
    return mod, ewise_fma(mod)


@run
def test_pattern():
    print(fma_module()[1].script())
# CHECK-LABEL: TEST: test_pattern
# CHECK-LABEL: func.func @main
# CHECK: %lv0 = "mlc.multiply"(%x, %y)
# CHECK: %lv1 = "mlc.ewise_fma"(%x, %y, %y)
# CHECK: "mlc.output"(%lv1)


@run
def test_remove_all_unused():
    _, updated = fma_module()
    print(mlc.graph.transform.remove_all_unused(updated).script())
# CHECK-LABEL: TEST: test_remove_all_unused
# CHECK-LABEL: func.func @main
# CHECK-NOT: "mlc.multiply"
# CHECK: %lv1 = "mlc.ewise_fma"(%x, %y, %y)


@run
def test_rewrite_count():
    mod, updated = fma_module()
    print("rewrites:", updated.rewrite_count, "input untouched:", "ewise_fma" not in mod.script())
# CHECK-LABEL: TEST: test_rewrite_count
# CHECK: rewrites: 1 input untouched: True



@mlc.graph.transform.module_pass(opt_level=2, name="MatmulAddFuse")
class FuseDenseAddPass:
    def transform_module(self, mod, ctx):
        @rewrite.pattern("add")
        def fuse(add, rw):
            mm = add.args[0]
            if mm.op != "matmul" or mm.num_users != 1:
                return None
            return rw.outline([mm, add], "fused_matmul_add0", param_names=["x", "w", "b"])

        return mlc.graph.transform.remove_all_unused(rewrite.apply_patterns(mod, [fuse]))


def dense_add_module():
    # The course's FuseDenseAddPass, written as a module pass around a pattern that outlines.
    x = Var("x", (1, 64))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.permute_dims(mlc.graph.const(np.zeros((128, 64), "float32"))))
            lv1 = bb.emit(op.matmul(x, lv0))
            lv2 = bb.emit(op.add(lv1, mlc.graph.const(np.zeros(128, "float32"))))
            gv = bb.emit_output(op.relu(lv2))
        bb.emit_func_output(gv)
    return bb.get()


@run
def test_pass_info():
    print(FuseDenseAddPass.info)
# CHECK-LABEL: TEST: test_pass_info
# CHECK: PassInfo(name='MatmulAddFuse', opt_level=2)


@run
def test_fuse_dense_add():
    fused = FuseDenseAddPass()(dense_add_module())
    print(fused.mlir_module.operation.get_asm(large_resource_limit=16, use_name_loc_as_prefix=True))
# CHECK-LABEL: TEST: test_fuse_dense_add
# CHECK-LABEL: func.func private @fused_matmul_add0
# CHECK-SAME: (%x: tensor<1x64xf32> {mlc.name = "x"}, %w: tensor<64x128xf32> {mlc.name = "w"}, %b: tensor<128xf32> {mlc.name = "b"}) -> tensor<1x128xf32> attributes {mlc.graph, mlc.primitive}
# CHECK: %lv1 = "mlc.matmul"(%x, %w)
# CHECK: %lv2 = "mlc.add"(%lv1, %b)
# CHECK: return %lv2
# CHECK-LABEL: func.func @main
# CHECK: %lv0 = "mlc.permute_dims"
# CHECK: %lv2 = func.call @fused_matmul_add0(%x, %lv0, %{{.+}})
# CHECK: %lv3 = "mlc.relu"(%lv2)
# CHECK-NOT: "mlc.matmul"
