"""Guarded reads (te.if_then_else padding), gather reads (data-dependent indices), topi pad.

Reads that are not indexing-map operands are ``tensor.extract`` of the whole tensor with
each index clamped into it (mlc_mlir/te/plan.py); these tests check the numerics against
NumPy through ``mlc.build`` (default schedule rules) and the errors that remain.
"""

import math
import warnings

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.errors import TEError
from mlc_mlir.te.plan import plan_compute
from mlc_mlir.topi.pad import pad


def build(*tensors, name="f"):
    return mlc.build(te.create_prim_func(list(tensors), name=name), "llvm")[name]


def body_ops(t):
    """(operand tensor names, extract tensor names) of the compute ``t``'s plan."""
    plan = plan_compute(t)
    return ([op.tensor.name for op in plan.operands if op.tensor is not None],
            [ex.read.tensor.name for ex in plan.extracts.values()])


# -- guarded reads ------------------------------------------------------------------------------

def test_guarded_read_compiles_as_clamped_extract(rng):
    n = 6
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n + 2, 4), lambda i, j: te.if_then_else(te.all(i >= 1, i < n + 1), A[i - 1, j], 0.0),
                   name="B")
    assert body_ops(B) == ([], ["A"])
    text = str(te.create_prim_func([A, B]))
    assert "tensor.extract" in text and "arith.maxsi" in text and "arith.minsi" in text
    a = rng.standard_normal((n, 4), dtype=np.float32)
    out = np.empty((n + 2, 4), np.float32)
    build(A, B)(a, out)
    np.testing.assert_array_equal(out, np.pad(a, ((1, 1), (0, 0))))


def test_in_bounds_reads_stay_operands():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: te.if_then_else(i > 2, A[i], A[7 - i]), name="B")
    assert body_ops(B) == (["A", "A"], [])


def test_guard_with_ampersand_and_te_any(rng):
    A = te.placeholder((5,), name="A")
    B = te.compute((7,), lambda i: te.if_then_else((i >= 1) & (i <= 5), A[i - 1], -1.0), name="B")
    C = te.compute((7,), lambda i: te.if_then_else(te.any(i < 1, i > 5), -1.0, A[i - 1]), name="C")
    a = rng.standard_normal(5, dtype=np.float32)
    ref = np.pad(a, 1, constant_values=-1.0)
    for t in (B, C):
        out = np.empty(7, np.float32)
        build(A, t)(a, out)
        np.testing.assert_array_equal(out, ref)


def test_unguarded_out_of_bounds_read_raises():
    A = te.placeholder((8,), name="A")
    with pytest.raises(TEError, match=r"\(i - 1\) reaches -1: out of bounds of A.*te.if_then_else"):
        te.compute((9,), lambda i: A[i - 1], name="C")
    # in the condition (always evaluated) a read is not guarded
    with pytest.raises(TEError, match="reaches 8: out of bounds"):
        te.compute((8,), lambda i: te.if_then_else(A[i + 1] > 0, 1.0, 0.0), name="C")
    # shared between a branch and an unguarded use: the unguarded use decides
    def shared(i):
        r = A[i + 1]
        return r + te.if_then_else(i < 7, r, 0.0)

    with pytest.raises(TEError, match="reaches 8"):
        te.compute((8,), shared, name="C")
    with pytest.raises(TEError, match="at least one condition"):
        te.all()
    with pytest.raises(TEError, match="bool conditions"):
        te.any(A[0])


def test_conv3x3_padding_1_with_guarded_read(rng):
    n, c, h, w, f = 2, 3, 6, 5, 4
    X = te.placeholder((n, c, h, w), name="X")
    W = te.placeholder((f, c, 3, 3), name="W")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")

    def body(b, o, y, x):
        iy, ix = y + ry - 1, x + rx - 1
        inside = te.all(iy >= 0, iy < h, ix >= 0, ix < w)
        return te.sum(te.if_then_else(inside, X[b, rc, iy, ix], 0.0) * W[o, rc, ry, rx], axis=[rc, ry, rx])

    Y = te.compute((n, f, h, w), body, name="conv")
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    wt = rng.standard_normal((f, c, 3, 3), dtype=np.float32)
    out = np.empty((n, f, h, w), np.float32)
    build(X, W, Y)(x, wt, out)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((n, f, h, w), np.float32)
    for dy in range(3):
        for dx in range(3):
            ref += np.einsum("bchw,oc->bohw", xp[:, :, dy:dy + h, dx:dx + w], wt[:, :, dy, dx])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# -- topi pad ----------------------------------------------------------------------------------

