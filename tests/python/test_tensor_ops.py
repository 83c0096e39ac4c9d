"""Tensor graph ops (relax.op: comparisons, masks, elementwise math, casts, fills, reductions,
layout, take) built with mlc.graph.build (default schedule rules) against NumPy, and their
GraphErrors."""

import math

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir import te, topi

R = relax.op
rng = np.random.default_rng(7)


def run(fn, *arrays, shapes=None, opt_level=2):
    """Build ``fn(*vars)`` as a graph function (``shapes`` may name symbolic dims) and run it."""
    shapes = shapes or [a.shape for a in arrays]
    params = [relax.Var(f"a{i}", s, str(a.dtype)) for i, (a, s) in enumerate(zip(arrays, shapes))]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(fn(*params))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm", opt_level=opt_level)
    return relax.VirtualMachine(ex, mlc.cpu())["main"](*arrays).numpy()


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


erf_ref = np.vectorize(math.erf, otypes=[np.float64])


# -- comparisons, masks, elementwise ---------------------------------------------------------

@pytest.mark.parametrize("name, ref", [
    ("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less), ("less_equal", np.less_equal),
    ("greater", np.greater), ("greater_equal", np.greater_equal)])
def test_comparisons_broadcast_to_bool(name, ref):
    x = np.round(f32(3, 4))        # rounded, so that some elements are equal
    y = np.round(f32(4))
    out = run(getattr(R, name), x, y)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, ref(x, y))
    xi, yi = rng.integers(-2, 3, (2, 1, 5)).astype(np.int32), rng.integers(-2, 3, (3, 1)).astype(np.int32)
    np.testing.assert_array_equal(run(getattr(R, name), xi, yi), ref(xi, yi))


def test_logical_bitwise_and_where():
    a, b = f32(3, 4) > 0, f32(4) > 0
    np.testing.assert_array_equal(run(R.logical_and, a, b), a & b)
    np.testing.assert_array_equal(run(R.logical_or, a, b), a | b)
    np.testing.assert_array_equal(run(R.bitwise_and, a, b), a & b)
    np.testing.assert_array_equal(run(R.bitwise_or, a, b), a | b)
    np.testing.assert_array_equal(run(R.logical_not, a), ~a)
    x, y = f32(2, 1, 4), f32(3, 1)
    c = f32(3, 4) > 0
    np.testing.assert_array_equal(run(R.where, c, x, y), np.where(c, x, y))
    # a mask from a comparison, a scalar branch (masked_fill)
    np.testing.assert_array_equal(run(lambda v: R.where(R.less(v, 0.0), v, 0.0), x), np.where(x < 0, x, 0))


@pytest.mark.parametrize("name, ref, positive", [
    ("exp", np.exp, False), ("log", np.log, True), ("sqrt", np.sqrt, True),
    ("rsqrt", lambda v: 1 / np.sqrt(v), True), ("erf", erf_ref, False), ("negative", np.negative, False),
    ("abs", np.abs, False), ("floor", np.floor, False), ("ceil", np.ceil, False), ("sin", np.sin, False),
    ("cos", np.cos, False)])
def test_unary_math(name, ref, positive):
    x = f32(3, 5) * 3
    if positive:
        x = np.abs(x) + 0.1
    np.testing.assert_allclose(run(getattr(R, name), x), ref(x), rtol=1e-5, atol=1e-6)


