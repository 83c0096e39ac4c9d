"""ResNet-18 end to end (MLC course ch.5's flow on a model people bring): export with
``torch.export``, import with ``mlc.frontend.from_exported_program``, build for the CPU,
run on the VM, compare with torch eager, time both.

The architecture is torchvision's (written in plain torch in ``mlc_mlir.testing.models``:
torchvision's PyPI wheel links CUDA torch); weights are random and seeded (no download).
The build folds each BatchNorm into its convolution, fuses bias + ReLU + residual adds
onto the convolutions (im2col + a tiled contraction) and compiles 18 distinct kernels.

Run: python examples/resnet18.py [--size 224] [--batch 1] [--dynamic]
(``--dynamic``: one build for every batch size, ``torch.export.Dim("batch")``).
Needs torch (``pip install mlc-mlir[torch]``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import mlc_mlir as mlc
from mlc_mlir.testing import models


def median_ms(fn, repeat: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="input height and width")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dynamic", action="store_true", help="export with a dynamic batch dimension")
    args = parser.parse_args()

    model = models.seeded(models.ResNet18()).eval()
    x = torch.randn(args.batch, 3, args.size, args.size, generator=torch.Generator().manual_seed(0))
    start = time.perf_counter()
    dynamic = {"x": {0: torch.export.Dim("batch", max=64)}} if args.dynamic else None
    ep = torch.export.export(model, (x,), dynamic_shapes=dynamic)
    mod = mlc.frontend.from_exported_program(ep)
    imported = time.perf_counter() - start
    start = time.perf_counter()
    ex = mlc.graph.build(mod, "llvm")
    built = time.perf_counter() - start
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())

    with torch.no_grad():
        ref = model(x).numpy()
    out = vm["main"](x.numpy()).numpy()
    rel = float(np.abs(out - ref).max() / np.abs(ref).max())
    same_top1 = bool((out.argmax(1) == ref.argmax(1)).all())
    ours = median_ms(lambda: vm["main"](x.numpy()))
    with torch.no_grad():
        eager = median_ms(lambda: model(x))
    print(f"ResNet-18 {args.batch}x3x{args.size}x{args.size}{' (dynamic batch)' if args.dynamic else ''}: "
          f"import {imported:.1f} s, build {built:.1f} s")
    print(f"  max relative difference to torch eager {rel:.1e}, same top-1: {same_top1}")
    print(f"  run {ours:.1f} ms, torch eager {eager:.1f} ms ({ours / eager:.2f}x), "
          f"{torch.get_num_threads()} torch threads")
    if args.dynamic:
        x8 = torch.randn(8, 3, args.size, args.size)
        with torch.no_grad():
            ref8 = model(x8).numpy()
        rel8 = float(np.abs(vm["main"](x8.numpy()).numpy() - ref8).max() / np.abs(ref8).max())
        print(f"  the same build at batch 8: max relative difference {rel8:.1e}")
        rel = max(rel, rel8)
    return 0 if rel <= 1e-5 and same_top1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
