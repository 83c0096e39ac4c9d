"""Course ch.7 as written: the graph AST, EwiseFMARewriter, MatmulAddFusor and
LowerToTensorIR (PyExprMutator), on an MLP trained on scikit-learn's 8x8 digits.

Only the imports differ from the course (and the weights: a scikit-learn MLPClassifier
trained here instead of the downloaded FashionMNIST parameters).

Run: python examples/ch7_mutators.py
"""

import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

import mlc_mlir as tvm
from mlc_mlir import Module as IRModule
from mlc_mlir import graph as relax
from mlc_mlir import topi


# -- 7.3 Pattern match and rewriting ------------------------------------------------------
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


# -- 7.4 Fuse Linear and ReLU -------------------------------------------------------------
def train_params():
    digits = load_digits()
    x, y = (digits.data / 16.0).astype("float32"), digits.target
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = MLPClassifier(hidden_layer_sizes=(128,), max_iter=40, random_state=0).fit(x[:1500], y[:1500])
    params = {"w0": clf.coefs_[0].T, "b0": clf.intercepts_[0], "w1": clf.coefs_[1].T, "b1": clf.intercepts_[1]}
    return {k: np.ascontiguousarray(v, dtype="float32") for k, v in params.items()}, x[1500:], y[1500:]


mlp_params, test_x, test_y = train_params()


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


# -- 7.5 Map to TensorIR calls ------------------------------------------------------------
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


def main() -> None:
    MyModule = make_my_module()
    relax_func = MyModule["main"]
    print("params:", relax_func.params)
    dataflow_block = relax_func.body.blocks[0]
    binding = dataflow_block.bindings[0]
    print("binding.var:", binding.var.name, " binding.value:", binding.value)
    updated_fn = EwiseFMARewriter().visit_expr(MyModule["main"])
    updated_fn.show()
    relax.analysis.remove_all_unused(updated_fn).show()

    MLPModel = create_model()
    MLPModel.show()
    # module_pass makes the class's instances callable passes; mypy does not apply class
    # decorators, hence the ignores
    MLPFused = FuseDenseAddPass()(MLPModel)  # type: ignore[operator]
    MLPFused.show()
    MLPModelTIR = LowerToTensorIRPass()(MLPFused)  # type: ignore[operator]
    MLPModelTIR["main"].show()

    ex = relax.build(MLPModelTIR, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    agree, correct = 0, 0
    for img, label in zip(test_x[:64], test_y[:64]):
        data = img.reshape(1, 64)
        logits = vm["main"](data).numpy()
        ref = np.maximum(data @ mlp_params["w0"].T + mlp_params["b0"], 0) @ mlp_params["w1"].T + mlp_params["b1"]
        agree += bool(np.allclose(logits, ref, rtol=1e-4, atol=1e-4))
        correct += int(logits.argmax() == label)
    print(f"MLPModelTIR agrees with NumPy on {agree}/64 test digits; accuracy {correct / 64:.2f}")


if __name__ == "__main__":
    main()