def test_pad_2d(rng):
    A = te.placeholder((3, 4), name="A")
    P = pad(A, (1, 2), (0, 3), pad_value=1.5)
    assert tuple(P.shape) == (4, 9)
    a = rng.standard_normal((3, 4), dtype=np.float32)
    out = np.empty((4, 9), np.float32)
    build(A, P)(a, out)
    np.testing.assert_array_equal(out, np.pad(a, ((1, 0), (2, 3)), constant_values=1.5))


def test_pad_4d_symbolic_batch_and_minus_inf(rng):
    X = te.placeholder(("n", 3, 5, 6), name="X")
    P = pad(X, (0, 0, 1, 1), pad_value=-math.inf)
    assert P.shape[0].name == "n" and tuple(P.shape[1:]) == (3, 7, 8)
    f = build(X, P)
    for n in (1, 3):
        x = rng.standard_normal((n, 3, 5, 6), dtype=np.float32)
        out = np.empty((n, 3, 7, 8), np.float32)
        f(x, out)
        np.testing.assert_array_equal(out, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf))


def test_pad_then_max_pool(rng):
    # max_pool2d with padding 1: pad with -inf, then a 3x3 window max of stride 2
    X = te.placeholder((1, 2, 5, 5), name="X")
    P = pad(X, (0, 0, 1, 1), pad_value=-math.inf)
    ry, rx = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    M = te.compute((1, 2, 3, 3), lambda b, c, y, x: te.max(P[b, c, y * 2 + ry, x * 2 + rx], axis=[ry, rx]),
                   name="pool")
    x = rng.standard_normal((1, 2, 5, 5), dtype=np.float32)
    out = np.empty((1, 2, 3, 3), np.float32)
    build(X, M)(x, out)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    ref = np.stack([xp[:, :, y:y + 3, x0:x0 + 3].max(axis=(2, 3)) for y in (0, 2, 4) for x0 in (0, 2, 4)], -1)
    np.testing.assert_array_equal(out, ref.reshape(1, 2, 3, 3))


def test_pad_int_and_errors(rng):
    A = te.placeholder((4,), "int32", name="A")
    P = pad(A, (2,), (1,), pad_value=-7)
    a = rng.integers(-50, 50, 4).astype(np.int32)
    out = np.empty(7, np.int32)
    build(A, P)(a, out)
    np.testing.assert_array_equal(out, np.pad(a, (2, 1), constant_values=-7))
    with pytest.raises(TEError, match="does not fit the int32"):
        pad(A, (1,), pad_value=-math.inf)
    with pytest.raises(TEError, match="one int per dimension"):
        pad(A, (1, 1))
    with pytest.raises(TEError, match="non-negative ints"):
        pad(A, (-1,))
    with pytest.raises(TEError, match="symbolic size 'n'"):
        pad(te.placeholder(("n",), name="B"), (1,))


# -- gather reads ------------------------------------------------------------------------------

@pytest.mark.parametrize("idx_dtype", ["int64", "int32"])
def test_embedding_gather(rng, idx_dtype):
    vocab, d = 10, 6
    W = te.placeholder((vocab, d), name="W")
    I = te.placeholder(("n",), idx_dtype, name="idx")
    E = te.compute((I.shape[0], d), lambda i, j: W[I[i], j], name="embed")
    assert body_ops(E) == (["idx"], ["W"])
    f = build(W, I, E)
    w = rng.standard_normal((vocab, d), dtype=np.float32)
    for n in (1, 7):
        idx = rng.integers(0, vocab, n).astype(idx_dtype)
        out = np.empty((n, d), np.float32)
        f(w, idx, out)
        np.testing.assert_array_equal(out, w[idx])


def test_gather_indices_out_of_range_are_clamped(rng):
    # documented: a data-dependent index outside [0, dim - 1] reads the nearest element
    W = te.placeholder((5,), name="W")
    I = te.placeholder((4,), "int64", name="I")
    G = te.compute((4,), lambda i: W[I[i] + 1], name="G")
    w = rng.standard_normal(5, dtype=np.float32)
    idx = np.array([-9, 0, 3, 100], np.int64)
    out = np.empty(4, np.float32)
    build(W, I, G)(w, idx, out)
    np.testing.assert_array_equal(out, w[np.clip(idx + 1, 0, 4)])


