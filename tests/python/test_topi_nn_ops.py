"""mlc.topi operators and the nn graph ops (relax.op.nn) against NumPy references."""

import math

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir import te, topi

rng = np.random.default_rng(0)


def conv2d_ref(x, w, stride=1):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, f, oh, ow), np.float64)
    for y in range(oh):
        for z in range(ow):
            patch = x[:, :, y * stride:y * stride + kh, z * stride:z * stride + kw]
            out[:, :, y, z] = np.einsum("nchw,fchw->nf", patch, w)
    return out


def max_pool_ref(x, k):
    n, c, h, w = x.shape
    return x[:, :, :h // k * k, :w // k * k].reshape(n, c, h // k, k, w // k, k).max(axis=(3, 5))


def gelu_ref(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def layer_norm_ref(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def run_te(fn, *arrays):
    phs = [te.placeholder(a.shape, "float32", name=f"a{i}") for i, a in enumerate(arrays)]
    out = fn(*phs)
    res = np.zeros(tuple(out.shape), np.float32)
    mlc.build(te.create_prim_func([*phs, out]))["main"](*arrays, res)
    return res


def test_topi_operators_match_numpy():
    x = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(run_te(lambda a, b: topi.nn.conv2d(a, b, 2), x, w), conv2d_ref(x, w, 2),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_te(lambda a: topi.nn.max_pool2d(a, 2), x), max_pool_ref(x, 2))
    np.testing.assert_allclose(run_te(lambda a: topi.nn.avg_pool2d(a, 3), x),
                               x[:, :, :6, :6].reshape(2, 3, 2, 3, 2, 3).mean(axis=(3, 5)), rtol=1e-5, atol=1e-6)
    a, b = rng.standard_normal((5, 6)).astype(np.float32), rng.standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(run_te(topi.nn.matmul, a, b), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run_te(topi.nn.dense, a, b.T.copy()), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run_te(topi.nn.gelu, a), gelu_ref(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run_te(topi.nn.softmax, a), np.exp(a) / np.exp(a).sum(-1, keepdims=True),
                               rtol=1e-5)
    g, bb = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    np.testing.assert_allclose(run_te(lambda *t: topi.nn.layer_norm(*t, axis=-1), a, g, bb),
                               layer_norm_ref(a, g, bb), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run_te(lambda t: topi.transpose(t, (1, 0)), a), a.T)
    np.testing.assert_allclose(run_te(lambda t: topi.reshape(t, (3, -1)), a), a.reshape(3, -1))
    np.testing.assert_allclose(run_te(topi.add, a, bb), a + bb, rtol=1e-6)
    np.testing.assert_allclose(run_te(topi.tanh, a), np.tanh(a), rtol=1e-5, atol=1e-6)


def test_topi_errors_name_the_problem():
    x = te.placeholder((1, 3, 8, 8), name="x")
    w = te.placeholder((4, 2, 3, 3), name="w")
    with pytest.raises(mlc.TEError, match="data has 3 channels, kernel expects 2"):
        topi.nn.conv2d(x, w)
    with pytest.raises(mlc.TEError, match=r"padding must be an int, \(h, w\) or \(top, left, bottom, right\)"):
        topi.nn.conv2d(x, te.placeholder((4, 3, 3, 3), name="w2"), padding=(1, 1, 1))
    assert topi.nn.conv2d(x, te.placeholder((4, 3, 3, 3), name="w2"), padding=1).shape == (1, 4, 8, 8)
    with pytest.raises(mlc.TEError, match="must be a te tensor"):
        topi.nn.relu(np.zeros(3))


def test_nn_graph_ops_build_and_match_numpy():
    xs = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    mean, var = rng.standard_normal(4).astype(np.float32), rng.random(4).astype(np.float32) + 0.5
    gamma, beta = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    wm = rng.standard_normal((36, 16)).astype(np.float32)
    g2, b2 = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    x = relax.Var("x", xs.shape)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.conv2d(x, relax.const(w)))                      # (2, 4, 7, 7)
            n = bb.emit(relax.op.nn.batch_norm(c, *map(relax.const, (gamma, beta, mean, var))))
            p = bb.emit(relax.op.nn.max_pool2d(relax.op.nn.relu(n), (2, 2)))         # (2, 4, 3, 3)
            h = bb.emit(relax.op.matmul(relax.op.reshape(p, (2, 36)), relax.const(wm)))
            gv = bb.emit_output(relax.op.tanh(relax.op.nn.gelu(relax.op.nn.layer_norm(
                h, relax.const(g2), relax.const(b2)))))
        bb.emit_func_output(gv)
    mod = bb.get()
    cr = conv2d_ref(xs, w)
    nr = (cr - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5) * gamma[:, None, None] + beta[:, None, None]
    pr = max_pool_ref(np.maximum(nr, 0), 2)
    want = np.tanh(gelu_ref(layer_norm_ref(pr.reshape(2, 36) @ wm, g2, b2)))
    for opt_level in (0, 2):
        out = relax.VirtualMachine(relax.build(mod, "llvm", opt_level=opt_level), mlc.cpu())["main"](xs).numpy()
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    legal = relax.transform.LegalizeOps()(mod)
    assert {"conv2d", "batch_norm", "max_pool2d", "layer_norm", "gelu", "tanh"} <= set(legal.functions)


def test_nn_graph_op_errors():
    x = relax.Var("x", (1, 3, 8, 8))
    with pytest.raises(mlc.GraphError, match="data has 3 channels, weight expects 2"):
        relax.op.nn.conv2d(x, relax.Var("w", (4, 2, 3, 3)))
    with pytest.raises(mlc.GraphError, match="padding must be a non-negative int"):
        relax.op.nn.conv2d(x, relax.Var("w", (4, 3, 3, 3)), padding=-1)
    assert relax.op.nn.conv2d(x, relax.Var("w", (4, 3, 3, 3)), padding=1).shape == (1, 4, 8, 8)
    with pytest.raises(mlc.GraphError, match="gamma has shape"):
        relax.op.nn.layer_norm(relax.Var("h", (2, 8)), relax.Var("g", (4,)), relax.Var("b", (8,)))
