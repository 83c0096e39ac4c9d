"""FoldBatchNorm: conv2d (+ bias) + batch_norm becomes conv2d of scaled weights + a bias add,
and the model computes what torch does."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir.graph import op
from mlc_mlir.graph.transform import FoldBatchNorm

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _bn_params(c):
    return [rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32),
            rng.standard_normal(c).astype(np.float32), rng.uniform(0.5, 2.0, c).astype(np.float32)]


def _graph(batch, with_bias, extra_use=False):
    x = relax.Var("x", (batch, 3, 8, 8), "float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    bn = _bn_params(4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(op.nn.conv2d(x, relax.const(w)))
            if with_bias:
                y = bb.emit(op.add(y, relax.const(b.reshape(1, 4, 1, 1))))
            z = bb.emit(op.nn.batch_norm(y, *[relax.const(p) for p in bn], axis=1, epsilon=1e-5))
            z = bb.emit(op.relu(z))
            if extra_use:
                z = bb.emit(op.add(z, y))
            out = bb.emit_output(z)
        bb.emit_func_output(out)
    return bb.get(), w, b, bn


def _reference(x, w, b, bn, with_bias, extra_use=False):
    conv = torch.nn.Conv2d(3, 4, 3, bias=with_bias)
    norm = torch.nn.BatchNorm2d(4).eval()
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(w))
        if with_bias:
            conv.bias.copy_(torch.from_numpy(b))
        for t, p in zip((norm.weight, norm.bias, norm.running_mean, norm.running_var), bn):
            t.copy_(torch.from_numpy(p))
        y = conv(torch.from_numpy(x))
        z = torch.relu(norm(y))
        return (z + y if extra_use else z).numpy()


@pytest.mark.parametrize("with_bias", [False, True])
def test_conv_bn_folds_and_matches_torch(with_bias):
    mod, w, b, bn = _graph(2, with_bias)
    folded = FoldBatchNorm()(mod).script()
    assert "mlc.batch_norm" not in folded and folded.count("mlc.conv2d") == 1
    assert "mlc.batch_norm" in mod.script()  # the input module is left untouched
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    ex = mlc.graph.build(mod, "llvm")
    assert "batch_norm" not in ex.optimized.script()
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy()
    ref = _reference(x, w, b, bn, with_bias)
    assert np.abs(got - ref).max() / np.abs(ref).max() <= 1e-5


def test_a_conv_result_used_elsewhere_is_not_folded():
    mod, w, b, bn = _graph(1, False, extra_use=True)
    assert "mlc.batch_norm" in FoldBatchNorm()(mod).script()
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    got = mlc.graph.VirtualMachine(mlc.graph.build(mod, "llvm"), mlc.cpu())["main"](x).numpy()
    ref = _reference(x, w, b, bn, False, extra_use=True)
    assert np.abs(got - ref).max() / np.abs(ref).max() <= 1e-5


def test_fold_batch_norm_refuses_what_is_not_a_module():
    with pytest.raises(mlc.GraphError, match="FoldBatchNorm expects an mlc.Module"):
        FoldBatchNorm()("not a module")