def test_integer_expression_indices(rng):
    A = te.placeholder((4, 6), name="A")
    B = te.compute((4, 6), lambda i, j: A[i, te.if_then_else(i == 0, 0, j)], name="B")
    C = te.compute((4, 3), lambda i, j: A[i, (i * j) % 6], name="C")
    a = rng.standard_normal((4, 6), dtype=np.float32)
    out_b, out_c = np.empty((4, 6), np.float32), np.empty((4, 3), np.float32)
    build(A, B)(a, out_b)
    build(A, C)(a, out_c)
    ref_b = a.copy()
    ref_b[0, :] = a[0, 0]
    np.testing.assert_array_equal(out_b, ref_b)
    ii, jj = np.meshgrid(range(4), range(3), indexing="ij")
    np.testing.assert_array_equal(out_c, a[ii, (ii * jj) % 6])


def test_take_along_rows_and_reduction_over_gather(rng):
    # index_select on axis 1 plus a sum over gathered values (a reduce axis inside the index)
    A = te.placeholder((3, 8), name="A")
    I = te.placeholder((5,), "int32", name="I")
    S = te.compute((3, 5), lambda r, k: A[r, I[k]], name="take")
    k = te.reduce_axis((0, 5), "k")
    T = te.compute((3,), lambda r: te.sum(A[r, I[k]], axis=k), name="tsum")
    a = rng.standard_normal((3, 8), dtype=np.float32)
    idx = rng.integers(0, 8, 5).astype(np.int32)
    out_s, out_t = np.empty((3, 5), np.float32), np.empty(3, np.float32)
    build(A, I, S)(a, idx, out_s)
    build(A, I, T)(a, idx, out_t)
    np.testing.assert_array_equal(out_s, a[:, idx])
    np.testing.assert_allclose(out_t, a[:, idx].sum(1), rtol=1e-5)


def test_gather_of_a_computed_tensor(rng):
    # the extract reads an intermediate compute: it is planned as a dependency
    A = te.placeholder((6,), name="A")
    I = te.placeholder((3,), "int64", name="I")
    D = te.compute((6,), lambda i: A[i] * 2.0, name="double")
    G = te.compute((3,), lambda i: D[I[i]], name="G")
    a = rng.standard_normal(6, dtype=np.float32)
    idx = np.array([5, 0, 2], np.int64)
    out = np.empty(3, np.float32)
    build(A, I, G)(a, idx, out)
    np.testing.assert_array_equal(out, a[idx] * 2)


# -- default schedule rules and graphs ---------------------------------------------------------

def test_default_schedule_rules_build_extract_reads(rng):
    # the rules may skip a program they cannot vectorize (a warning), never crash
    from mlc_mlir.schedule.rules import default_schedule
    X = te.placeholder((2, 8, 6, 6), name="X")
    W = te.placeholder((4, 8, 3, 3), name="W")
    P = pad(X, (0, 0, 1, 1))
    rc, ry, rx = te.reduce_axis((0, 8), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    Y = te.compute((2, 4, 6, 6), lambda b, o, y, x: te.sum(P[b, rc, y + ry, x + rx] * W[o, rc, ry, rx],
                                                           axis=[rc, ry, rx]), name="conv")
    mod = te.create_prim_func([X, W, Y], name="f")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f = mlc.build(default_schedule(mod, "llvm"), "llvm")["f"]
    x = rng.standard_normal((2, 8, 6, 6), dtype=np.float32)
    w = rng.standard_normal((4, 8, 3, 3), dtype=np.float32)
    out = np.empty((2, 4, 6, 6), np.float32)
    f(x, w, out)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = sum(np.einsum("bchw,oc->bohw", xp[:, :, dy:dy + 6, dx:dx + 6], w[:, :, dy, dx])
              for dy in range(3) for dx in range(3))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.filterwarnings("ignore:default schedule rules skipped")
def test_graph_embedding_then_padded_rows(rng):
    from mlc_mlir.graph import BlockBuilder, Var

    def embed(w, idx):
        return te.compute((idx.shape[0], w.shape[1]), lambda i, j: w[idx[i], j], name="embed")

    w, idx = Var("w", (10, 4), "float32"), Var("idx", ("n",), "int64")
    bb = BlockBuilder()
    with bb.function("main", [w, idx]):
        with bb.dataflow():
            lv0 = bb.emit_te(embed, w, idx)
            gv = bb.emit_output(bb.emit_te(pad, lv0, (0, 1), (0, 2), pad_value=-1.0))
        bb.emit_func_output(gv)
    vm = mlc.graph.VirtualMachine(mlc.graph.build(bb.get(), "llvm"))
    wt = rng.standard_normal((10, 4), dtype=np.float32)
    ids = np.array([3, 9, 0], np.int64)
    np.testing.assert_array_equal(vm["main"](wt, ids).numpy(), np.pad(wt[ids], ((0, 0), (1, 2)), constant_values=-1.0))