def test_binary_math_clip_astype_and_fills():
    x, y = f32(3, 4), f32(4)
    p = np.abs(x) + 0.1
    np.testing.assert_allclose(run(R.power, p, y), p ** y, rtol=1e-5)
    np.testing.assert_allclose(run(lambda v: R.power(v, 2.0), x), x ** 2, rtol=1e-6)
    np.testing.assert_array_equal(run(R.maximum, x, y), np.maximum(x, y))
    np.testing.assert_array_equal(run(R.minimum, x, y), np.minimum(x, y))
    xi = rng.integers(-9, 9, (3, 4)).astype(np.int64)
    np.testing.assert_array_equal(run(R.negative, xi), -xi)
    np.testing.assert_array_equal(run(R.abs, xi), np.abs(xi))
    np.testing.assert_array_equal(run(R.maximum, xi, xi.T[:1].T), np.maximum(xi, xi[:, :1]))
    np.testing.assert_array_equal(run(lambda v: R.clip(R.multiply(v, 4.0), 0, 6), x), np.clip(x * 4, 0, 6))   # relu6
    np.testing.assert_array_equal(run(lambda v: R.clip(v, max=0.5), x), np.minimum(x, 0.5))
    np.testing.assert_array_equal(run(lambda v: R.clip(v, -1.5, 2.5), xi), np.clip(xi, -1, 2))
    np.testing.assert_array_equal(run(lambda v: R.astype(v, "int32"), x * 5), (x * 5).astype(np.int32))
    np.testing.assert_array_equal(run(lambda v: R.astype(v, "float32"), xi), xi.astype(np.float32))
    np.testing.assert_array_equal(run(lambda v: R.astype(v, "bool"), xi), xi.astype(bool))
    np.testing.assert_array_equal(run(lambda v: R.astype(v, "float32"), x > 0), (x > 0).astype(np.float32))
    np.testing.assert_array_equal(run(lambda v: R.full_like(v, 2.5), x), np.full_like(x, 2.5))
    np.testing.assert_array_equal(run(lambda v: R.ones_like(v, "int32"), x), np.ones((3, 4), np.int32))
    np.testing.assert_array_equal(run(lambda v: R.zeros_like(v, "bool"), x), np.zeros((3, 4), bool))


def test_elementwise_with_a_symbolic_batch():
    x, y = f32(5, 4), f32(4)
    out = run(lambda a, b: R.where(R.greater(a, b), R.exp(a), R.clip(b, -0.5, 0.5)), x, y, shapes=[("n", 4), (4,)])
    np.testing.assert_allclose(out, np.where(x > y, np.exp(x), np.clip(y, -0.5, 0.5)), rtol=1e-6)
    out = run(lambda a: R.astype(R.less(a, R.zeros_like(a)), "int8"), x, shapes=[("n", 4)])
    np.testing.assert_array_equal(out, (x < 0).astype(np.int8))


