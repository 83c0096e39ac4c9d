"""Benchmark: MLPs through ``mlc.graph.build``, unfused vs fused + default schedules, vs NumPy.

Models (the course's ``MLPModel``, ``relu(x @ w0.T + b0) @ w1.T + b1``, weights bound as
constants): the digits MLP 64 -> 128 -> 10 at batch 1 and 64, and the course's MNIST MLP
784 -> 128 -> 10 at batch 64. Each is built at ``opt_level=0`` (one kernel per graph op,
no schedule) and at the default ``opt_level=2`` (FuseOps -> LegalizeOps -> FuseTIR, then
the default schedule rules of ``mlc_mlir.schedule.rules`` for the host target).

Two figures per build, each next to NumPy (and PyTorch), everything on one thread:
"compiled call" (``time_evaluator`` on the lowered ``main``: the compiled code alone) and
"call from Python" (``vm["main"](x)``: argument checks, output allocation, wrapping).

    python benchmarks/bench_mlp_fusion.py [--quick]
"""

from __future__ import annotations

import argparse
import ctypes

from bench_common import Figure, best_of, host_report, measure, torch_or_none

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import mlc_mlir as mlc  # noqa: E402
from mlc_mlir.graph import BlockBuilder, Var, op  # noqa: E402
from mlc_mlir.toolchain import openmp_lib  # noqa: E402


def create_model(params: dict[str, np.ndarray], batch: int) -> mlc.Module:
    """The course's ``MLPModel`` with constant weights (as examples/mlp_fusion.py)."""
    bb = BlockBuilder()
    x = Var("x", (batch, params["w0"].shape[1]), "float32")
    w0, b0 = mlc.graph.const(params["w0"]), mlc.graph.const(params["b0"])
    w1, b1 = mlc.graph.const(params["w1"]), mlc.graph.const(params["b1"])
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.matmul(x, op.permute_dims(w0)))
            lv1 = bb.emit(op.add(lv0, b0))
            lv2 = bb.emit(op.relu(lv1))
            lv3 = bb.emit(op.matmul(lv2, op.permute_dims(w1)))
            lv4 = bb.emit(op.add(lv3, b1))
            gv = bb.emit_output(lv4)
        bb.emit_func_output(gv)
    return bb.get()


def weights(din: int, hidden: int = 128, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w0": (rng.standard_normal((hidden, din)) / np.sqrt(din)).astype("float32"),
            "b0": rng.standard_normal(hidden).astype("float32"),
            "w1": (rng.standard_normal((10, hidden)) / np.sqrt(hidden)).astype("float32"),
            "b1": rng.standard_normal(10).astype("float32")}


def references(p: dict[str, np.ndarray], x: np.ndarray, number: int) -> dict:
    """NumPy and PyTorch timers of the same MLP on one thread (as ours: see main)."""
    cores = 1

    def np_timer() -> float:
        with threadpool_limits(limits=cores):
            return best_of(lambda: np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"], number)

    torch = torch_or_none()
    torch_timer = None
    if torch is not None:
        t = {k: torch.from_numpy(v) for k, v in p.items()}
        xt = torch.from_numpy(x)

        def torch_timer() -> float:
            torch.set_num_threads(cores)
            with torch.inference_mode():
                return best_of(lambda: torch.relu(xt @ t["w0"].T + t["b0"]) @ t["w1"].T + t["b1"], number)
    return {"NumPy": np_timer, "PyTorch": torch_timer}


def figures(name: str, din: int, batch: int, number: int) -> list[Figure]:
    p = weights(din)
    model = create_model(p, batch)
    x = np.random.default_rng(1).standard_normal((batch, din)).astype("float32")
    ref = np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"]
    refs = references(p, x, number)
    out = []
    for level, label in ((0, "opt_level=0 (unfused, unscheduled)"), (2, "opt_level=2 (fused + default rules)")):
        ex = mlc.graph.build(model, opt_level=level)
        vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
        np.testing.assert_allclose(vm["main"](x).numpy(), ref, rtol=1e-4, atol=1e-4)
        buf = np.empty((batch, 10), "float32")
        timer = ex.rt.time_evaluator("main", number=number, repeat=3)
        kernels = mlc.graph.count_kernels(ex.optimized)
        head = f"{name} b={batch} {label}, {kernels} kernels"
        out.append(Figure(f"{head}: compiled call", lambda t=timer, b=buf: t(x, b).min, refs))
        out.append(Figure(f"{head}: call from Python", lambda f=vm["main"]: best_of(lambda: f(x), number), refs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and repetitions")
    args = parser.parse_args()
    rounds, number = (3, 50) if args.quick else (7, 300)
    print(host_report())
    print("times: best of interleaved rounds, one thread; ratio = ours / reference (< 1: faster)\n")
    # one thread for everyone: the parallel loops of the default rules too (on a shared
    # 2-core machine two-thread figures of BLAS and OpenMP disturb each other)
    ctypes.CDLL(openmp_lib()).omp_set_num_threads(1)
    for name, din, batch in (("digits MLP 64-128-10", 64, 1), ("digits MLP 64-128-10", 64, 64),
                             ("course MLP 784-128-10", 784, 64)):
        measure(figures(name, din, batch, number if din == 64 else number // 5), rounds)


if __name__ == "__main__":
    main()
