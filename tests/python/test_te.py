"""Tensor expressions (mlc_mlir.te): IR structure, numerics through mlc.build, and errors."""

import numpy as np
import pytest
from mlir import ir

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.errors import TEError
from mlc_mlir.te.plan import plan_compute
from mlc_mlir.testing import filecheck


# -- helpers ------------------------------------------------------------------------------------

def linalg_ops(mod):
    """(op name, "mlc.block=..." or "mlc.block_init=...") of each linalg op, in order."""
    found = []

    def visit(op):
        if op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index"):
            attrs = op.attributes
            tag = next((f"{k}={attrs[k].value}" for k in ("mlc.block", "mlc.block_init") if k in attrs), None)
            found.append((op.name, tag))
        return ir.WalkResult.ADVANCE

    mod.mlir_module.operation.walk(visit)
    return found


def run(mod, name, *arrays):
    rt = mlc.build(mod, target="llvm")
    rt[name](*arrays)
    return arrays


def mm_relu_tensors(n=128):
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), "k")
    Y = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((n, n), lambda i, j: te.max(Y[i, j], 0), name="C")
    return A, B, Y, C


def te_matmul(A, B):
    n, m = A.shape[0], B.shape[1]
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")


def te_relu(A):
    return te.compute(A.shape, lambda *i: te.max(A(*i), 0), name="relu")


# -- structure ------------------------------------------------------------------------------------

def test_mm_relu_structure():
    A, B, _, C = mm_relu_tensors()
    mod = te.create_prim_func([A, B, C], name="mm_relu")
    assert isinstance(mod, mlc.Module)
    assert mod.functions == ["mm_relu"]
    assert linalg_ops(mod) == [
        ("linalg.fill", "mlc.block_init=Y"), ("linalg.generic", "mlc.block=Y"),
        ("linalg.generic", "mlc.block=C")]
    text = mod.script()
    assert "attributes {mlc.prim_func}" in text
    assert '{mlc.name = "A", mlc.shape = [128, 128]}' in text
    assert "tensor.empty() : tensor<128x128xf32>" in text
    assert '"reduction"' in text
    fn = mod["mm_relu"]
    assert str(fn.function_type) == ("(tensor<128x128xf32>, tensor<128x128xf32>, tensor<128x128xf32>)"
                                     " -> tensor<128x128xf32>")
    mod.verify()


def test_default_name_is_main_and_only_reachable_computes_are_emitted():
    A = te.placeholder((8,), name="A")
    unused = te.compute((8,), lambda i: A[i] * 3, name="unused")
    out = te.compute((8,), lambda i: A[i] + 1, name="out")
    mod = te.create_prim_func([A, out])
    assert mod.functions == ["main"]
    assert linalg_ops(mod) == [("linalg.generic", "mlc.block=out")]
    assert unused.name == "unused"


def test_matmul_internal_becomes_an_intermediate():
    A = te.placeholder((128, 128), name="A", dtype="float32")
    B = te.placeholder((128, 128), name="B", dtype="float32")
    D = te_relu(te_matmul(A, B))
    mod = te.create_prim_func([A, B, D])
    text = mod.script()
    assert text.count("tensor.empty") == 1
    assert [t for _, t in linalg_ops(mod)] == [
        "mlc.block_init=matmul", "mlc.block=matmul", "mlc.block=relu"]
    assert '{mlc.name = "relu", mlc.shape = [128, 128]}' in text


def test_listed_intermediate_is_written_into_its_argument():
    A, B, Y, C = mm_relu_tensors(16)
    mod = te.create_prim_func([A, B, Y, C])
    assert "tensor.empty" not in mod.script()
    assert str(mod["main"].function_type).endswith("-> (tensor<16x16xf32>, tensor<16x16xf32>)")


def test_dependency_order_and_unique_block_names():
    A = te.placeholder((4,), name="A")
    first = te.compute((4,), lambda i: A[i] + 1)
    second = te.compute((4,), lambda i: first[i] * 2)
    mod = te.create_prim_func([A, second])
    assert [t for _, t in linalg_ops(mod)] == ["mlc.block=compute", "mlc.block=compute_1"]


