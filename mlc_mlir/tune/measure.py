"""What a builder and a runner do with one candidate (MetaSchedule's builder/ + runner/).

These functions run in a child process (a local worker, or a Ray worker): they may abort,
hang or exhaust memory, and the parent only sees a failed result. ``build`` replays the
candidate's trace on the task's module and JIT-compiles it; ``run`` checks the result
against the unscheduled program's on the same random inputs (computed once per workload
per worker, on the CPU), then times it: a warm-up of ``warmup_ms`` (caches, OpenMP threads,
clock), then ``repeat`` results, each the best of ``windows`` timed windows of at least
``min_repeat_ms / windows`` (and ``number`` calls). A window that another process
preempts only reads slower, so the best window of each repeat is the kernel's own time on
a shared machine too; what the runner did is recorded in the result's ``extra``
(:data:`TIMING_KEYS`).

On a CUDA target the build compiles the kernels to PTX and, with the ``nvidia-cuda-nvcc``
wheel's ``ptxas``, to a cubin (``extra["binary"]``: ``"bin"``, or ``"isa"`` without
ptxas); without a GPU the run step fails with a :class:`~mlc_mlir.errors.TuneError` saying
so (the candidate is compiled and checked, not measured).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ..compiler import build
from ..errors import TuneError
from ..ir import Module
from ..runtime.cuda_device import CudaUnavailable
from ..runtime.memref import numpy_dtype
from ..runtime.ndarray import aligned_empty
from ..schedule import Schedule, Trace

__all__ = ["MeasureInput", "MeasureResult", "build_candidate", "run_candidate", "measure_in_process", "build_info",
           "NO_GPU", "TIMING_KEYS", "time_candidate"]

#: start of the run error of a CUDA candidate measured where no GPU is present
NO_GPU = "no CUDA GPU to measure on"

#: what a CPU run records in ``MeasureResult.extra``: warm-up calls, calls per timed window,
#: windows per repeat (each repeat is the best of its windows)
TIMING_KEYS = ("warmup_calls", "calls_per_window", "windows_per_repeat")


@dataclass(frozen=True)
class MeasureInput:
    """One candidate to build and run (picklable).

    ``build_fn(mod, target) -> runtime module`` replaces :func:`mlc_mlir.compiler.build` (MetaSchedule's
    ``LocalBuilder(f_build=...)``); it must be importable by name in a child process.
    """

    key: str
    mod_text: str
    func: str
    trace: dict[str, Any]
    target: str = "llvm"
    number: int = 3
    repeat: int = 3
    min_repeat_ms: float = 5.0
    rtol: float = 1e-3
    build_fn: Callable[..., Any] | None = None
    index: int = 0
    warmup_ms: float = 10.0
    windows: int = 5


@dataclass
class MeasureResult:
    """``run_secs`` (one mean per repeat) or an ``error``; build time in seconds."""

    index: int
    run_secs: list[float] | None = None
    error: str | None = None
    build_secs: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


_REFERENCE: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
_MODULES: dict[str, Any] = {}


def _module(inp: MeasureInput) -> Any:
    if inp.key not in _MODULES:
        _MODULES[inp.key] = Module.parse(inp.mod_text)
    return _MODULES[inp.key]


def _random_args(func: Any, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in func.signature.args:
        dtype = numpy_dtype(spec.elem)
        if any(d is None for d in spec.shape):
            raise ValueError(f"argument {spec.name} has a dynamic shape {spec.shape}: tuning needs static shapes")
        arr = aligned_empty(tuple(spec.shape), dtype)  # as mlc.runtime arrays (64-byte aligned)
        if spec.is_output:
            arr[...] = 0
        elif np.issubdtype(dtype, np.floating):
            arr[...] = rng.uniform(-1.0, 1.0, spec.shape).astype(dtype)
        else:
            arr[...] = rng.integers(-8, 8, spec.shape).astype(dtype)
        arrays.append(arr)
    return arrays


def _reference(inp: MeasureInput) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if inp.key not in _REFERENCE:
        rt = build(_module(inp), "llvm" if _is_cuda(inp) else inp.target)  # the reference runs on the CPU
        func = rt[inp.func]
        args = _random_args(func)
        func(*args)
        outs = [a.copy() for a, s in zip(args, func.signature.args) if s.is_output]
        for a, s in zip(args, func.signature.args):
            if s.is_output:
                a[...] = 0
        _REFERENCE[inp.key] = (args, outs)
    return _REFERENCE[inp.key]


def _is_cuda(inp: MeasureInput) -> bool:
    return inp.target.split()[0] == "cuda"


def build_info(rt: Any) -> dict[str, Any]:
    """What a result records about a build: the kernels' binary format of a CUDA module."""
    cuda = getattr(rt, "cuda", None)
    return {"binary": cuda.format} if cuda is not None and hasattr(cuda, "format") else {}


