"""FuseOps knows the model ops: elementwise math, comparisons, where and data movement fuse
with each other and onto a matmul / conv2d as its epilogue; results equal NumPy."""

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir.graph import op
from mlc_mlir.graph.transform import FuseOps

rng = np.random.default_rng(0)


def _build(body, *vars_):
    bb = relax.BlockBuilder()
    with bb.function("main", list(vars_)):
        with bb.dataflow():
            out = bb.emit_output(body(bb))
        bb.emit_func_output(out)
    return bb.get()


def _primitive_groups(mod):
    return FuseOps()(mod).script().count("mlc.primitive")


def test_matmul_epilogue_and_mask_chain_fuse():
    x = relax.Var("x", (4, 16), "float32")
    w = rng.standard_normal((16, 8)).astype(np.float32)

    def body(bb):
        y = bb.emit(op.matmul(x, relax.const(w)))
        y = bb.emit(op.clip(y, -1.0, 2.0))                     # ReLU6-like
        mask = bb.emit(op.greater(y, relax.const(np.float32(0.5))))
        y = bb.emit(op.where(mask, bb.emit(op.exp(y)), bb.emit(op.negative(y))))
        return bb.emit(op.sqrt(bb.emit(op.abs(y))))

    mod = _build(body, x)
    # matmul + clip (its epilogue ends where the value is used three times); the mask, both
    # branches, where, abs and sqrt: one elementwise group
    assert _primitive_groups(mod) == 2
    ex = mlc.graph.build(mod, "llvm")
    assert ex.optimized.script().count("mlc.call_tir") == 2
    xv = rng.standard_normal((4, 16)).astype(np.float32)
    y = np.clip(xv @ w, -1, 2)
    ref = np.sqrt(np.abs(np.where(y > 0.5, np.exp(y), -y)))
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](xv).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_movement_chain_fuses_and_reductions_stay_apart():
    x = relax.Var("x", (2, 3, 8), "float32")

    def body(bb):
        y = bb.emit(op.expand_dims(x, 1))                      # (2, 1, 3, 8)
        y = bb.emit(op.broadcast_to(y, (2, 4, 3, 8)))
        y = bb.emit(op.strided_slice(y, [3], [2], [8]))        # (2, 4, 3, 6)
        y = bb.emit(op.astype(bb.emit(op.less(y, relax.const(np.float32(0.0)))), "float32"))
        return bb.emit(op.sum(y, axis=3))

    mod = _build(body, x)
    ex = mlc.graph.build(mod, "llvm")
    assert ex.optimized.script().count("mlc.call_tir") == 2  # the movement + compare chain, the sum
    xv = rng.standard_normal((2, 3, 8)).astype(np.float32)
    y = np.broadcast_to(xv[:, None], (2, 4, 3, 8))[..., 2:8]
    ref = (y < 0).astype(np.float32).sum(axis=3)
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](xv).numpy()
    np.testing.assert_allclose(got, ref)


def test_conv_bias_relu6_is_one_kernel():
    x = relax.Var("x", (1, 3, 10, 10), "float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)

    def body(bb):
        y = bb.emit(op.nn.conv2d(x, relax.const(w), 1, 1))
        y = bb.emit(op.add(y, relax.const(b)))
        return bb.emit(op.clip(y, 0.0, 6.0))

    mod = _build(body, x)
    ex = mlc.graph.build(mod, "llvm")
    assert ex.optimized.script().count("mlc.call_tir") == 1
    torch = __import__("pytest").importorskip("torch")
    xv = rng.standard_normal((1, 3, 10, 10)).astype(np.float32)
    ref = torch.clamp(torch.nn.functional.conv2d(torch.from_numpy(xv), torch.from_numpy(w), padding=1)
                      + torch.from_numpy(b), 0, 6).numpy()
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](xv).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
