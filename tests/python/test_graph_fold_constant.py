"""FoldConstant (TVM's FoldConstant): graph ops of constants become constants at compile time.

The folded module gives NumPy's results (weights as blobs and as small dense constants),
the transposed weight reaches the kernel laid out as the matmul reads it, ops with a
non-constant operand and growing broadcasts stay, and bad input raises GraphError."""

from __future__ import annotations

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.graph.transform import BindParams, FoldConstant
from mlc_mlir.graph.transform.optimize import optimization_stages
from mlc_mlir.testing import filecheck


def graph_ops(mod: mlc.Module) -> list[str]:
    text = str(mod)
    return [line.split('"')[1] for line in text.splitlines() if '= "mlc.' in line and "mlc.dataflow" not in line]


def run(mod: mlc.Module, *args):
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod), mlc.cpu())
    return vm["main"](*args).numpy()


def mlp(batch: int, w0, b0, w1, b1) -> mlc.Module:
    bb = BlockBuilder()
    x = Var("x", (batch, w0.shape[1]))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.matmul(x, op.permute_dims(mlc.graph.const(w0))))
            lv1 = bb.emit(op.relu(op.add(lv0, mlc.graph.const(b0))))
            gv = bb.emit_output(op.add(op.matmul(lv1, op.permute_dims(mlc.graph.const(w1))), mlc.graph.const(b1)))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("batch", [1, 5, 64])
def test_folded_mlp_matches_numpy(rng, batch):
    w0, b0 = rng.standard_normal((40, 24)).astype("float32"), rng.standard_normal(40).astype("float32")
    w1, b1 = rng.standard_normal((3, 40)).astype("float32"), rng.standard_normal(3).astype("float32")
    mod = mlp(batch, w0, b0, w1, b1)
    folded = FoldConstant()(mod)
    assert graph_ops(mod).count("mlc.permute_dims") == 2  # the input is left as it was
    assert "mlc.permute_dims" not in graph_ops(folded)
    x = rng.standard_normal((batch, 24)).astype("float32")
    want = np.maximum(x @ w0.T + b0, 0) @ w1.T + b1
    np.testing.assert_allclose(run(folded, x), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run(mod, x), want, rtol=1e-4, atol=1e-4)  # graph.build folds by default


def test_build_passes_the_transposed_weight_to_the_kernel(rng):
    w0, b0 = rng.standard_normal((32, 20)).astype("float32"), rng.standard_normal(32).astype("float32")
    w1, b1 = rng.standard_normal((4, 32)).astype("float32"), rng.standard_normal(4).astype("float32")
    ex = mlc.graph.build(mlp(2, w0, b0, w1, b1))
    filecheck(str(ex.optimized), """
        CHECK-NOT: "mlc.permute_dims"
        CHECK-LABEL: func.func @fused_matmul_add_relu(
        CHECK-SAME: tensor<20x32xf32>
        CHECK-LABEL: func.func @fused_matmul_add(
        CHECK-SAME: tensor<32x4xf32>
    """)


def test_bound_params_fold_and_reshape_and_arithmetic(rng):
    wc = rng.standard_normal((6, 4)).astype("float32")
    c = rng.standard_normal((2, 2)).astype("float32")  # 4 elements: a small dense<...> constant
    x, w = Var("x", (3, 6)), Var("w", (6, 4))
    bb = BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(op.matmul(x, op.reshape(op.permute_dims(w), (6, 4))))
            bias = op.reshape(op.multiply(mlc.graph.const(c), mlc.graph.const(c)), (4,))
            gv = bb.emit_output(op.add(y, bias))
        bb.emit_func_output(gv)
    mod = BindParams("main", {"w": wc})(bb.get())
    ops = graph_ops(FoldConstant()(mod))
    assert ops == ["mlc.constant", "mlc.matmul", "mlc.constant", "mlc.add"], ops
    xs = rng.standard_normal((3, 6)).astype("float32")
    want = xs @ wc.T.reshape(6, 4) + (c * c).reshape(4)
    np.testing.assert_allclose(run(FoldConstant()(mod), xs), want, rtol=1e-5, atol=1e-5)


def test_non_constant_operand_and_broadcast_growth_stay(rng):
    b = rng.standard_normal(8).astype("float32")
    x = Var("x", (4, 8))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            big = op.add(mlc.graph.const(np.zeros((4, 8), "float32")), mlc.graph.const(b))  # same size: folds
            grow = op.add(mlc.graph.const(np.zeros((4, 1), "float32")), mlc.graph.const(b))  # 4x8 from 8: stays
            gv = bb.emit_output(op.add(op.add(op.permute_dims(op.permute_dims(x)), big), grow))
        bb.emit_func_output(gv)
    mod = bb.get()
    ops = graph_ops(FoldConstant()(mod))
    assert ops.count("mlc.permute_dims") == 2  # of x: not constant
    assert ops.count("mlc.add") == 3  # the growing broadcast and the two adds of x stay
    xs = rng.standard_normal((4, 8)).astype("float32")
    np.testing.assert_allclose(run(mod, xs), xs + 2 * b, rtol=1e-6)


def test_fold_constant_errors():
    with pytest.raises(mlc.errors.GraphError, match="FoldConstant expects an mlc.Module"):
        FoldConstant()("module")


def test_fold_constant_pass_registered():
    from mlc_mlir.passes import get_pass

    assert "constant" in get_pass("fold-constant").help
    assert "fold-constant" in [s.name for s in optimization_stages(1)]
    assert "fold-constant" not in [s.name for s in optimization_stages(0)]
