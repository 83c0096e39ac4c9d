"""Programs the default rules' schedules are pinned on (test_rules_golden.py): the course's
kernels (its MLP through the graph optimizations too), the large and the odd-sized
contractions, ``x @ w.T``, the row reductions.

``PROGRAMS`` maps a name to a function that builds the program (a fresh Module each call).
"""

from __future__ import annotations

from collections.abc import Callable

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.graph.transform.optimize import optimize

__all__ = ["PROGRAMS", "TARGETS"]

#: the targets the schedules are recorded for (AVX2's register file, one and two cores)
TARGETS = ("llvm -mcpu=haswell -num-cores=1", "llvm -mcpu=haswell -num-cores=2")


def _mm(m: int, n: int, k: int, *, relu: bool, name: str) -> mlc.Module:
    A, B = te.placeholder((m, k), name="A"), te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    Y = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="Y")
    if not relu:
        return te.create_prim_func([A, B, Y], name=name)
    C = te.compute((m, n), lambda i, j: te.max(Y[i, j], 0.0), name="C")
    return te.create_prim_func([A, B, C], name=name)


def _linear(m: int | str, n: int, k: int, *, transposed: bool, relu: bool, name: str) -> mlc.Module:
    """``x @ w.T + b`` (``w`` of shape (n, k), the course's ``nn.Linear``) or, with the
    weights folded (``FoldConstant``), ``x @ w + b`` (``w`` of shape (k, n)); relu or not,
    in one epilogue block as FuseTIR gives."""
    x = te.placeholder((m, k), name="x")
    w = te.placeholder((n, k) if transposed else (k, n), name="w")
    b = te.placeholder((n,), name="b")
    r = te.reduce_axis((0, k), name="k")
    Y = te.compute((m, n), lambda i, j: te.sum(x[i, r] * (w[j, r] if transposed else w[r, j]), axis=r), name="Y")
    if relu:  # (one epilogue block, as FuseTIR gives)
        Z = te.compute((m, n), lambda i, j: te.max(Y[i, j] + b[j], 0.0), name="Z")
    else:
        Z = te.compute((m, n), lambda i, j: Y[i, j] + b[j], name="Z")
    return te.create_prim_func([x, w, b, Z], name=name)


def _batch_matmul() -> mlc.Module:
    A, B = te.placeholder((4, 64, 48), name="A"), te.placeholder((4, 48, 96), name="B")
    r = te.reduce_axis((0, 48), name="k")
    Y = te.compute((4, 64, 96), lambda b, i, j: te.sum(A[b, i, r] * B[b, r, j], axis=r), name="Y")
    return te.create_prim_func([A, B, Y], name="bmm")


def _softmax(rows: int, cols: int) -> mlc.Module:
    x = te.placeholder((rows, cols), name="x")
    return te.create_prim_func([x, topi.nn.softmax(x)], name="softmax")


def _layer_norm(rows: int, cols: int) -> mlc.Module:
    x = te.placeholder((rows, cols), name="x")
    g, b = te.placeholder((cols,), name="g"), te.placeholder((cols,), name="b")
    return te.create_prim_func([x, g, b, topi.nn.layer_norm(x, g, b)], name="layer_norm")


def _ewise(rows: int, cols: int) -> mlc.Module:
    a, b = te.placeholder((rows, cols), name="a"), te.placeholder((rows, cols), name="b")
    c = te.compute((rows, cols), lambda i, j: te.max(a[i, j] + b[i, j], 0.0), name="C")
    return te.create_prim_func([a, b, c], name="add_relu")


def _course_mlp(batch: int, *, folded: bool) -> mlc.Module:
    """The course's MLP 784-128-10 as graph ops, optimized as ``graph.build`` does
    (FuseOps, LegalizeOps, FuseTIR): its two fused kernels, ``x @ w.T`` (``w`` of shape
    (out, in)), or with ``folded`` ``x @ w`` (``w`` laid out (in, out), as FoldConstant gives
    it for bound weights; parameters here, so that no constant's name depends on what was
    built before)."""
    x = Var("x", (batch, 784), "float32")
    b0, b1 = Var("b0", (128,), "float32"), Var("b1", (10,), "float32")
    w0 = Var("w0", (784, 128) if folded else (128, 784), "float32")
    w1 = Var("w1", (128, 10) if folded else (10, 128), "float32")
    bb = BlockBuilder()
    with bb.function("main", [x, w0, w1, b0, b1]):
        with bb.dataflow():
            h = bb.emit(op.relu(op.add(op.matmul(x, w0 if folded else op.permute_dims(w0)), b0)))
            out = bb.emit_output(op.add(op.matmul(h, w1 if folded else op.permute_dims(w1)), b1))
        bb.emit_func_output(out)
    return optimize(bb.get())


PROGRAMS: dict[str, Callable[[], mlc.Module]] = {
    "mm_relu_128": lambda: _mm(128, 128, 128, relu=True, name="mm_relu"),
    "matmul_1024": lambda: _mm(1024, 1024, 1024, relu=False, name="matmul"),
    "matmul_1000": lambda: _mm(1000, 1000, 1000, relu=False, name="matmul"),
    "mm_127": lambda: _mm(127, 127, 127, relu=False, name="mm"),
    "mm_relu_6x64": lambda: _mm(6, 64, 40, relu=True, name="mm_relu"),
    "course_mlp_b1": lambda: _course_mlp(1, folded=False),
    "course_mlp_b64": lambda: _course_mlp(64, folded=False),
    "course_mlp_folded_b1": lambda: _course_mlp(1, folded=True),
    "course_mlp_folded_b64": lambda: _course_mlp(64, folded=True),
    "mlp_linear0_b1": lambda: _linear(1, 128, 784, transposed=True, relu=True, name="linear0"),
    "mlp_linear0_b64": lambda: _linear(64, 128, 784, transposed=True, relu=True, name="linear0"),
    "mlp_linear1_b64": lambda: _linear(64, 10, 128, transposed=True, relu=False, name="linear1"),
    "mlp_linear0_folded_b1": lambda: _linear(1, 128, 784, transposed=False, relu=True, name="linear0"),
    "mlp_linear0_folded_b64": lambda: _linear(64, 128, 784, transposed=False, relu=True, name="linear0"),
    "mlp_linear1_folded_b64": lambda: _linear(64, 10, 128, transposed=False, relu=False, name="linear1"),
    "linear_wT_96x256x512": lambda: _linear(96, 256, 512, transposed=True, relu=False, name="linear"),
    "linear_symbolic_batch": lambda: _linear("n", 128, 64, transposed=False, relu=True, name="linear"),
    "batch_matmul": _batch_matmul,
    "softmax_64x128": lambda: _softmax(64, 128),
    "softmax_512x1024": lambda: _softmax(512, 1024),
    "layer_norm_64x256": lambda: _layer_norm(64, 256),
    "add_relu_512x512": lambda: _ewise(512, 512),
}
