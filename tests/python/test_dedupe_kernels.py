"""Tensor programs identical up to their name are compiled once (``dedupe-kernels``), and
a build reports its stage times at log level info."""

import logging

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir.graph import op

rng = np.random.default_rng(0)


def _chain(widths):
    """x -> [matmul(w_i) -> relu] for each width; the weights differ, the shapes repeat."""
    x = relax.Var("x", (2, widths[0]), "float32")
    ws = [rng.standard_normal((a, b)).astype(np.float32) * 0.3 for a, b in zip(widths, widths[1:])]
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for w in ws:
                h = bb.emit(op.relu(bb.emit(op.matmul(h, relax.const(w)))))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get(), ws


def _kernels(ex):
    text = ex.optimized.script()
    return sorted(line.split("@")[1].split("(")[0] for line in text.splitlines()
                  if "func.func" in line and "mlc.prim_func" in line)


def test_repeated_layers_compile_once_and_compute_the_same():
    mod, ws = _chain([16, 16, 16, 16, 8])  # three 16x16 layers, then a 16x8 one
    ex = mlc.graph.build(mod, "llvm")
    assert len(_kernels(ex)) == 2, _kernels(ex)  # one per distinct shape
    x = rng.standard_normal((2, 16)).astype(np.float32)
    ref = x
    for w in ws:
        ref = np.maximum(ref @ w, 0)
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_kernels_that_differ_are_kept_apart():
    mod, _ = _chain([16, 12, 8])
    ex = mlc.graph.build(mod, "llvm")
    assert len(_kernels(ex)) == 2, _kernels(ex)


def test_build_logs_its_stage_times_at_info(caplog):
    mod, _ = _chain([16, 16, 16])
    with caplog.at_level(logging.INFO, logger="mlc_mlir"):
        mlc.graph.build(mod, "llvm")
    lines = [r.getMessage() for r in caplog.records if r.name == "mlc_mlir.compiler.driver"]
    assert any(m.startswith("build: ") and "slowest stages:" in m for m in lines), lines
    assert any("dedupe-kernels: 1 tensor programs were copies" in r.getMessage() for r in caplog.records)


def test_kernels_stay_functions_of_their_own():
    """graph.build keeps each tensor program a function (no_inline calls): the vector stages
    and LLVM work one kernel at a time (on one inlined function holding a whole ResNet-18,
    hoisting alone took 87 s of a 130 s build). A kernel returning a view of its output
    (a mean reduction kept with its size-1 dim) writes into its output argument instead."""
    x = relax.Var("x", (2, 6, 4), "float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            m = bb.emit(op.mean(bb.emit(op.relu(x)), axis=2, keepdims=True))
            out = bb.emit_output(bb.emit(op.exp(m)))
        bb.emit_func_output(out)
    ex = mlc.graph.build(bb.get(), "llvm", opt_level=0)
    llvm = ex.get_source("llvm-dialect")
    kernels = [line for line in llvm.splitlines() if "llvm.func" in line and "private" in line and "@mean" in line]
    assert kernels and "llvm.call @mean" in llvm, llvm[:2000]
    xv = rng.standard_normal((2, 6, 4)).astype(np.float32)
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](xv).numpy()
    np.testing.assert_allclose(got, np.exp(np.maximum(xv, 0).mean(axis=2, keepdims=True)), rtol=1e-6)