def test_elementwise_opt_level_0_and_legalized_names():
    x, y = f32(2, 3), f32(2, 3)
    np.testing.assert_allclose(run(lambda a, b: R.sqrt(R.abs(R.minimum(a, b))), x, y, opt_level=0),
                               np.sqrt(np.abs(np.minimum(x, y))), rtol=1e-6)
    v = relax.Var("x", (2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [v]):
        with bb.dataflow():
            gv = bb.emit_output(R.where(R.less(v, 0.0), R.negative(v), R.erf(v)))
        bb.emit_func_output(gv)
    assert {"less", "negative", "erf", "where"} <= set(relax.transform.LegalizeOps()(bb.get()).functions)


def test_elementwise_errors():
    x, xi, b = relax.Var("x", (2, 3)), relax.Var("i", (2, 3), "int32"), relax.Var("b", (2, 3), "bool")
    with pytest.raises(mlc.GraphError, match="less: arguments have different dtypes"):
        R.less(x, xi)
    with pytest.raises(mlc.GraphError, match=r"equal of .* do not broadcast"):
        R.equal(x, relax.Var("y", (4,)))
    with pytest.raises(mlc.GraphError, match="logical_and: needs bool"):
        R.logical_and(x, x)
    with pytest.raises(mlc.GraphError, match="bitwise_or: only bool tensors"):
        R.bitwise_or(xi, xi)
    with pytest.raises(mlc.GraphError, match="where: the condition must be bool"):
        R.where(x, x, x)
    with pytest.raises(mlc.GraphError, match=r"where of .* do not broadcast"):
        R.where(b, x, relax.Var("z", (3, 2)))
    with pytest.raises(mlc.GraphError, match="power: needs a float dtype"):
        R.power(xi, xi)
    with pytest.raises(mlc.GraphError, match="sqrt: needs a float dtype"):
        R.sqrt(xi)
    with pytest.raises(mlc.GraphError, match="negative: needs an int or float dtype"):
        R.negative(b)
    with pytest.raises(mlc.GraphError, match="clip: min 3 is greater than max 1"):
        R.clip(x, 3, 1)
    with pytest.raises(mlc.GraphError, match="clip: max must be a Python number"):
        R.clip(x, 0, "6")
    with pytest.raises(mlc.GraphError, match="unknown astype dtype 'float8'"):
        R.astype(x, "float8")
    with pytest.raises(mlc.GraphError, match="fill_value 0.5 is not an integer"):
        R.full_like(x, 0.5, "int32")


def test_topi_elementwise_errors():
    a = te.placeholder((2, 3), name="a")
    with pytest.raises(mlc.TEError, match="condition must be bool"):
        topi.where(a, a, a)
    with pytest.raises(mlc.TEError, match="bool tensor cannot be clipped"):
        topi.clip(te.placeholder((2,), "bool", name="m"), 0, 1)


# -- reductions ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, True), ((0, 2), False), (-1, False)])
def test_reductions_match_numpy(name, axis, keepdims):
    x = f32(3, 4, 5)
    if name == "prod" and axis is None:
        x = x[:2, :2, :3]          # an unrolled product: at most 64 elements
    out = run(lambda a: getattr(R, name)(a, axis, keepdims), x)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_int_bool_and_symbolic_reductions():
    xi = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    np.testing.assert_array_equal(run(lambda a: R.sum(a, 1), xi), xi.sum(1, dtype=np.int32))
    np.testing.assert_array_equal(run(R.max, xi), xi.max())
    np.testing.assert_array_equal(run(lambda a: R.prod(a, 0), xi), xi.prod(0, dtype=np.int32))
    b = f32(3, 4, 5) > 0.5
    np.testing.assert_array_equal(run(lambda a: R.any(a, 1), b), b.any(1))
    np.testing.assert_array_equal(run(lambda a: R.all(a, (0, 2), True), b), b.all((0, 2), keepdims=True))
    np.testing.assert_array_equal(run(R.any, b), b.any())
    x = f32(6, 4, 5)
    sym = [("n", 4, 5)]
    np.testing.assert_allclose(run(lambda a: R.mean(a, 1), x, shapes=sym), x.mean(1), rtol=1e-5)
    np.testing.assert_allclose(run(lambda a: R.sum(a, 0), x, shapes=sym), x.sum(0), rtol=1e-5)
    np.testing.assert_allclose(run(lambda a: R.mean(a, (0, 1), True), x, shapes=sym), x.mean((0, 1), keepdims=True),
                               rtol=1e-5)
    np.testing.assert_allclose(run(lambda a: R.max(a, -1), x, shapes=sym), x.max(-1))


def test_cumsum():
    x = f32(3, 4, 5)
    np.testing.assert_allclose(run(lambda a: R.cumsum(a, 1), x), np.cumsum(x, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run(R.cumsum, x), np.cumsum(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run(lambda a: R.cumsum(a, 0), x, shapes=[("n", 4, 5)]), np.cumsum(x, 0),
                               rtol=1e-5, atol=1e-5)
    xi = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    out = run(lambda a: R.cumsum(a, 0, "int64"), xi)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np.cumsum(xi, 0))
    b = xi > 0
    np.testing.assert_array_equal(run(lambda a: R.cumsum(a, -1), b), np.cumsum(b, -1))
    # along rows of whole vectors: the default rules once split these into lane partial sums
    # (rfactor), which lost the k <= i mask (every element the row's total)
    for x in (f32(3, 64), f32(5, 1000), rng.integers(-9, 9, (3, 4)).astype(np.int64),
              rng.integers(-9, 9, (4, 64)).astype(np.int32)):
        np.testing.assert_allclose(run(lambda a: R.cumsum(a, -1), x), np.cumsum(x, -1), rtol=1e-4, atol=1e-3)


def test_reduction_errors():
    x = relax.Var("x", (2, 3, 4))
    with pytest.raises(mlc.GraphError, match=r"sum: axis 3 is out of range for shape \(2, 3, 4\)"):
        R.sum(x, 3)
    with pytest.raises(mlc.GraphError, match=r"max: axis \(1, 1\) names a dimension twice"):
        R.max(x, (1, -2))
    with pytest.raises(mlc.GraphError, match="mean: needs a float dtype"):
        R.mean(relax.Var("i", (2, 3), "int32"))
    with pytest.raises(mlc.GraphError, match="any: needs bool"):
        R.any(x)
    with pytest.raises(mlc.GraphError, match="sum: needs an int or float dtype"):
        R.sum(relax.Var("b", (2,), "bool"))
    with pytest.raises(mlc.GraphError, match="keepdims must be a bool"):
        R.min(x, 0, keepdims="yes")
    with pytest.raises(mlc.GraphError, match="axis must be an int"):
        R.sum(x, 1.5)
    with pytest.raises(mlc.GraphError, match="at most 64 static elements"):
        R.prod(relax.Var("y", ("n", 3)), 0)
    with pytest.raises(mlc.GraphError, match="cumsum: axis must be one int"):
        R.cumsum(x, (0, 1))
    with pytest.raises(mlc.GraphError, match="flattens, which needs a static shape"):
        R.cumsum(relax.Var("y", ("n", 3)))
    with pytest.raises(mlc.GraphError, match=r"cumsum: axis -4 is out of range"):
        R.cumsum(x, -4)
    # permute_dims still works beside the graph op named max
    assert R.permute_dims(x).shape == (4, 3, 2)


# -- layout and indexing ---------------------------------------------------------------------

def test_broadcast_expand_squeeze():
    x = f32(3, 1, 5)
    np.testing.assert_array_equal(run(lambda a: R.broadcast_to(a, (2, 3, 4, 5)), x), np.broadcast_to(x, (2, 3, 4, 5)))
    np.testing.assert_array_equal(run(lambda a: R.broadcast_to(a, ("n", 4, 5)), x, shapes=[("n", 1, 5)]),
                                  np.broadcast_to(x, (3, 4, 5)))
    np.testing.assert_array_equal(run(lambda a: R.expand_dims(a, (0, -1)), x), x[None, ..., None])
    np.testing.assert_array_equal(run(lambda a: R.expand_dims(a, 1), x, shapes=[("n", 1, 5)]), x[:, None])
    np.testing.assert_array_equal(run(R.squeeze, x), x.squeeze())
    np.testing.assert_array_equal(run(lambda a: R.squeeze(a, -2), x, shapes=[("n", 1, 5)]), x.squeeze(1))
    y = f32(1, 6, 1)
    np.testing.assert_array_equal(run(lambda a: R.squeeze(a, 0), y, shapes=[(1, "n", 1)]), y.squeeze(0))


@pytest.mark.parametrize("axes, begin, end, strides, index", [
    ((1,), (1,), (5,), None, np.s_[:, 1:5]),
    ((1, 2), (1, -1), (5, -9), (2, -2), np.s_[:, 1:5:2, -1:-9:-2]),
    ((0,), (-100,), (100,), (1,), np.s_[-100:100]),                           # clamped
    ((2,), (3,), (2 ** 63 - 1,), None, np.s_[:, :, 3:]),                      # torch's "to the end"
    ((-1,), (2,), (3,), None, np.s_[..., 2:3]),                               # select (then squeeze)
])
def test_strided_slice(axes, begin, end, strides, index):
    y = f32(6, 7, 8)
    want = y[index]
    np.testing.assert_array_equal(run(lambda a: R.strided_slice(a, axes, begin, end, strides), y), want)
    if 0 not in [a % 3 for a in axes]:
        np.testing.assert_array_equal(
            run(lambda a: R.strided_slice(a, axes, begin, end, strides), y, shapes=[("n", 7, 8)]), want)


def test_concat():
    y = f32(4, 7, 8)
    np.testing.assert_array_equal(run(lambda a, b: R.concat([a, b, a], 1), y, y[:, :2]),
                                  np.concatenate([y, y[:, :2], y], 1))
    np.testing.assert_array_equal(run(lambda a, b: R.concat((a, b), -1), y, y[:, :, :3],
                                      shapes=[("n", 7, 8), ("n", 7, 3)]), np.concatenate([y, y[:, :, :3]], -1))
    parts = [f32(2, k + 1) for k in range(16)]
    np.testing.assert_array_equal(run(lambda *ts: R.concat(ts, axis=1), *parts), np.concatenate(parts, 1))
    bools = [f32(3) > 0, f32(2) > 0]
    np.testing.assert_array_equal(run(lambda a, b: R.concat([a, b]), *bools), np.concatenate(bools))


def test_take_embedding_and_gather():
    w = f32(10, 4)
    ids = rng.integers(-10, 10, (2, 3)).astype(np.int64)   # negative indices count from the end
    np.testing.assert_array_equal(run(lambda a, b: R.take(a, b, 0), w, ids), np.take(w, ids, 0))
    np.testing.assert_array_equal(run(lambda a, b: R.take(a, b, 1), w, (ids % 4).astype(np.int32)),
                                  np.take(w, ids % 4, 1))
    np.testing.assert_array_equal(run(R.take, w, ids), np.take(w, ids))
    np.testing.assert_array_equal(run(lambda a, b: R.take(a, b, 0), w, ids[0], shapes=[(10, 4), ("n",)]),
                                  np.take(w, ids[0], 0))
    x = f32(5, 6, 2)
    np.testing.assert_array_equal(run(lambda a, b: R.take(a, b, 1), x, ids % 6, shapes=[("n", 6, 2), (2, 3)]),
                                  np.take(x, ids % 6, 1))


def test_tril_triu():
    y = f32(2, 5, 6)
    np.testing.assert_array_equal(run(lambda a: R.tril(a, 1), y), np.tril(y, 1))
    np.testing.assert_array_equal(run(lambda a: R.triu(a, -2), y), np.triu(y, -2))
    np.testing.assert_array_equal(run(R.triu, y, shapes=[("n", 5, 6)]), np.triu(y))
    b = y > 0
    np.testing.assert_array_equal(run(R.tril, b), np.tril(b))


def test_concat_round_trips_through_mlir_text():
    x, y = relax.Var("x", ("n", 3)), relax.Var("y", ("n", 2))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            c = bb.emit(R.concat([x, y, x], axis=1))
            gv = bb.emit_output(R.broadcast_to(R.sum(c, 1, keepdims=True), ("n", 8)))
        bb.emit_func_output(gv)
    text = str(bb.get())
    assert "operandSegmentSizes = array<i32: 1, 1, 1, 0" in text
    mod = mlc.Module.parse(text)
    xa, ya = f32(5, 3), f32(5, 2)
    out = relax.VirtualMachine(relax.build(mod, "llvm"), mlc.cpu())["main"](xa, ya).numpy()
    want = np.broadcast_to(np.concatenate([xa, ya, xa], 1).sum(1, keepdims=True), (5, 8))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)  # (a row may sum to nearly 0)


def test_layout_errors():
    x = relax.Var("x", ("n", 3, 4))
    with pytest.raises(mlc.GraphError, match=r"\(n, 3, 4\) does not broadcast to \(n, 2, 4\)"):
        R.broadcast_to(x, ("n", 2, 4))
    with pytest.raises(mlc.GraphError, match="does not broadcast to"):
        R.broadcast_to(x, (3, 4))
    with pytest.raises(mlc.GraphError, match=r"expand_dims: axis \(4,\) must be one or more positions in \[-4, 4\)"):
        R.expand_dims(x, 4)
    with pytest.raises(mlc.GraphError, match="expand_dims: axis must be an int or a sequence"):
        R.expand_dims(x, None)
    with pytest.raises(mlc.GraphError, match="squeeze: dimension 1 of .* is 3, not 1"):
        R.squeeze(x, 1)
    with pytest.raises(mlc.GraphError, match="squeeze: dimension 0 of .* is n, not 1"):
        R.squeeze(x, 0)
    with pytest.raises(mlc.GraphError, match="axis 0 has the symbolic size n; only static axes"):
        R.strided_slice(x, [0], [0], [2])
    with pytest.raises(mlc.GraphError, match="stride 0 on axis 1"):
        R.strided_slice(x, [1], [0], [2], [0])
    with pytest.raises(mlc.GraphError, match="selects nothing from axis 2 of size 4"):
        R.strided_slice(x, [2], [3], [1])
    with pytest.raises(mlc.GraphError, match="one entry per sliced axis"):
        R.strided_slice(x, [1, 2], [0], [1])
    with pytest.raises(mlc.GraphError, match="begin must be an int"):
        R.strided_slice(x, [1], [0.5], [1])
    with pytest.raises(mlc.GraphError, match="concat: axis 0 must be static"):
        R.concat([x, x], 0)
    with pytest.raises(mlc.GraphError, match="concat: shapes differ off axis 1"):
        R.concat([x, relax.Var("y", ("n", 3, 5))], 1)
    with pytest.raises(mlc.GraphError, match="concat: arguments have different dtypes"):
        R.concat([x, relax.Var("z", ("n", 3, 4), "int32")], 1)
    with pytest.raises(mlc.GraphError, match="between 1 and 16 are supported"):
        R.concat([x] * 17, 1)
    with pytest.raises(mlc.GraphError, match="must be a list or tuple"):
        R.concat(x, 1)
    with pytest.raises(mlc.GraphError, match="take: indices must be int32 or int64"):
        R.take(x, relax.Var("f", (2,)), 1)
    with pytest.raises(mlc.GraphError, match=r"take: axis 3 is out of range"):
        R.take(x, relax.Var("i", (2,), "int64"), 3)
    with pytest.raises(mlc.GraphError, match="axis=None flattens"):
        R.take(x, relax.Var("i", (2,), "int64"))
    with pytest.raises(mlc.GraphError, match="tril: needs a tensor of rank 2"):
        R.tril(relax.Var("v", (4,)))


def test_power_of_negative_and_zero_bases_matches_numpy():
    """C's pow: a negative base with an integral exponent keeps its sign by parity, a
    fractional one gives NaN, and anything to the power 0 is 1 (the kernel does not rely on
    the build's exp(b * log(a)) expansion of math.powf, which gives NaN for a < 0)."""
    a = np.array([[-1.5, -2.0, 0.0, 0.0, 0.0, 3.0, -2.0, -0.5]], np.float32)
    b = np.array([[2.0, 3.0, 2.0, 0.0, -1.0, 0.5, 0.5, -3.0]], np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(run(R.power, a, b), np.power(a, b), rtol=1e-6)


def test_strided_slice_with_a_symbolic_end():
    """x[:seq] of a static buffer (a causal mask sliced to the sequence length): one build for
    every length; the end travels through the MLIR text as an array of ints and symbols (the
    buffer is small enough to be printed inline)."""
    x = relax.Var("x", ("seq", 4), "float32")
    buf = rng.standard_normal((4, 4)).astype(np.float32)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            m = bb.emit(R.strided_slice(relax.const(buf), [0], [0], ["seq"]))
            assert m.shape == ("seq", 4)
            out = bb.emit_output(bb.emit(R.add(x, m)))
        bb.emit_func_output(out)
    mod = bb.get()
    assert '"seq"' in mod.script()
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mlc.Module.parse(mod.script()), "llvm"), mlc.cpu())
    for seq in (1, 3, 4):
        xv = rng.standard_normal((seq, 4)).astype(np.float32)
        np.testing.assert_allclose(vm["main"](xv).numpy(), xv + buf[:seq], rtol=1e-6)
    with pytest.raises(mlc.GraphError, match="symbolic end .* needs begin 0 and stride 1"):
        R.strided_slice(x, [0], [1], ["seq"])


