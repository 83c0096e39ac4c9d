"""Course ch.7 (computational graph optimization) as written, imports changed only.

The course's code lives once, in ``examples/ch7_mutators.py`` (the course's TVMScript
``MyModule`` is built with the BlockBuilder there; every other line is the course's): this
test loads that file and checks each step, comparing results with NumPy after
``graph.build`` on the example's MLP (trained on scikit-learn's digits).
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import mlc_mlir as tvm
from mlc_mlir import Module as IRModule
from mlc_mlir import graph as relax

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ch7_mutators.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("ch7_mutators", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (its main() runs only as a script)
    return module


ch7 = _load_example()
make_my_module, EwiseFMARewriter = ch7.make_my_module, ch7.EwiseFMARewriter
create_model, mlp_params = ch7.create_model, ch7.mlp_params
FuseDenseAddPass, LowerToTensorIRPass = ch7.FuseDenseAddPass, ch7.LowerToTensorIRPass


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


# -- 7.4 Fuse Linear and ReLU, 7.5 Map to TensorIR calls ---------------------------------
def numpy_mlp(x):
    h = np.maximum(x @ mlp_params["w0"].T + mlp_params["b0"], 0)
    return h @ mlp_params["w1"].T + mlp_params["b1"]


def test_matmul_add_fusor_and_lower_to_tensor_ir(capsys):
    MLPModel = create_model()
    x = ch7.test_x[:1].reshape(1, 64)  # a held-out digit
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
