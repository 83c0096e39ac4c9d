"""A tensor program that only reshapes is called as a view of its input in a CPU graph build
(Relax's RewriteDataflowReshape): attention's ``(b * h, s, s) -> (b, h, s, s)`` between its
batched matmul and its softmax no longer copies the scores. Recognition is exact (every
position checked); results equal NumPy."""

import re

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.context import mlc_context
from mlc_mlir.graph import op
from mlc_mlir.graph.transform.reshape_view import reshape_of


def _only_func(mod: mlc.Module):
    with mlc_context():
        funcs = [o for o in mod.mlir_module.body.operations if o.operation.name == "func.func"]
        assert len(funcs) == 1
        return funcs[0], reshape_of(funcs[0])


def _program(fn, shape=(6, 4, 5)) -> mlc.Module:
    a = te.placeholder(shape, "float32", name="a")
    return te.create_prim_func([a, fn(a)])


def test_reshapes_are_recognized():
    for new in [(24, 5), (2, 3, 4, 5), (120,), (5, 24), (3, 2, 20)]:
        _, types = _only_func(_program(lambda a, new=new: topi.reshape(a, new)))
        assert types is not None, new
        assert list(types[0].shape) == [6, 4, 5] and list(types[1].shape) == list(new)


def test_copies_that_are_not_reshapes_are_not():
    _, types = _only_func(_program(lambda a: topi.transpose(a, (1, 0, 2))))
    assert types is None  # a permutation moves elements
    _, types = _only_func(_program(lambda a: topi.nn.relu(a)))
    assert types is None  # computes
    # every position but the last row-major one is a reshape's: still not one
    a = te.placeholder((4, 6), "float32", name="a")
    b = te.compute((6, 4), lambda i, j: a[(i * 4 + j) // 6, (i * 4 + j + (i * 4 + j) // 23) % 6], name="b")
    _, types = _only_func(te.create_prim_func([a, b]))
    assert types is None


def _attention_scores(heads: int = 3, seq: int = 8, dim: int = 4, batch: int = 2):
    """(b * h, s, d) @ (b * h, d, s) -> reshape (b, h, s, s) -> softmax -> reshape (b * h, s, s)
    @ v: the reshape around the softmax is left unfused; the graph returns the last matmul."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((batch * heads, seq, dim)).astype("float32")
    k = rng.standard_normal((batch * heads, dim, seq)).astype("float32")
    v = rng.standard_normal((batch * heads, seq, dim)).astype("float32")
    bb = mlc.graph.BlockBuilder()
    xq = mlc.graph.Var("q", q.shape, "float32")
    with bb.function("main", [xq]):
        with bb.dataflow():
            s = bb.emit(op.matmul(xq, mlc.graph.const(k)))
            s4 = bb.emit(op.reshape(s, (batch, heads, seq, seq)))
            p = bb.emit(op.softmax(s4, -1))
            p3 = bb.emit(op.reshape(p, (batch * heads, seq, seq)))
            out = bb.emit_output(bb.emit(op.matmul(p3, mlc.graph.const(v))))
        bb.emit_func_output(out)
    scores = (q @ k).reshape(batch, heads, seq, seq)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    ref = (e / e.sum(-1, keepdims=True)).reshape(batch * heads, seq, seq) @ v
    return bb.get(), q, ref


def _reshape_calls(ex) -> int:
    return len(re.findall(r"call @\w*reshape\w*\(", ex.get_source("mlir")))


def test_graph_calls_reshapes_as_views():
    mod, q, ref = _attention_scores()
    ex = mlc.graph.build(mod, "llvm")
    out = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](q).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    optimized = ex.optimized.script()
    assert "mlc.reshape_view" in optimized  # the lone reshape kernel was recognized...
    assert _reshape_calls(ex) == 0  # ...and no call copies through it
    assert "tensor.expand_shape" in ex.get_source("mlir")


def test_reshape_result_of_the_graph_stays_a_copy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 10)).astype("float32")
    w = rng.standard_normal((10, 12)).astype("float32")
    bb = mlc.graph.BlockBuilder()
    xv = mlc.graph.Var("x", x.shape, "float32")
    with bb.function("main", [xv]):
        with bb.dataflow():
            y = bb.emit(op.matmul(xv, mlc.graph.const(w)))
            out = bb.emit_output(bb.emit(op.reshape(y, (3, 2, 4, 3))))
        bb.emit_func_output(out)
    ex = mlc.graph.build(bb.get(), "llvm")
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy()
    np.testing.assert_allclose(got, (x @ w).reshape(3, 2, 4, 3), rtol=1e-5, atol=1e-5)


def test_reshape_of_a_graph_input_is_a_view_of_it():
    # the view's buffer is the caller's array: a C-ordered one as it is, a Fortran-ordered one
    # as the VM passes it (a contiguous copy); both equal NumPy
    bb = mlc.graph.BlockBuilder()
    xv = mlc.graph.Var("x", (6, 32), "float32")
    with bb.function("main", [xv]):
        with bb.dataflow():
            r = bb.emit(op.reshape(xv, (2, 3, 32)))
            out = bb.emit_output(bb.emit(op.softmax(r, -1)))
        bb.emit_func_output(out)
    ex = mlc.graph.build(bb.get(), "llvm")
    assert _reshape_calls(ex) == 0
    x = np.random.default_rng(2).standard_normal((6, 32)).astype("float32")
    e = np.exp(x - x.max(-1, keepdims=True))
    ref = (e / e.sum(-1, keepdims=True)).reshape(2, 3, 32)
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    for arr in (x, np.asfortranarray(x)):
        np.testing.assert_allclose(vm["main"](arr).numpy(), ref, rtol=1e-5, atol=1e-6)