def test_split_into_sections_and_at_indices():
    """relax.op.split: the parts are strided_slice calls (the graph has no tuple values)."""
    x = relax.Var("x", ("n", 12), "float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            q, k, v = [bb.emit(p) for p in R.split(x, 3, axis=-1)]
            a, b = [bb.emit(p) for p in R.split(q, [1], axis=1)]
            out = bb.emit_output(R.add(R.multiply(k, v), R.concat([b, a], axis=1)))
        bb.emit_func_output(out)
    xa = f32(3, 12)
    got = relax.VirtualMachine(relax.build(bb.get(), "llvm"), mlc.cpu())["main"](xa).numpy()
    q, k, v = np.split(xa, 3, axis=1)
    # (k * v + c runs as one fused multiply-add: where the sum cancels to ~1e-4, its single
    # rounding differs from NumPy's two by ~1e-9 absolute, over rtol alone; the inputs depend
    # on which tests drew from ``rng`` before in this worker)
    np.testing.assert_allclose(got, k * v + np.concatenate([q[:, 1:], q[:, :1]], 1), rtol=1e-6, atol=1e-7)
    with pytest.raises(mlc.GraphError, match="5 sections do not divide axis 1 of size 12"):
        R.split(x, 5, axis=1)
    with pytest.raises(mlc.GraphError, match="axis 0 of .* is symbolic"):
        R.split(x, 2, axis=0)
    with pytest.raises(mlc.GraphError, match=r"indices \[8, 4\] must increase"):
        R.split(x, [8, 4], axis=1)
