"""Benchmark: mm_relu 128 and matmul 1024 f32, each schedule next to NumPy (and PyTorch).

Prints the host (CPU model, vector features, the register tile the target gives), then one
line per figure (best of interleaved rounds): our compiled call (``time_evaluator``: arguments checked and marshalled
once, outside the timed loop), GFLOP/s, and each reference's time with the ratio
``ours / reference`` (below 1: faster). References run with the same thread count.

Schedules: none (``mlc.build`` alone), the course's ch.2 schedule, the default rules
(``mlc.schedule.rules.apply_rules``), the hand transform scripts of ``schedules/`` and the
``mlc.Schedule`` matmul schedules of ``matmul_schedules.py``, all with the register tile
of the host target.

    python benchmarks/bench_matmul.py [--quick]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import time

# Our OpenMP workers spin between back-to-back calls (Intel OpenMP's default 200 ms, as in a
# model calling kernels one after another; OpenBLAS's threads spin too); after timing ours the
# benchmark sleeps past that, so that NumPy is timed with our workers asleep (bench_common
# would set 0: then every call pays the wake-up of the workers, 20-40 us on this VM); and
# after timing NumPy (or PyTorch) on several threads it sleeps as long, so that their
# spinning BLAS threads do not hold a core while ours are timed (that made our two-thread
# matmul 1024 read as one-thread time in some rounds).
os.environ.setdefault("KMP_BLOCKTIME", "200")
WORKERS_ASLEEP_S = 0.25

from bench_common import Figure, best_of, host_report, lib_array, measure, torch_or_none  # noqa: E402

import numpy as np  # noqa: E402  (bench_common sets the OpenMP environment first)
from threadpoolctl import threadpool_limits  # noqa: E402

import mlc_mlir as mlc  # noqa: E402
from matmul_schedules import blocked_schedule, matmul_text, primitive_schedule, render_script  # noqa: E402
from mlc_mlir.compiler.passes import memref_abi  # noqa: E402
from mlc_mlir.toolchain import openmp_lib  # noqa: E402
from mlc_mlir.schedule.rules import apply_rules  # noqa: E402
from mlc_mlir.testing.programs import linear  # noqa: E402


def scripted(mod: mlc.Module, script: str, n: int) -> mlc.Module:
    """Apply a hand transform script (rendered for the host target and size ``n``) to the memref-ABI form."""
    mod = mod.clone()
    memref_abi(mod)
    return mlc.schedule.apply_transform_script(mod, render_script(script, n=n))


def ch2_schedule(mod: mlc.Module, jfactor: int = 32) -> mlc.Module:
    """The course's ch.2 schedule, its ``transform(mod, jfactor)`` exercise verbatim: split j
    by ``jfactor`` (32 is the exercise's fastest), reorder(j0, k, j1), reverse_compute_at C
    (no decompose_reduction: the course leaves that to the compiler, as TVM does)."""
    sch = mlc.Schedule(mod)
    b = sch.get_block("Y")
    i, j, k = sch.get_loops(b)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_block("C"), j0)
    return sch.mod


ODD_SHAPES = [(127, 127, 127), (100, 100, 100), (64, 72, 784), (257, 257, 257), (1000, 1000, 1000)]


def rules(mod: mlc.Module) -> mlc.Module:
    sch = mlc.Schedule(mod)
    apply_rules(sch)
    return sch.mod


def references(a, b, relu: bool, threads: int, number: int) -> dict:
    """NumPy (and PyTorch) timers for the same math on ``threads`` threads."""
    def settled(seconds: float) -> float:
        if threads > 1:
            time.sleep(WORKERS_ASLEEP_S)
        return seconds

    def np_timer():
        f = (lambda: np.maximum(a @ b, 0)) if relu else (lambda: a @ b)
        with threadpool_limits(limits=threads):
            return settled(best_of(f, number))

    torch = torch_or_none()
    torch_timer = None
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)

        def torch_timer():
            torch.set_num_threads(threads)
            with torch.inference_mode():
                return settled(best_of((lambda: torch.relu(ta @ tb)) if relu else (lambda: ta @ tb), number))
    return {"NumPy": np_timer, "PyTorch": torch_timer}


def kernel_figure(label, mod, args, ref, number, threads, omp, flops, refs) -> Figure:
    rt = mlc.build(mod)
    out = args[-1]
    out[...] = np.nan
    rt["main"](*args)
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3)
    timer = rt.time_evaluator("main", number=number, repeat=3)

    def ours() -> float:
        omp.omp_set_num_threads(threads)
        best = timer(*args).min
        if threads > 1:
            time.sleep(WORKERS_ASLEEP_S)
        return best
    return Figure(f"{label} ({threads} thread{'s' if threads > 1 else ''})", ours, refs, flops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and repetitions")
    args = parser.parse_args()
    rounds, reps = (3, 3) if args.quick else (7, 10)
    print(host_report())
    print("times: best of interleaved rounds; ratio = ours / reference (< 1: faster)\n")
    omp = ctypes.CDLL(openmp_lib())
    rng = np.random.default_rng(0)

    n = 128
    a, b = (lib_array(rng.standard_normal((n, n), dtype=np.float32)) for _ in range(2))
    c = lib_array(np.zeros((n, n), np.float32))
    ref = np.maximum(a @ b, 0)
    mod = mlc.Module.parse(matmul_text(n, relu=True))
    figs = []
    for label, m, threads in [("mm_relu 128, no schedule", mod, 1),
                              ("mm_relu 128, course ch.2 schedule", ch2_schedule(mod), 1),
                              ("mm_relu 128, default rules (apply_rules)", rules(mod), 2),
                              ("mm_relu 128, schedules/mm_relu128.mlir", scripted(mod, "mm_relu128.mlir", n), 1),
                              ("mm_relu 128, schedules/mm_relu128_parallel.mlir",
                               scripted(mod, "mm_relu128_parallel.mlir", n), 2)]:
        number = 5 * reps if label.endswith("no schedule") else 50 * reps
        figs.append(kernel_figure(label, m, (a, b, c), ref, number, threads, omp, 2 * n**3,
                                  references(a, b, True, threads, number)))
    measure(figs, rounds)

    # shapes whose column count no whole-vector tile divides: the rules peel the columns
    # (and the rows) so that every tile of the main loops is a full 6 x 16 one
    figs = []
    for m_, n_, k_ in ODD_SHAPES:
        a, b = (lib_array(rng.standard_normal(s, dtype=np.float32)) for s in [(m_, k_), (k_, n_)])
        c = lib_array(np.zeros((m_, n_), np.float32))
        number = max(1, int(2e7 / (m_ * n_ * k_))) * reps
        mod_ = linear(m_, n_, k_, relu=False, name="main")
        figs.append(kernel_figure(f"matmul {m_}x{n_}x{k_}, default rules", rules(mod_),
                                  (a, b, c), a @ b, number, 1, omp, 2 * m_ * n_ * k_,
                                  references(a, b, False, 1, number)))
    measure(figs, rounds)

    n = 1024
    a, b = (lib_array(rng.random((n, n), dtype=np.float32)) for _ in range(2))
    c = lib_array(np.zeros((n, n), np.float32))
    ref = a @ b
    mod = mlc.Module.parse(matmul_text(n, relu=False))
    figs = []
    for label, m in [("matmul 1024, schedules/matmul1024.mlir", scripted(mod, "matmul1024.mlir", n)),
                     ("matmul 1024, mlc.Schedule primitives", primitive_schedule(mod).mod),
                     ("matmul 1024, mlc.Schedule blocked + cache_read B", blocked_schedule(mod).mod),
                     ("matmul 1024, default rules (apply_rules)", rules(mod))]:
        for threads in (1, 2):
            figs.append(kernel_figure(label, m, (a, b, c), ref, reps, threads, omp, 2 * n**3,
                                      references(a, b, False, threads, reps)))
    measure(figs, max(3, rounds // 2))


if __name__ == "__main__":
    main()
