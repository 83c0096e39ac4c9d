"""A GPT-2 block end to end: LayerNorm, fused qkv Linear, ``split``, multi-head causal
attention (``masked_fill(-inf)`` from a ``tril`` buffer, softmax, batched matmuls), the
GELU-tanh MLP and residuals, exported with ``torch.export`` (a dynamic sequence length)
and through ``torch.fx`` (``x.size()`` arithmetic; a tracer that proxies buffers, so the
mask slice ``bias[:, :, :T, :T]`` is a graph node), built, run and compared with torch.

Weights are random and seeded. One build serves every sequence length below the block
size (``torch.export.Dim("seq")`` becomes the graph's symbolic dimension ``seq``).

Run: python examples/gpt2_block.py [--d 256] [--heads 4] [--seq 64]
Needs torch (``pip install mlc-mlir[torch]``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch.export import Dim

import mlc_mlir as mlc
from mlc_mlir.testing import models


def median_ms(fn, repeat: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def rel_diff(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(out - ref).max() / np.abs(ref).max())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=256, help="embedding width")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64, help="sequence length (the block size is twice it)")
    args = parser.parse_args()

    model = models.seeded(models.GPT2Block(args.d, args.heads, block_size=2 * args.seq)).eval()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, args.seq, args.d, generator=g)

    start = time.perf_counter()
    ep = torch.export.export(model, (x,), dynamic_shapes={"x": {1: Dim("seq", min=2, max=2 * args.seq - 1)}})
    ex = mlc.graph.build(mlc.frontend.from_exported_program(ep), "llvm")
    built = time.perf_counter() - start
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())

    worst = 0.0
    for seq in (args.seq, args.seq // 2):
        xs = torch.randn(1, seq, args.d, generator=g)
        with torch.no_grad():
            worst = max(worst, rel_diff(vm["main"](xs.numpy()).numpy(), model(xs).numpy()))

    fx_mod = mlc.frontend.from_fx(models.fx_trace(model), input_shapes=[(1, args.seq, args.d)])
    fx_vm = mlc.graph.VirtualMachine(mlc.graph.build(fx_mod, "llvm"), mlc.cpu())
    with torch.no_grad():
        worst = max(worst, rel_diff(fx_vm["main"](x.numpy()).numpy(), model(x).numpy()))

    ours = median_ms(lambda: vm["main"](x.numpy()))
    with torch.no_grad():
        eager = median_ms(lambda: model(x))
    print(f"GPT-2 block d={args.d}, {args.heads} heads, seq {args.seq} (dynamic 2..{2 * args.seq - 1}): "
          f"export + import + build {built:.1f} s")
    print(f"  max relative difference to torch eager {worst:.1e} (torch.export at seq {args.seq} and "
          f"{args.seq // 2}, torch.fx at {args.seq})")
    print(f"  run {ours:.2f} ms, torch eager {eager:.2f} ms ({ours / eager:.2f}x)")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
