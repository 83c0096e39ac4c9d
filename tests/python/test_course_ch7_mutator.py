"""Course ch.7 (computational graph optimization) as written, imports changed only.

The course's TVMScript ``MyModule`` is built with the BlockBuilder (TVMScript parsing is
not part of this project); every other line is the course's. Results are compared with
NumPy after ``graph.build``.
"""

import numpy as np
import pytest

import mlc_mlir as tvm
from mlc_mlir import Module as IRModule
from mlc_mlir import graph as relax
from mlc_mlir import topi


def make_my_module():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((3, 4), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((3, 4), "float32"))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.multiply(x, y))
            gv0 = bb.emit_output(relax.op.add(lv0, y))
        bb.emit_func_output(gv0)
    return bb.get()


@relax.expr_functor.mutator
class EwiseFMARewriter(relax.PyExprMutator):
    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        add_op = tvm.ir.Op.get("relax.add")
        multiply_op = tvm.ir.Op.get("relax.multiply")
        ewise_fma_op = tvm.ir.Op.get("relax.ewise_fma")

        if call.op != add_op:
            return call

        value = self.lookup_binding(call.args[0])
        if not isinstance(value, relax.Call) or value.op != multiply_op:
            return call

        fma_call = relax.Call(
            ewise_fma_op, [value.args[0], value.args[1], call.args[1]], None, None
        )
        return fma_call


def run(mod, *args):
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](*args).numpy()


def test_ast_fields():
    MyModule = make_my_module()
    relax_func = MyModule["main"]
    assert isinstance(relax_func, relax.Function)
    assert [p.name for p in relax_func.params] == ["x", "y"]
    func_body = relax_func.body
    assert isinstance(func_body, relax.SeqExpr)
    dataflow_block = func_body.blocks[0]
    assert isinstance(dataflow_block, relax.DataflowBlock)
    assert len(dataflow_block.bindings) == 2
    binding = dataflow_block.bindings[0]
    assert binding.var.name == "lv0"
    assert isinstance(binding.value, relax.Call)
    assert binding.value.op == tvm.ir.Op.get("relax.multiply")
    assert [a.name for a in binding.value.args] == ["x", "y"]
    gv = dataflow_block.bindings[1]
    assert gv.var.name == "gv0" and gv.value.op == "add"
    assert gv.value.args[0] is binding.var
    assert func_body.body is gv.var


def test_ewise_fma_rewriter(capsys):
    MyModule = make_my_module()
    updated_fn = EwiseFMARewriter().visit_expr(MyModule["main"])
    updated_fn.show()
    text = capsys.readouterr().out
    assert "gv0 = ewise_fma(x, y, y)" in text and "lv0 = multiply(x, y)" in text
    cleaned = relax.analysis.remove_all_unused(updated_fn)
    cleaned.show()
    text = capsys.readouterr().out
    assert "multiply" not in text and "ewise_fma(x, y, y)" in text
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    y = np.random.default_rng(1).standard_normal((3, 4)).astype("float32")
    mod = IRModule.from_expr(cleaned)
    np.testing.assert_allclose(run(mod, x, y), x * y + y, rtol=1e-5)


def test_op_get_rejects_unknown_op():
    with pytest.raises(tvm.MlcError, match="relax.nn.nonexistent"):
        tvm.ir.Op.get("relax.nn.nonexistent")


# -- 7.4 Fuse Linear and ReLU ------------------------------------------------------------
rng = np.random.default_rng(7)
mlp_params = {"w0": rng.standard_normal((128, 64)).astype("float32") * 0.1,
              "b0": rng.standard_normal((128,)).astype("float32") * 0.1,
              "w1": rng.standard_normal((10, 128)).astype("float32") * 0.1,
              "b1": rng.standard_normal((10,)).astype("float32") * 0.1}