def test_symbolic_shapes_use_tensor_dim():
    X = te.placeholder((1, "m"), name="X")
    W = te.placeholder(("n", "m"), name="W")
    n = W.shape[0]
    assert isinstance(n, te.Var) and n.name == "n"
    k = te.reduce_axis((0, X.shape[1]), "k")
    Y = te.compute((1, n), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    Z = te.compute((1, "n"), lambda i, j: te.max(Y[i, j], 0.0), name="Z")
    text = te.create_prim_func([X, W, Z], name="f").script()
    filecheck(text, """
        CHECK: func.func @f(
        CHECK-SAME: %[[W:[^:]+]]: tensor<?x?xf32> {mlc.name = "W", mlc.shape = ["n", "m"]}
        CHECK: %[[N:.+]] = tensor.dim %[[W]], %{{.+}}
        CHECK: tensor.empty(%[[N]]) : tensor<1x?xf32>
    """)


def test_index_variables_lower_to_linalg_index():
    n = te.var("n")
    A = te.placeholder((n,), "int32", name="A")
    R = te.compute((n,), lambda i: i, name="R")
    assert R.dtype == "int32"
    text = te.create_prim_func([A, R]).script()
    assert "linalg.index 0 : index" in text and "arith.index_cast" in text


def test_expression_types_and_printing():
    A = te.placeholder((4, 4), "float32", name="A")
    i, j = te.var("i"), te.var("j")
    e = A[0, 1] * 2 + 1
    assert e.dtype == "float32" and str(e) == "A[0, 1] * 2.0 + 1.0"
    assert (A[0, 0] > 0).dtype == "bool"
    assert (i // 2 + j % 3).dtype == "int32"
    assert (i + 1.5).dtype == "float32"
    assert (i.astype("int64") + i).dtype == "int64"
    assert te.const(3, "float64").dtype == "float64"
    assert str(te.sum(A[0, 0], axis=te.reduce_axis((0, 4), "k"))) == "sum(A[0, 0], axis=[k])"


def test_placeholder_and_compute_attributes():
    A = te.placeholder((2, "n"), "float64", name="A")
    assert A.ndim == 2 and A.dtype == "float64" and A.shape[0] == 2 and A.shape[1].name == "n"
    C = te.compute(A.shape, lambda i, j: A[i, j].astype("float32"), name="C")
    assert C.dtype == "float32" and C.shape[1] is A.shape[1]
    assert "compute 'C'" in repr(C)


# -- numerics ------------------------------------------------------------------------------------

def test_mm_relu_matches_numpy(rng):
    A, B, _, C = mm_relu_tensors()
    mod = te.create_prim_func([A, B, C], name="mm_relu")
    a = rng.standard_normal((128, 128), dtype=np.float32)
    b = rng.standard_normal((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    run(mod, "mm_relu", a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_matmul_internal_matches_numpy(rng):
    A = te.placeholder((64, 32), name="A")
    B = te.placeholder((32, 48), name="B")
    D = te_relu(te_matmul(A, B))
    a = rng.standard_normal((64, 32), dtype=np.float32)
    b = rng.standard_normal((32, 48), dtype=np.float32)
    d = np.zeros((64, 48), np.float32)
    run(te.create_prim_func([A, B, D]), "main", a, b, d)
    np.testing.assert_allclose(d, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_linear0_and_relu0_symbolic_run_two_sizes(rng):
    X = te.placeholder((1, "m"), name="X")
    W = te.placeholder(("n", "m"), name="W")
    B = te.placeholder(("n",), name="B")
    k = te.reduce_axis((0, "m"), "k")
    Y = te.compute((1, "n"), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    Z = te.compute((1, "n"), lambda i, j: Y[i, j] + B[j], name="Z")
    linear0 = te.create_prim_func([X, W, B, Z], name="linear0")
    Xr = te.placeholder((1, "n"), name="X")
    relu0 = te.create_prim_func([Xr, te.compute((1, "n"), lambda i, j: te.max(Xr[i, j], 0), name="Y")],
                                name="relu0")
    rt_linear, rt_relu = mlc.build(linear0), mlc.build(relu0)
    for m, n in [(784, 128), (7, 5)]:
        x = rng.standard_normal((1, m), dtype=np.float32)
        w = rng.standard_normal((n, m), dtype=np.float32)
        b = rng.standard_normal((n,), dtype=np.float32)
        z, r = np.zeros((1, n), np.float32), np.zeros((1, n), np.float32)
        rt_linear["linear0"](x, w, b, z)
        rt_relu["relu0"](z, r)
        np.testing.assert_allclose(z, x @ w.T + b, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(r, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)


def test_broadcast_add(rng):
    A = te.placeholder((4, "n"), name="A")
    B = te.placeholder(("n",), name="B")
    C = te.compute(A.shape, lambda i, j: A[i, j] + B[j], name="C")
    rt = mlc.build(te.create_prim_func([A, B, C], name="add"))
    for n in (3, 17):
        a = rng.standard_normal((4, n), dtype=np.float32)
        b = rng.standard_normal((n,), dtype=np.float32)
        c = np.zeros((4, n), np.float32)
        rt["add"](a, b, c)
        np.testing.assert_allclose(c, a + b, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_max_and_min_reductions(rng, dtype):
    A = te.placeholder((6, 10), dtype, name="A")
    k = te.reduce_axis((0, 10), "k")
    M = te.compute((6,), lambda i: te.max(A[i, k], axis=k), name="M")
    N = te.compute((6,), lambda i: te.min(A[i, k], axis=k), name="N")
    mod = te.create_prim_func([A, M, N])
    a = (rng.standard_normal((6, 10)) * 100).astype(dtype)
    a[0] = -5  # all negative: the identity must be -inf / INT_MIN
    m, n = np.zeros(6, dtype), np.zeros(6, dtype)
    run(mod, "main", a, m, n)
    np.testing.assert_array_equal(m, a.max(axis=1))
    np.testing.assert_array_equal(n, a.min(axis=1))


def test_sum_over_two_axes_with_offset_and_zero_rank_output(rng):
    A = te.placeholder((5, 8, 9), name="A")
    k = te.reduce_axis((2, 8), "k")
    r = te.reduce_axis((0, 9), "r")
    S = te.compute((5,), lambda i: te.sum(A[i, k, r], axis=[k, r]), name="S")
    T = te.compute((), lambda: te.sum(A[0, k, r] * 2.0, axis=[k, r]), name="T")
    a = rng.standard_normal((5, 8, 9), dtype=np.float32)
    s, t = np.zeros(5, np.float32), np.zeros((), np.float32)
    run(te.create_prim_func([A, S, T]), "main", a, s, t)
    np.testing.assert_allclose(s, a[:, 2:, :].sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(t, 2 * a[0, 2:, :].sum(), rtol=1e-5)


def test_affine_indices(rng):
    A = te.placeholder((16, 16), name="A")
    T = te.compute((16, 16), lambda i, j: A[j, i], name="T")
    S = te.compute((8,), lambda i: A[2 * i + 1, 15 - i], name="S")
    U = te.compute((16, 4), lambda i, j: A[i // 2, j % 4 + 4 * (i % 2)], name="U")
    a = rng.standard_normal((16, 16), dtype=np.float32)
    t, s, u = np.zeros((16, 16), np.float32), np.zeros(8, np.float32), np.zeros((16, 4), np.float32)
    run(te.create_prim_func([A, T, S, U]), "main", a, t, s, u)
    idx = np.arange(16)
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(s, a[2 * np.arange(8) + 1, 15 - np.arange(8)])
    np.testing.assert_array_equal(u, a[idx[:, None] // 2, np.arange(4)[None, :] + 4 * (idx[:, None] % 2)])


def test_window_sum_needs_a_shape_operand(rng):
    A = te.placeholder((20,), name="A")
    k = te.reduce_axis((0, 5), "k")
    W = te.compute((16,), lambda i: te.sum(A[i + k], axis=k), name="W")
    mod = te.create_prim_func([A, W])
    assert "tensor.empty() : tensor<5xi8>" in mod.script()
    a = rng.standard_normal(20, dtype=np.float32)
    w = np.zeros(16, np.float32)
    run(mod, "main", a, w)
    np.testing.assert_allclose(w, np.convolve(a, np.ones(5, np.float32), "valid"), rtol=1e-5)


def test_reading_a_prefix_slices_the_tensor(rng):
    A = te.placeholder((128,), name="A")
    P = te.compute((64,), lambda i: A[i] * 2, name="P")
    n = te.var("n")
    Q = te.compute((n,), lambda i: A[i], name="Q")
    mod = te.create_prim_func([A, P])
    filecheck(mod.script(), """
        CHECK: func.func @{{.+}}(%[[A:[a-z0-9]+]]: tensor<128xf32>
        CHECK: tensor.extract_slice %[[A]][0] [64] [1]
    """)
    a = rng.standard_normal(128, dtype=np.float32)
    p = np.zeros(64, np.float32)
    run(mod, "main", a, p)
    np.testing.assert_array_equal(p, 2 * a[:64])
    q = np.zeros(10, np.float32)
    run(te.create_prim_func([A, Q]), "main", a, q)
    np.testing.assert_array_equal(q, a[:10])


def test_elementwise_math(rng):
    A = te.placeholder((64,), name="A")
    fns = {
        "exp": (te.exp, np.exp), "log": (lambda x: te.log(te.abs(x) + 1), lambda x: np.log(np.abs(x) + 1)),
        "sqrt": (lambda x: te.sqrt(te.abs(x)), lambda x: np.sqrt(np.abs(x))),
        "rsqrt": (lambda x: te.rsqrt(te.abs(x) + 1), lambda x: 1 / np.sqrt(np.abs(x) + 1)),
        "tanh": (te.tanh, np.tanh), "sigmoid": (te.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
        "abs": (te.abs, np.abs), "floor": (te.floor, np.floor), "ceil": (te.ceil, np.ceil),
        "sin": (te.sin, np.sin), "cos": (te.cos, np.cos), "neg": (lambda x: -x, np.negative),
        "round": (te.round, np.round),
        "power": (lambda x: te.power(te.abs(x), 1.5), lambda x: np.abs(x) ** 1.5),
        "div": (lambda x: x / 3 - 1 / (x * x + 1), lambda x: x / 3 - 1 / (x * x + 1)),
        "floordiv": (lambda x: x // 0.5, lambda x: x // 0.5), "mod": (lambda x: x % 0.7, lambda x: x % 0.7),
        "min": (lambda x: te.min(x, 0.25), lambda x: np.minimum(x, 0.25)),
    }
    outs = [te.compute((64,), lambda i, f=f: f(A[i]), name=name) for name, (f, _) in fns.items()]
    a = rng.standard_normal(64, dtype=np.float32) * 3
    arrays = [np.zeros(64, np.float32) for _ in outs]
    run(te.create_prim_func([A, *outs]), "main", a, *arrays)
    for (name, (_, ref)), got in zip(fns.items(), arrays):
        np.testing.assert_allclose(got, ref(a), rtol=2e-5, atol=2e-5, err_msg=name)


def test_integer_arithmetic_follows_floor_semantics(rng):
    A = te.placeholder((50,), "int32", name="A")
    B = te.placeholder((50,), "int32", name="B")
    ops = [lambda x, y: x // y, lambda x, y: x % y, lambda x, y: te.max(x, y) - te.min(x, y) * 2,
           lambda x, y: te.abs(x) + (-y), lambda x, y: x * y + 7]
    refs = [np.floor_divide, np.mod, lambda x, y: np.maximum(x, y) - np.minimum(x, y) * 2,
            lambda x, y: np.abs(x) - y, lambda x, y: x * y + 7]
    outs = [te.compute((50,), lambda i, f=f: f(A[i], B[i]), name=f"op{n}") for n, f in enumerate(ops)]
    a = rng.integers(-100, 100, 50).astype(np.int32)
    b = rng.integers(1, 9, 50).astype(np.int32) * rng.choice([-1, 1], 50).astype(np.int32)
    arrays = [np.zeros(50, np.int32) for _ in outs]
    run(te.create_prim_func([A, B, *outs]), "main", a, b, *arrays)
    for ref, got in zip(refs, arrays):
        np.testing.assert_array_equal(got, ref(a, b))


def test_conditions_casts_and_index_values(rng):
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    C = te.compute((n,), lambda i: te.if_then_else((A[i] > 0) & (i % 2 == 0) | (A[i] < -1), A[i], 0.0), name="C")
    D = te.compute((n,), lambda i: (A[i] * 10).astype("int64") + i, name="D")
    E = te.compute((n,), lambda i: i.astype("float64") / n, name="E")
    F = te.compute((n,), lambda i: te.if_then_else(~(A[i] >= 0), 1, 2).astype("int8"), name="F")
    a = rng.standard_normal(12, dtype=np.float32) * 2
    c, d, e, f = np.zeros(12, np.float32), np.zeros(12, np.int64), np.zeros(12, np.float64), np.zeros(12, np.int8)
    run(te.create_prim_func([A, C, D, E, F]), "main", a, c, d, e, f)
    idx = np.arange(12)
    np.testing.assert_array_equal(c, np.where((a > 0) & (idx % 2 == 0) | (a < -1), a, 0))
    np.testing.assert_array_equal(d, (a * 10).astype(np.int64) + idx)
    np.testing.assert_allclose(e, idx / 12)
    np.testing.assert_array_equal(f, np.where(a < 0, 1, 2))


def test_float16_and_mixed_precision(rng):
    A = te.placeholder((32,), "float16", name="A")
    k = te.reduce_axis((0, 32), "k")
    S = te.compute((1,), lambda i: te.sum(A[k].astype("float32"), axis=k), name="S")
    H = te.compute((32,), lambda i: A[i] * 2, name="H")
    a = rng.standard_normal(32).astype(np.float16)
    s, h = np.zeros(1, np.float32), np.zeros(32, np.float16)
    run(te.create_prim_func([A, S, H]), "main", a, s, h)
    np.testing.assert_allclose(s, a.astype(np.float32).sum(keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(h, a * 2)


def test_shared_subexpressions_and_repeated_reads(rng):
    A = te.placeholder((8, 8), name="A")

    def body(i, j):
        x = A[i, j] * A[j, i]
        return x * x + A[i, j]
    C = te.compute((8, 8), body, name="C")
    mod = te.create_prim_func([A, C])
    filecheck(mod.script(), """
        CHECK: func.func @{{.+}}(%[[A:[a-z0-9]+]]: tensor<8x8xf32>
        CHECK: ins(%[[A]], %[[A]] :
        CHECK-NOT: ins(%[[A]], %[[A]] :
    """)
    a = rng.standard_normal((8, 8), dtype=np.float32)
    c = np.zeros((8, 8), np.float32)
    run(mod, "main", a, c)
    np.testing.assert_allclose(c, (a * a.T) ** 2 + a, rtol=1e-5)


# -- errors --------------------------------------------------------------------------------------

def test_index_arity_mismatch():
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(TEError, match="rank 2 .* 1 indices"):
        te.compute((4,), lambda i: A[i], name="C")


@pytest.mark.parametrize("shape", [(4, 2.5), (0,), (-3,), (None,), "not an id", ((4,),), {"n": 1}])
def test_bad_shapes(shape):
    with pytest.raises(TEError, match="shape of placeholder 'A'"):
        te.placeholder(shape, name="A")


def test_unknown_dtype():
    with pytest.raises(TEError, match="unknown dtype of placeholder 'A' 'float8'"):
        te.placeholder((4,), "float8", name="A")
    with pytest.raises(TEError, match="unknown dtype"):
        te.placeholder((4,), "uint8", name="A")
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="unknown dtype"):
        A[0].astype("complex64")


def test_reduce_axis_outside_reduction():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(TEError, match="reduce axis 'k' is used outside a reduction"):
        te.compute((4,), lambda i: A[i, k], name="C")
    r = te.reduce_axis((0, 4), "r")
    with pytest.raises(TEError, match="reduce axis 'k' is used outside"):
        te.compute((4,), lambda i: te.sum(A[i, k] + A[i, r], axis=r), name="C")


def test_reduction_must_be_top_level():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(TEError, match="must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2, name="C")


def test_non_affine_indices_are_extract_reads():
    # data-dependent, product and symbolic indices compile as clamped tensor.extract reads
    # (tests/python/test_te_guarded_reads.py checks their numerics)
    A = te.placeholder((8,), name="A")
    I = te.placeholder((8,), "int32", name="I")
    n = te.var("n")
    for t in (te.compute((8,), lambda i: A[I[i]], name="G"),
              te.compute((2, 2), lambda i, j: A[i * j], name="G"),
              te.compute((n,), lambda i: A[n - 1 - i], name="G")):
        assert [ex.read.tensor.name for ex in plan_compute(t).extracts.values()] == ["A"]


def test_out_of_bounds_index():
    A = te.placeholder((8,), name="A")
    with pytest.raises(TEError, match="reaches 8: out of bounds of A"):
        te.compute((8,), lambda i: A[i + 1], name="C")
    with pytest.raises(TEError, match="reaches -1"):
        te.compute((8,), lambda i: A[i - 1], name="C")


def test_bad_argument_lists():
    A, B, Y, C = mm_relu_tensors(8)
    with pytest.raises(TEError, match="placeholder 'B' is read by compute 'Y' but is not in the argument list"):
        te.create_prim_func([A, C])
    with pytest.raises(TEError, match="no output"):
        te.create_prim_func([A, B])
    with pytest.raises(TEError, match="placeholder 'B' comes after the output 'C'"):
        te.create_prim_func([A, C, B])
    with pytest.raises(TEError, match="listed twice"):
        te.create_prim_func([A, B, C, C])
    with pytest.raises(TEError, match="not a te tensor"):
        te.create_prim_func([A, B, np.zeros(3)])
    with pytest.raises(TEError, match="non-empty list"):
        te.create_prim_func([])
    with pytest.raises(TEError, match="name must be a non-empty string"):
        te.create_prim_func([A, B, C], name="")


def test_symbolic_size_missing_from_arguments():
    A = te.placeholder((4,), name="A")
    n = te.var("n")
    C = te.compute((n,), lambda i: i.astype("float32"), name="C")
    D = te.compute((4,), lambda i: A[i] + C[0], name="D")
    with pytest.raises(TEError, match="symbolic size 'n' of compute 'C' is not a dimension of any argument"):
        te.create_prim_func([A, D])


def test_bad_expressions():
    A = te.placeholder((4,), name="A")
    I = te.placeholder((4,), "int32", name="I")
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(TEError, match="ambiguous"):
        te.compute((4,), lambda i: I[i] / 2, name="C")
    with pytest.raises(TEError, match="no Python truth value"):
        te.compute((4,), lambda i: A[i] if A[i] > 0 else 0.0, name="C")
    with pytest.raises(TEError, match="te.sum of bool values"):
        te.compute((1,), lambda i: te.sum(A[k] > 0, axis=k), name="C")
    with pytest.raises(TEError, match="te.exp expects a float"):
        te.exp(I[0])
    with pytest.raises(TEError, match="needs axis="):
        te.sum(A[0])
    with pytest.raises(TEError, match="not a reduce axis"):
        te.compute((4,), lambda i: te.sum(A[i], axis=i), name="C")
    with pytest.raises(TEError, match="fcompute takes 1 axes"):
        te.compute((4, 4), lambda i: A[i], name="C")
    with pytest.raises(TEError, match="slicing is not supported"):
        A[0:2]
    with pytest.raises(TEError, match="must be integer expressions"):
        A[A[0]]
    with pytest.raises(TEError, match="not a scalar expression"):
        te.compute((4,), lambda i: A + 1, name="C")
    with pytest.raises(TEError, match="several outputs"):
        te.compute((4,), lambda i: (A[i], A[i]), name="C")
    with pytest.raises(TEError, match="empty range"):
        te.reduce_axis((4, 4), "k")
    with pytest.raises(TEError, match="lower bound must be 0"):
        te.reduce_axis((1, "n"), "k")


def test_returning_a_tensor_or_bad_values():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="index it first"):
        te.compute((4,), lambda i: A, name="C")
    with pytest.raises(TEError, match="cannot use str"):
        te.compute((4,), lambda i: "x", name="C")
    with pytest.raises(TEError, match="does not fit in int8"):
        te.compute((4,), lambda i: te.placeholder((4,), "int8", name="B")[i] + 1000, name="C")


# -- course idioms ------------------------------------------------------------------------------

def test_symbolic_shapes_compare_by_name_and_axes_reuse(rng):
    A = te.placeholder(("n", "k"), name="A")
    B = te.placeholder(("k", "m"), name="B")
    assert A.shape[1] == B.shape[0] and A.shape[0] != B.shape[1]
    k = te.reduce_axis((0, A.shape[1]), name="k")
    MM = te.compute((A.shape[0], B.shape[1]), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="mm")
    # the same reduce axis may serve another compute
    RS = te.compute((A.shape[0],), lambda i, A=A: te.sum(A[i, k], axis=k), name="rowsum")
    rt = mlc.build(te.create_prim_func([A, B, MM, RS], name="f"))
    for n, kk, m in [(3, 5, 2), (8, 1, 9)]:
        a = rng.standard_normal((n, kk), dtype=np.float32)
        b = rng.standard_normal((kk, m), dtype=np.float32)
        mm, rs = np.zeros((n, m), np.float32), np.zeros(n, np.float32)
        rt["f"](a, b, mm, rs)
        np.testing.assert_allclose(mm, a @ b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rs, a.sum(axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int64", "float64"])
def test_small_and_wide_types(rng, dtype):
    A = te.placeholder((10,), dtype, name="A")
    C = te.compute((10,), lambda i: A[i] * 3 - te.const(2, dtype) + A[9 - i], name="C")
    a = (rng.standard_normal(10) * 10).astype(dtype)
    c = np.zeros(10, dtype)
    run(te.create_prim_func([A, C]), "main", a, c)
    np.testing.assert_array_equal(c, a * 3 - 2 + a[::-1])
