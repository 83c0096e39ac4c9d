"""Benchmark: mm_relu 128 (naive and hand-scheduled) and matmul 1024 (1 and 2 threads) vs NumPy.

Prints GFLOP/s and the ratio to NumPy/OpenBLAS measured in the same process with the same
thread count. Schedules are the transform scripts in benchmarks/schedules/ and two
schedules written with the ``mlc.Schedule`` primitives (:func:`primitive_schedule`,
:func:`blocked_schedule`).

    python benchmarks/bench_matmul.py [--quick]
"""

from __future__ import annotations

import argparse
import ctypes
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import mlc_mlir as mlc
from mlc_mlir.build.passes import memref_abi
from mlc_mlir.build.pipeline import openmp_lib
from matmul_schedules import blocked_schedule, primitive_schedule

HERE = Path(__file__).resolve().parent


def matmul_text(n: int, relu: bool) -> str:
    t = f"tensor<{n}x{n}xf32>"
    relu_op = f"""
  %c = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
       ins(%y : {t}) outs(%C : {t}) attrs = {{mlc.block = "C"}} {{
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  }} -> {t}
  return %c : {t}"""
    dest = "%e" if relu else "%C"
    empty = f"%e = tensor.empty() : {t}" if relu else ""
    return f"""
func.func @main(%A: {t}, %B: {t}, %C: {t}) -> {t} attributes {{mlc.prim_func}} {{
  %zero = arith.constant 0.0 : f32
  {empty}
  %y0 = linalg.fill {{mlc.block_init = "Y"}} ins(%zero : f32) outs({dest} : {t}) -> {t}
  %y = linalg.matmul {{mlc.block = "Y"}} ins(%A, %B : {t}, {t}) outs(%y0 : {t}) -> {t}
  {relu_op if relu else f"return %y : {t}"}
}}"""


def scheduled(mod: mlc.Module, script: str) -> mlc.Module:
    """Apply a hand-written transform script to the memref-ABI form of ``mod``."""
    mod = mod.clone()
    memref_abi(mod)
    return mlc.schedule.apply_transform_script(mod, (HERE / "schedules" / script).read_text())


def gflops(n: int, seconds: float) -> float:
    return 2 * n**3 / seconds / 1e9


def numpy_time(a: np.ndarray, b: np.ndarray, relu: bool, threads: int, number: int) -> float:
    with threadpool_limits(limits=threads):
        f = (lambda: np.maximum(a @ b, 0)) if relu else (lambda: a @ b)
        f()
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            best = min(best, (time.perf_counter() - t0) / number)
    return best


def report(label: str, n: int, ours: float, ref: float) -> None:
    print(f"{label:<66} {ours * 1e3:9.3f} ms {gflops(n, ours):7.1f} GFLOP/s   "
          f"numpy {gflops(n, ref):7.1f} GFLOP/s   speed vs numpy {ref / ours:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    reps = 3 if args.quick else 10
    omp = ctypes.CDLL(openmp_lib())
    rng = np.random.default_rng(0)

    n = 128
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    mod = mlc.Module.parse(matmul_text(n, relu=True))
    ref = numpy_time(a, b, True, 1, 50 * reps)
    for label, m in [("mm_relu 128, naive build", mod),
                     ("mm_relu 128, schedules/mm_relu128.mlir", scheduled(mod, "mm_relu128.mlir"))]:
        rt = mlc.build(m)
        rt["main"](a, b, c)
        np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4)
        t = rt.time_evaluator("main", number=20 * reps, repeat=3)(a, b, c).min
        report(label + " (1 thread)", n, t, ref)

    n = 1024
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    mod = mlc.Module.parse(matmul_text(n, relu=False))
    for label, m in [("schedules/matmul1024.mlir", scheduled(mod, "matmul1024.mlir")),
                     ("mlc.Schedule primitives", primitive_schedule(mod).mod),
                     ("mlc.Schedule blocked + cache_read B", blocked_schedule(mod).mod)]:
        rt = mlc.build(m)
        c[:] = 0
        rt["main"](a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-3)
        times = {}
        for threads in (1, 2):
            omp.omp_set_num_threads(threads)
            times[threads] = rt.time_evaluator("main", number=reps, repeat=3)(a, b, c).min
            report(f"matmul 1024, {label}, {threads} thread(s)", n, times[threads],
                   numpy_time(a, b, False, threads, reps))
        print(f"two-thread speed-up ({label}): {times[1] / times[2]:.2f}x")


if __name__ == "__main__":
    main()
