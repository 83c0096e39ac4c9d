"""Bool tensors: te placeholders and computes of dtype bool, and bool values of graphs.

A bool is one byte per element in a tensor (te's programs take ``tensor<...xi8>`` with the
``mlc.bool`` attribute; NumPy bool arrays pass as they are) and ``i1`` in registers; a
graph's bool values are ``tensor<...xi1>`` until the build stores them as bytes.
"""

import warnings

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.errors import ArgumentError, TEError
from mlc_mlir.graph import BlockBuilder, Var, const
from mlc_mlir.schedule.rules import default_schedule


def build(*tensors, name="f", schedule=False):
    mod = te.create_prim_func(list(tensors), name=name)
    if schedule:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a rule may skip a block; never crash
            mod = default_schedule(mod, "llvm")
    return mlc.build(mod, "llvm")[name]


def test_bool_tensors_are_bytes_in_the_program():
    M = te.placeholder((4,), "bool", name="M")
    B = te.compute((4,), lambda i: ~M[i], name="B")
    text = str(te.create_prim_func([M, B]))
    assert "tensor<4xi8> {mlc.bool" in text and "xi1>" not in text
    assert "arith.cmpi ne" in text and "arith.extui" in text
    f = build(M, B)
    assert "M: (4,)xi1" in repr(f)


@pytest.mark.parametrize("schedule", [False, True])
def test_comparisons_logic_and_selects(rng, schedule):
    A = te.placeholder(("n", 6), name="A")
    M = te.placeholder(("n", 6), "bool", name="M")
    B = te.compute(A.shape, lambda i, j: ((A[i, j] > 0) & ~M[i, j]) | (A[i, j] < -1), name="B")
    C = te.compute(A.shape, lambda i, j: te.if_then_else(B[i, j], M[i, j], ~M[i, j]), name="C")
    D = te.compute(A.shape, lambda i, j: C[i, j].astype("int32") + (A[i, j].astype("bool") == M[i, j]).astype("int32"),
                   name="D")
    f = build(A, M, B, C, D, schedule=schedule)
    for n in (1, 5):
        a = rng.standard_normal((n, 6), dtype=np.float32)
        a[0, 0] = 0.0
        m = rng.random((n, 6)) > 0.5
        b, c, d = np.empty((n, 6), bool), np.empty((n, 6), bool), np.empty((n, 6), np.int32)
        f(a, m, b, c, d)
        ref_b = ((a > 0) & ~m) | (a < -1)
        ref_c = np.where(ref_b, m, ~m)
        np.testing.assert_array_equal(b, ref_b)
        np.testing.assert_array_equal(c, ref_c)
        np.testing.assert_array_equal(d, ref_c.astype(np.int32) + ((a != 0) == m).astype(np.int32))


def test_masked_fill_softmax(rng):
    # attention's causal mask: bool mask -> masked_fill(-inf) -> softmax over the row
    n = 5
    S = te.placeholder((n, n), name="S")
    mask = te.compute((n, n), lambda i, j: j > i, name="mask")
    filled = te.compute((n, n), lambda i, j: te.if_then_else(mask[i, j], -np.inf, S[i, j]), name="filled")
    k = te.reduce_axis((0, n), "k")
    mx = te.compute((n,), lambda i: te.max(filled[i, k], axis=k), name="mx")
    e = te.compute((n, n), lambda i, j: te.exp(filled[i, j] - mx[i]), name="e")
    k2 = te.reduce_axis((0, n), "k2")
    s = te.compute((n,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
    P = te.compute((n, n), lambda i, j: e[i, j] / s[i], name="P")
    for schedule in (False, True):
        f = build(S, mask, P, schedule=schedule)
        x = rng.standard_normal((n, n), dtype=np.float32)
        m_out, p = np.empty((n, n), bool), np.empty((n, n), np.float32)
        f(x, m_out, p)
        ref_mask = np.triu(np.ones((n, n), bool), 1)
        z = np.where(ref_mask, -np.inf, x)
        z = np.exp(z - z.max(1, keepdims=True))
        np.testing.assert_array_equal(m_out, ref_mask)
        np.testing.assert_allclose(p, z / z.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_bool_errors():
    M = te.placeholder((4,), "bool", name="M")
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(TEError, match="te.sum of bool values"):
        te.compute((1,), lambda i: te.sum(M[k], axis=k), name="C")
    with pytest.raises(TEError, match="'\\+' of a bool value"):
        te.compute((4,), lambda i: M[i] + 1, name="C")
    f = build(M, te.compute((4,), lambda i: ~M[i], name="B"))
    with pytest.raises(ArgumentError, match="expected dtype bool, got int8"):
        f(np.zeros(4, np.int8), np.zeros(4, bool))


# -- graphs ------------------------------------------------------------------------------------

def te_mask(x, m):
    return te.compute(x.shape, lambda i, j: (x[i, j] > 0) & ~m[i, j], name="mask")


def te_fill(x, m):
    return te.compute(x.shape, lambda i, j: te.if_then_else(m[i, j], x[i, j], -1e9), name="fill")


def te_or(a, b):
    return te.compute(a.shape, lambda i, j: a[i, j] | b[i, j], name="or")


def bool_graph():
    """x: (n, 8) float32, m: (n, 8) bool -> (n, 8) bool; a bool value flows between kernels."""
    x, m = Var("x", ("n", 8), "float32"), Var("m", ("n", 8), "bool")
    bb = BlockBuilder()
    with bb.function("main", [x, m]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_mask, x, m)
            lv1 = bb.emit_te(te_or, lv0, m)
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    return bb.get()


def test_graph_types_bool_as_i1_and_the_program_boundary_casts():
    text = str(bool_graph())
    assert "tensor<?x8xi1>" in text and "mlc.bool_boundary" in text
    assert "builtin.unrealized_conversion_cast" in text


@pytest.mark.parametrize("opt_level", [0, 2])
def test_graph_bool_input_and_output(rng, opt_level):
    vm = mlc.graph.VirtualMachine(mlc.graph.build(bool_graph(), "llvm", opt_level=opt_level))
    for n in (1, 4):
        x = rng.standard_normal((n, 8), dtype=np.float32)
        m = rng.random((n, 8)) > 0.5
        out = vm["main"](x, m).numpy()
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, ((x > 0) & ~m) | m)
    with pytest.raises(ArgumentError, match="bool"):
        vm["main"](x, m.astype(np.int8))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_graph_bool_intermediate_and_constant(rng, opt_level):
    cm = rng.random((3, 8)) > 0.5
    x = Var("x", (3, 8), "float32")
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_mask, x, const(cm))      # bool constant in, bool out
            lv1 = bb.emit_te(te_fill, x, lv0)            # bool intermediate in, float out
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    vm = mlc.graph.VirtualMachine(mlc.graph.build(bb.get(), "llvm", opt_level=opt_level))
    a = rng.standard_normal((3, 8), dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](a).numpy(), np.where((a > 0) & ~cm, a, np.float32(-1e9)))