def create_model():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 64), "float32"))
    w0 = relax.const(mlp_params["w0"], "float32")
    b0 = relax.const(mlp_params["b0"], "float32")
    w1 = relax.const(mlp_params["w1"], "float32")
    b1 = relax.const(mlp_params["b1"], "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.matmul(x, relax.op.permute_dims(w0)))
            lv1 = bb.emit(relax.op.add(lv0, b0))
            lv2 = bb.emit(relax.op.nn.relu(lv1))
            lv3 = bb.emit(relax.op.matmul(lv2, relax.op.permute_dims(w1)))
            lv4 = bb.emit(relax.op.add(lv3, b1))
            gv = bb.emit_output(lv4)
        bb.emit_func_output(gv)

    return bb.get()


@relax.expr_functor.mutator
class MatmulAddFusor(relax.PyExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod_ = mod
        # cache pre-defined ops
        self.add_op = tvm.ir.Op.get("relax.add")
        self.matmul_op = tvm.ir.Op.get("relax.matmul")
        self.counter = 0

    def transform(self) -> IRModule:
        for global_var, func in self.mod_.functions.items():
            if not isinstance(func, relax.Function):
                continue
            # avoid already fused primitive functions
            if func.attrs is not None and "Primitive" in func.attrs.keys() and func.attrs["Primitive"] != 0:
                continue
            updated_func = self.visit_expr(func)
            updated_func = relax.analysis.remove_all_unused(updated_func)
            self.builder_.update_func(global_var, updated_func)

        return self.builder_.get()

    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)

        def match_call(node, op):
            if not isinstance(node, relax.Call):
                return False
            return node.op == op

        # pattern match matmul => add
        if not match_call(call, self.add_op):
            return call

        value = self.lookup_binding(call.args[0])
        if value is None:
            return call

        if not match_call(value, self.matmul_op):
            return call

        x = value.args[0]
        w = value.args[1]
        b = call.args[1]

        # construct a new fused primitive function
        param_x = relax.Var("x" ,relax.TensorStructInfo(x.struct_info.shape, x.struct_info.dtype))
        param_w = relax.Var("w" ,relax.TensorStructInfo(w.struct_info.shape, w.struct_info.dtype))
        param_b = relax.Var("b" ,relax.TensorStructInfo(b.struct_info.shape, b.struct_info.dtype))

        bb = relax.BlockBuilder()

        fn_name = "fused_matmul_add%d" % (self.counter)
        self.counter += 1
        with bb.function(fn_name, [param_x, param_w, param_b]):
            with bb.dataflow():
                lv0 = bb.emit(relax.op.matmul(param_x, param_w))
                gv = bb.emit_output(relax.op.add(lv0, param_b))
            bb.emit_func_output(gv)

        # Add Primitive attribute to the fused funtions
        fused_fn = bb.get()[fn_name].with_attr("Primitive", 1)
        global_var = self.builder_.add_func(fused_fn, fn_name)

        # construct call into the fused function
        return relax.Call(global_var, [x, w, b], None, None)


@tvm.ir.transform.module_pass(opt_level=2, name="MatmulAddFuse")
class FuseDenseAddPass:
    """The wrapper for the LowerTensorIR pass."""
    def transform_module(self, mod, ctx):
        return MatmulAddFusor(mod).transform()


@relax.expr_functor.mutator
class LowerToTensorIR(relax.PyExprMutator):
    def __init__(self, mod: IRModule, op_map) -> None:
        super().__init__()
        self.mod_ = mod
        self.op_map = {
            tvm.ir.Op.get(k): v for k, v in op_map.items()
        }


    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)

        if call.op in self.op_map:
            return self.op_map[call.op](self.builder_, call)
        return call

    def transform(self) -> IRModule:
        for global_var, func in self.mod_.functions.items():
            if not isinstance(func, relax.Function):
                continue
            updated_func = self.visit_expr(func)
            self.builder_.update_func(global_var, updated_func)

        return self.builder_.get()


def map_matmul(bb, call):
    x, w = call.args
    return bb.call_te(topi.nn.matmul, x, w)

def map_add(bb, call):
    a, b = call.args
    return bb.call_te(topi.add, a, b)

def map_relu(bb, call):
    return bb.call_te(topi.nn.relu, call.args[0])

def map_transpose(bb, call):
    return bb.call_te(topi.transpose, call.args[0], )

op_map = {
  "relax.matmul": map_matmul,
  "relax.add": map_add,
  "relax.nn.relu": map_relu,
  "relax.permute_dims": map_transpose
}

@tvm.ir.transform.module_pass(opt_level=0, name="LowerToTensorIR")
class LowerToTensorIRPass:
    """The wrapper for the LowerTensorIR pass."""
    def transform_module(self, mod, ctx):
        return LowerToTensorIR(mod, op_map).transform()


def numpy_mlp(x):
    h = np.maximum(x @ mlp_params["w0"].T + mlp_params["b0"], 0)
    return h @ mlp_params["w1"].T + mlp_params["b1"]


def test_matmul_add_fusor_and_lower_to_tensor_ir(capsys):
    MLPModel = create_model()
    x = np.random.default_rng(3).standard_normal((1, 64)).astype("float32")
    MLPFused = FuseDenseAddPass()(MLPModel)
    MLPFused.show()
    text = capsys.readouterr().out
    assert "def fused_matmul_add0(x: Tensor((1, 64), float32), w: Tensor((64, 128), float32)" in text
    assert "def fused_matmul_add1(" in text and "= @fused_matmul_add0(x, lv" in text
    assert MLPFused["fused_matmul_add0"].attrs == {"Primitive": 1}
    np.testing.assert_allclose(run(MLPFused, x), numpy_mlp(x), rtol=1e-4, atol=1e-5)

    MLPModelTIR = LowerToTensorIRPass()(MLPFused)
    MLPModelTIR.show()
    text = capsys.readouterr().out
    assert "call_tir(@matmul, (x, w), out=(1, 128) float32)" in text
    assert "relu" in MLPModelTIR.functions and "transpose" in MLPModelTIR.functions
    for name in ("main", "fused_matmul_add0", "fused_matmul_add1"):
        assert not any(str(b.value.op) in ("matmul", "add", "relu", "permute_dims")
                       for blk in MLPModelTIR[name].body.blocks for b in blk.bindings)
    np.testing.assert_allclose(run(MLPModelTIR, x), numpy_mlp(x), rtol=1e-4, atol=1e-5)