def build_candidate(inp: MeasureInput) -> tuple[Any, float]:
    """Replay the trace and compile; returns (runtime module, seconds)."""
    t0 = time.perf_counter()
    sch = Schedule(_module(inp)).replay(Trace.from_json(inp.trace))
    fn = inp.build_fn or build
    rt = fn(sch.mod, inp.target)
    return rt, time.perf_counter() - t0


def run_candidate(inp: MeasureInput, rt: Any, extra: dict[str, Any] | None = None) -> list[float]:
    """Check the result against the unscheduled program, then time it (warm-up + repeats);
    ``extra`` (a result's) receives what the timing did (:data:`TIMING_KEYS`).

    Raises:
        ValueError: the result differs from the unscheduled program's.
        TuneError: a CUDA candidate where no GPU is present.
    """
    ins, ref_outs = _reference(inp)
    args = [a.copy() for a in ins]
    func = rt[inp.func]
    if _is_cuda(inp):
        try:
            func(*args)
        except CudaUnavailable as exc:
            raise TuneError(f"{NO_GPU}: the candidate was compiled ({build_info(rt).get('binary')}), "
                            f"not measured: {exc}") from None
    else:
        func(*args)
    outs = [a for a, s in zip(args, func.signature.args) if s.is_output]
    for k, (got, want) in enumerate(zip(outs, ref_outs)):
        scale = float(np.max(np.abs(want))) if want.size else 1.0
        if got.shape != want.shape or not np.allclose(got, want, rtol=inp.rtol, atol=inp.rtol * max(scale, 1e-6)):
            err = float(np.max(np.abs(got - want))) if got.shape == want.shape else math.nan
            raise ValueError(f"wrong result: output {k} differs from the unscheduled program's "
                             f"(max abs error {err:.3g}, scale {scale:.3g})")
    if _is_cuda(inp):
        prof = rt.time_evaluator(inp.func, number=inp.number, repeat=inp.repeat,
                                 min_repeat_ms=inp.min_repeat_ms)(*args)
        return [float(s) for s in prof.results]
    secs, info = time_candidate(rt, inp, args)
    if extra is not None:
        extra.update(info)
    return secs


def time_candidate(rt: Any, inp: MeasureInput, args: list[np.ndarray]) -> tuple[list[float], dict[str, Any]]:
    """Seconds per call of ``inp.func`` on ``args``: ``inp.repeat`` values, each the best of
    (at most) ``inp.windows`` windows that together run ``max(number, min_repeat_ms worth)``
    calls, after a warm-up of ``inp.warmup_ms``; and what was done (:data:`TIMING_KEYS`)."""
    # about 1 ms of calls: the time of one call, to size the warm-up and the windows
    est = max(rt.time_evaluator(inp.func, number=1, repeat=1, min_repeat_ms=1.0)(*args).results[0], 1e-9)
    warmup_calls = max(1, math.ceil(max(0.0, inp.warmup_ms) * 1e-3 / est))
    rt.time_evaluator(inp.func, number=warmup_calls, repeat=1)(*args)  # caches, OpenMP threads, clock
    # a repeat runs max(number, min_repeat_ms worth) calls, as before, cut into windows
    total = max(int(inp.number), math.ceil(inp.min_repeat_ms * 1e-3 / est))
    windows = max(1, min(int(inp.windows), total))
    calls = math.ceil(total / windows)
    timer = rt.time_evaluator(inp.func, number=calls, repeat=windows)
    secs = [min(timer(*args).results) for _ in range(max(1, int(inp.repeat)))]
    info = {"warmup_calls": warmup_calls, "calls_per_window": calls, "windows_per_repeat": windows}
    return secs, info


def measure_in_process(inp: MeasureInput) -> MeasureResult:
    """Build and run in this process, turning any exception into a failed result."""
    res = MeasureResult(inp.index)
    try:
        rt, res.build_secs = build_candidate(inp)
        res.extra.update(build_info(rt))
    except Exception as exc:  # a failed build is data, not an error of the tuning loop
        res.error = f"build: {type(exc).__name__}: {str(exc)[:500]}"
        return res
    try:
        res.run_secs = run_candidate(inp, rt, res.extra)
    except Exception as exc:
        res.error = f"run: {type(exc).__name__}: {str(exc)[:500]}"
    return res
