"""Benchmark: the course's ch.6 GPU kernels against PyTorch CUDA, in the same process.

* vector add: bandwidth (3 x 4 bytes per element) vs ``torch.add(a, b, out=c)``;
* window sum with shared memory vs ``a[:-2] + a[1:-1] + a[2:]`` in PyTorch;
* matmul 1024 and 4096 float32, hand-scheduled (``cuda_schedules.matmul_shared``: register
  blocking + shared-memory tiles, cooperative vectorized fetch) vs ``torch.matmul`` with
  TF32 off (cuBLAS SGEMM), as a fraction of PyTorch's throughput.

Times are CUDA-event times per call (``rt.time_evaluator`` on ``mlc.cuda(0)``; PyTorch
timed the same way), best mean of ``--repeat`` runs. Needs a CUDA GPU, its driver,
NVIDIA's ``cuda-python`` (``pip install 'mlc-mlir[cuda]'``) and PyTorch with CUDA; without
them it says what is missing and exits with status 0 having measured nothing.

    python benchmarks/bench_cuda.py [--quick] [--tune-trials N]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from mlc_mlir.testing import cuda_schedules as cs

import mlc_mlir as mlc  # noqa: E402
from mlc_mlir.compiler.cuda import device_arch  # noqa: E402

#: matmul configurations: (tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k, vec)
MATMUL_CONFIGS = {"course 8x8/8x8/k8": (8, 8, 8, 8, 8, 4), "8x8/16x16/k8": (8, 8, 16, 16, 8, 4)}


def why_not() -> str | None:
    """Why the benchmark cannot run here, or ``None``."""
    if device_arch() is None:
        try:
            mlc.runtime.empty((1,), "float32", mlc.cuda(0))
        except mlc.MlcError as exc:
            return str(exc)
        return "no usable CUDA GPU"
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (pip install 'mlc-mlir[torch]'): nothing to compare with"
    if not torch.cuda.is_available():
        return "PyTorch has no CUDA device"
    return None


def torch_time(fn, number: int, repeat: int) -> float:
    """Seconds per call of ``fn`` with CUDA events: best mean over ``repeat`` runs."""
    import torch

    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / number)
    return best


def ours_time(rt, args, number: int, repeat: int) -> float:
    return rt.time_evaluator("main", mlc.cuda(0), number=number, repeat=repeat)(*args).min


def bench_vector_add(n: int, number: int, repeat: int) -> None:
    import torch

    rt = mlc.build(cs.vector_add(n, 256).mod, target="cuda")
    a, b = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    c = torch.empty(n, device="cuda")
    rt["main"](a, b, c)
    torch.testing.assert_close(c, a + b)
    ours = ours_time(rt, (a, b, c), number, repeat)
    ref = torch_time(lambda: torch.add(a, b, out=c), number, repeat)
    gbs = lambda t: 3 * n * 4 / t / 1e9  # noqa: E731
    print(f"vector add n={n}: mlc {gbs(ours):8.1f} GB/s   torch {gbs(ref):8.1f} GB/s   "
          f"ratio {ref / ours:5.2f}")


def bench_window_sum(n: int, number: int, repeat: int) -> None:
    import torch

    rt = mlc.build(cs.window_sum(n, 128).mod, target="cuda")
    a = torch.rand(n + 2, device="cuda")
    b = torch.empty(n, device="cuda")
    rt["main"](a, b)
    torch.testing.assert_close(b, a[:-2] + a[1:-1] + a[2:])
    ours = ours_time(rt, (a, b), number, repeat)
    ref = torch_time(lambda: torch.add(torch.add(a[:-2], a[1:-1]), a[2:], out=b), number, repeat)
    print(f"window sum n={n}: mlc {ours * 1e6:9.1f} us   torch {ref * 1e6:9.1f} us   ratio {ref / ours:5.2f}")


def bench_matmul(n: int, number: int, repeat: int) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    a, b = torch.rand(n, n, device="cuda"), torch.rand(n, n, device="cuda")
    c = torch.empty(n, n, device="cuda")
    ref = torch_time(lambda: torch.matmul(a, b, out=c), number, repeat)
    expect = (a.double() @ b.double()).float()
    flops = 2 * n**3
    print(f"matmul {n}: torch (cuBLAS, TF32 off) {flops / ref / 1e12:6.2f} TFLOP/s")
    for name, (ly, lx, by, bx, k, vec) in MATMUL_CONFIGS.items():
        sch = cs.matmul_shared(n, tile_local_y=ly, tile_local_x=lx, tile_block_y=by, tile_block_x=bx, tile_k=k,
                               vec=vec)
        rt = mlc.build(sch.mod, target="cuda")
        c.zero_()
        rt["main"](a, b, c)
        np.testing.assert_allclose(c.cpu().numpy(), expect.cpu().numpy(), rtol=1e-3, atol=1e-2 * n**0.5)
        ours = ours_time(rt, (a, b, c), number, repeat)
        print(f"  mlc {name:20s} {flops / ours / 1e12:6.2f} TFLOP/s   {ref / ours:6.1%} of torch")


def bench_matmul_tuned(n: int, trials: int, number: int, repeat: int) -> None:
    """``tune_tir(matmul n, "cuda")``: the tunable GPU rules searched for ``trials`` candidates,
    each measured on the GPU, the best one rebuilt and timed next to ``torch.matmul``."""
    import tempfile
    import time

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.rand(n, n, device="cuda"), torch.rand(n, n, device="cuda")
    c = torch.empty(n, n, device="cuda")
    ref = torch_time(lambda: torch.matmul(a, b, out=c), number, repeat)
    mod = cs.matmul(n)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work_dir:
        db = mlc.tune.tune_tir(mod, "cuda", max_trials_global=trials, num_trials_per_iter=min(trials, 8),
                               work_dir=work_dir, seed=0, progress=False)
        sch = mlc.tune.compile_tir(db, mod, "cuda")
    secs = time.perf_counter() - start
    rt = mlc.build(sch.mod, target="cuda")
    c.zero_()
    rt["main"](a, b, c)
    expect = (a.double() @ b.double()).float()
    np.testing.assert_allclose(c.cpu().numpy(), expect.cpu().numpy(), rtol=1e-3, atol=1e-2 * n**0.5)
    ours = ours_time(rt, (a, b, c), number, repeat)
    flops = 2 * n**3
    print(f"  mlc tuned ({trials} trials, {secs:.0f} s) {flops / ours / 1e12:6.2f} TFLOP/s   "
          f"{ref / ours:6.1%} of torch")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, few runs")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tune-trials", type=int, default=0,
                        help="also tune matmul 4096 (1024 with --quick) for this many candidates")
    args = parser.parse_args(argv)
    reason = why_not()
    if reason is not None:
        print(f"bench_cuda: not run: {reason}")
        return 0
    import torch

    print(f"GPU: {torch.cuda.get_device_name(0)} ({device_arch()}), torch {torch.__version__}")
    repeat = 2 if args.quick else args.repeat
    bench_vector_add(1 << (22 if args.quick else 26), 10 if args.quick else 50, repeat)
    bench_window_sum(1 << (20 if args.quick else 24), 10 if args.quick else 50, repeat)
    for n in (1024,) if args.quick else (1024, 4096):
        bench_matmul(n, 3 if args.quick else 10, repeat)
    if args.tune_trials:
        bench_matmul_tuned(1024 if args.quick else 4096, args.tune_trials, 3 if args.quick else 10, repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
