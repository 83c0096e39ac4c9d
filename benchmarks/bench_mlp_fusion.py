"""Benchmark: the course MLP (64 -> 128 -> 10) before and after fusion vs NumPy and PyTorch.

The model is the course's ``MLPModel`` (graph ops on bound weights, examples/mlp_fusion.py)
built with ``mlc.graph.build`` at ``opt_level=0`` (one kernel per op: 7) and
``opt_level=2`` (FuseOps -> LegalizeOps -> FuseTIR: 2 kernels). Two times per variant:
the compiled function alone (``time_evaluator`` on the lowered ``main``) and the
``VirtualMachine`` call (argument checks and output allocation included). NumPy and
PyTorch (skipped if not installed) run the same math on one thread.

    python benchmarks/bench_mlp_fusion.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import mlc_mlir as mlc  # noqa: E402
from mlp_fusion import create_model  # noqa: E402


def best_of(fn, number: int, repeat: int = 5) -> float:
    """Seconds per call: the best of ``repeat`` runs of ``number`` calls."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w0": (rng.standard_normal((128, 64)) / 8).astype("float32"),
            "b0": rng.standard_normal(128).astype("float32"),
            "w1": (rng.standard_normal((10, 128)) / 11).astype("float32"),
            "b1": rng.standard_normal(10).astype("float32")}


def torch_time(p: dict[str, np.ndarray], x: np.ndarray, number: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    t = {k: torch.from_numpy(v) for k, v in p.items()}
    xt = torch.from_numpy(x)
    with torch.inference_mode():
        return best_of(lambda: torch.relu(xt @ t["w0"].T + t["b0"]) @ t["w1"].T + t["b1"], number)


def bench(batch: int, number: int) -> None:
    p = weights()
    model = create_model(p, batch=batch)
    x = np.random.default_rng(1).standard_normal((batch, 64)).astype("float32")
    ref = np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"]
    with threadpool_limits(limits=1):
        t_numpy = best_of(lambda: np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"], number)
    t_torch = torch_time(p, x, number)
    print(f"batch {batch}:  NumPy {t_numpy * 1e6:8.1f} us" +
          (f"   PyTorch {t_torch * 1e6:8.1f} us" if t_torch is not None else "   PyTorch not installed"))
    times = {}
    for level, label in ((0, "unfused (opt_level=0)"), (2, "fused   (opt_level=2)")):
        ex = mlc.graph.build(model, opt_level=level)
        vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
        out = vm["main"](x).numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
        buf = np.empty((batch, 10), "float32")
        kernel = ex.rt.time_evaluator("main", number=number, repeat=5)(x, buf).min
        call = best_of(lambda: vm["main"](x), number)
        times[level] = kernel
        line = (f"  {label}: {mlc.graph.count_kernels(ex.optimized)} kernels   compiled {kernel * 1e6:8.1f} us"
                f"   vm call {call * 1e6:8.1f} us   NumPy/compiled {t_numpy / kernel:5.2f}x")
        if t_torch is not None:
            line += f"   PyTorch/compiled {t_torch / kernel:5.2f}x"
        print(line)
    print(f"  fusion speed-up (compiled): {times[0] / times[2]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number = 50 if args.quick else 500
    for batch in (1, 64):
        bench(batch, number)


if __name__ == "__main__":
    main()
