"""What every benchmark prints and how it times: the host, NumPy / PyTorch references, ratios.

Each figure is measured in the same process as its references, in interleaved rounds
(ours, NumPy, PyTorch, ours, ...) so that drift of a shared machine hits all of them; the
best of the rounds is reported (interference from other jobs only ever slows a run down),
with ``ratio = our time / reference time`` (below 1: faster than the reference).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable

# OpenMP worker threads sleep at once after a parallel region instead of spinning for
# 200 ms, so they do not steal the cores from NumPy's BLAS threads timed next to them.
os.environ.setdefault("KMP_BLOCKTIME", "0")

import numpy as np  # noqa: E402

import mlc_mlir as mlc  # noqa: E402
from mlc_mlir.target import Target  # noqa: E402

__all__ = ["host_report", "best_of", "Figure", "torch_or_none", "measure", "lib_array"]


def torch_or_none():
    """The ``torch`` module, or None when PyTorch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_report() -> str:
    """Lines naming the host: CPU model, LLVM CPU, vector features, cores, library versions."""
    tgt = Target("llvm")
    vec = sorted(f for f in tgt.features if f.startswith(("sse4", "avx", "fma", "neon")))
    torch = torch_or_none()
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # noqa: BLE001 - older NumPy
        blas = "unknown BLAS"
    return "\n".join([
        f"host: {_cpu_model()} (LLVM cpu {tgt.cpu}), {tgt.num_cores} cores, "
        f"{tgt.vector_registers} x {tgt.vector_bits}-bit vector registers, features {' '.join(vec)}",
        f"register tile (f32): {tgt.register_tile()[0]} x {tgt.register_tile()[1]}",
        f"mlc-mlir {mlc.__version__}; NumPy {np.__version__} ({blas}); "
        + (f"PyTorch {torch.__version__}" if torch is not None else "PyTorch not installed"),
        "kernel inputs: mlc.runtime arrays (64-byte aligned, as TVM's NDArray), the same memory "
        "NumPy and PyTorch are timed on",
    ])


def lib_array(x: np.ndarray) -> np.ndarray:
    """``x`` copied into an ``mlc.runtime`` array (64-byte aligned, as TVM's NDArray), as a
    NumPy view: the kernels and NumPy then read the same memory. (NumPy's own arrays start
    16 bytes into a cache line here: our 6x16 mm_relu 128 runs 7% slower on them, NumPy's
    BLAS packs its operands and does not care.)"""
    return np.from_dlpack(mlc.runtime.array(x))


def best_of(fn: Callable[[], object], number: int, repeat: int = 3) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` runs of ``number`` calls."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


class Figure:
    """One measured line: our timers and the references, timed in interleaved rounds."""

    def __init__(self, label: str, ours: Callable[[], float], refs: dict[str, Callable[[], float] | None],
                 flops: float | None = None):
        self.label, self.ours, self.flops = label, ours, flops
        self.refs = {k: v for k, v in refs.items() if v is not None}

    def run(self, rounds: int) -> dict[str, float]:
        """Best seconds per call of ours (key ``"ours"``) and of each reference over the rounds."""
        times: dict[str, list[float]] = {"ours": [], **{k: [] for k in self.refs}}
        for _ in range(rounds):
            times["ours"].append(self.ours())
            for k, fn in self.refs.items():
                times[k].append(fn())
        return {k: min(v) for k, v in times.items()}

    def line(self, rounds: int) -> str:
        """The printed figure: time, GFLOP/s, each reference's time and the ratio to it."""
        med = self.run(rounds)
        t = med["ours"]
        out = f"{self.label:<58} {t * 1e6:10.1f} us"
        if self.flops:
            out += f" {self.flops / t / 1e9:6.1f} GFLOP/s"
        for k in self.refs:
            out += f" | {k} {med[k] * 1e6:9.1f} us  ratio {t / med[k]:5.2f}"
        return out


def measure(figures: list[Figure], rounds: int) -> None:
    """Print each figure's line (flushes, so a long run shows progress)."""
    for fig in figures:
        print(fig.line(rounds), flush=True)
