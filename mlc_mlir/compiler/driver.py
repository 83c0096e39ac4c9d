"""The compile driver: one ``compile(mod, target)`` for every build.

``mlc.build`` (tensor programs), ``mlc.graph.build`` (the course's ``relax.build``) and
``mlc-opt --mlc-lower-to-llvm`` are thin calls of it. The target's backend
(:class:`.cpu_backend.CpuBackend`, :class:`.cuda_backend.CudaBackend`) gives the stage list
and the loader; when the module holds graph
functions, the graph layer's stages (lowering them to tensor programs and calls,
registered through :mod:`mlc_mlir.views`) come first. The stages share one
:class:`~.pipeline.Compilation`, which the result carries.

    stages = [graph stages (if any graph function)] + backend.stages(state)
    lowered = run_stages(copy of mod, stages)
    runtime = backend.load(lowered, state)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..context import mlc_context
from ..errors import BuildError
from ..ir import Module, graph_functions
from ..runtime.module import RuntimeModule
from ..target import Target, resolve_tag
from ..views import graph_view
from .cpu_backend import CpuBackend, host_target
from .cuda_backend import CudaBackend
from .pipeline import Compilation, Stage, run_stages

log = logging.getLogger("mlc_mlir.compiler.driver")

__all__ = ["compile", "lower", "Compiled", "build_stages", "backend_for", "Backend"]


#: a target's backend: its stage list and its loader
Backend = CpuBackend | CudaBackend


def backend_for(target: str | Target | Any, *, opt_level: int = 3, fastmath: str = "contract",
                arch: str | None = None) -> Backend:
    """The backend of ``target`` (a string or :class:`~mlc_mlir.target.Target`).

    Raises:
        BuildError: an unknown target kind, a CPU target this machine cannot run (the JIT
            runs code here), a CUDA option (``arch``) on a CPU target.
    """
    if isinstance(target, Target):
        kind = target.kind
    else:
        target = resolve_tag(str(target))  # TVM's tags: "nvidia/tesla-p100" is a cuda target
        kind = target.split()[0] if target.strip() else target
    if kind == "cuda":
        return CudaBackend.of(str(target), arch=arch, opt_level=opt_level)
    if kind not in ("llvm", "cpu"):
        raise BuildError(f"unknown target {target!r}; supported: 'llvm', 'cuda' ('cuda -arch=sm_90')")
    if arch is not None:
        raise BuildError(f"arch={arch!r} is a CUDA option; target {str(target)!r} is the host CPU")
    return CpuBackend(host_target(target), fastmath=fastmath, opt_level=opt_level)


@dataclass
class Compiled:
    """What :func:`compile` gives: the loaded module and the state the stages recorded."""

    runtime: RuntimeModule
    state: Compilation


def build_stages(mod: Module, backend: Backend, state: Compilation, *, graph_opt_level: int = 2,
                 op_map: dict | None = None) -> list[Stage]:
    """The whole stage list of ``mod`` for ``backend``: graph stages when ``mod`` has graph
    functions, then the target's."""
    stages: list[Stage] = []
    if graph_functions(mod.mlir_module):
        stages += graph_view().stages(state, opt_level=graph_opt_level, op_map=op_map, **backend.graph_options())
    return stages + backend.stages(state)


def _prepare(mod: Module, target: Any, opt_level: int, fastmath: str, arch: str | None) -> tuple[Backend, Compilation]:
    if not isinstance(mod, Module):
        raise BuildError(f"build expects an mlc.Module, got {type(mod).__name__}")
    if not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise BuildError(f"opt_level must be 0..3, got {opt_level!r}")
    backend = backend_for(target, opt_level=opt_level, fastmath=fastmath, arch=arch)
    state = Compilation()
    backend.prepare(state)
    return backend, state


@dataclass
class StageTimes:
    """Seconds spent in each stage of one build, in order (``MLC_LOG=info`` prints them)."""

    times: list[tuple[str, float]] = field(default_factory=list)
    _last: float = field(default_factory=time.perf_counter)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.times.append((name, now - self._last))
        self._last = now

    def report(self) -> str:
        total = sum(t for _, t in self.times)
        slow = sorted(self.times, key=lambda x: -x[1])[:6]
        return (f"build: {total:.2f} s; slowest stages: "
                + ", ".join(f"{n} {t:.2f} s" for n, t in slow if t >= 0.005))


def _lowered(mod: Module, backend: Backend, state: Compilation, *, graph_opt_level: int, op_map: dict | None,
             print_after_all: bool, times: StageTimes | None = None) -> Module:
    """A copy of ``mod`` through :func:`build_stages` (inside the shared context)."""
    work = mod.clone()
    stages = build_stages(work, backend, state, graph_opt_level=graph_opt_level, op_map=op_map)

    def after(stage: Stage, m: Any) -> None:
        backend.after_stage(stage, m)
        if times is not None:
            times.lap(stage.name)

    return run_stages(work, stages, print_after_all=print_after_all, after_stage=after)


def lower(mod: Module, target: Any = "llvm", *, graph_opt_level: int = 2, op_map: dict | None = None,
          fastmath: str = "contract", print_after_all: bool = False) -> Module:
    """Run :func:`compile`'s stages on a copy of ``mod`` without loading it (``mlc-opt
    --mlc-lower-to-llvm``): the module in the LLVM dialect (CPU)."""
    backend, state = _prepare(mod, target, 3, fastmath, None)
    with mlc_context():
        return _lowered(mod, backend, state, graph_opt_level=graph_opt_level, op_map=op_map,
                        print_after_all=print_after_all)


def compile(mod: Module, target: Any = "llvm", *, opt_level: int = 3, graph_opt_level: int = 2,  # noqa: A001
            op_map: dict | None = None, fastmath: str = "contract", arch: str | None = None,
            print_after_all: bool = False,
            callbacks: Mapping[str, Any] | Callable[[Compilation], Mapping[str, Any]] | None = None,
            after_call: Callable[[], None] | None = None, library_dir: str | None = None) -> Compiled:
    """Compile ``mod`` for ``target`` and load it.

    Args:
        mod: tensor programs, graph functions, or both.
        target: ``"llvm"`` (host CPU; ``-mcpu`` / ``-mattr``) or ``"cuda"`` (``-arch=sm_XX``).
        opt_level: LLVM / NVVM optimisation level 0-3.
        graph_opt_level: the graph optimisation level of graph functions (0-3).
        op_map: extra legalization rules of graph ops.
        fastmath: ``#arith.fastmath`` flags of the CPU code (see ``mlc.build``).
        arch: the CUDA chip (``"sm_90"``) of a ``"cuda"`` target.
        print_after_all: print the IR after each stage to stderr.
        callbacks: symbol -> ctypes function registered on the JIT (Python functions that
            compiled code calls), or a function of the final state returning them (a graph
            learns its environment functions while it is lowered).
        after_call: run after every call of a compiled function.
        library_dir: (CPU) compile into a shared library in this directory, kernels in
            parallel (:mod:`.aot`), and load it, instead of the JIT (ignored with callbacks).

    Raises:
        BuildError: an unknown target, a bad option, a failing stage (``LoweringError``), or
            environment functions without their callbacks.
    """
    backend, state = _prepare(mod, target, opt_level, fastmath, arch)
    times = StageTimes()
    source = mod.script()
    with mlc_context():
        lowered = _lowered(mod, backend, state, graph_opt_level=graph_opt_level, op_map=op_map,
                           print_after_all=print_after_all, times=times).mlir_module
        if callable(callbacks):
            callbacks = callbacks(state)
        if state.env_calls and not callbacks:
            names = sorted({c.name for c in state.env_calls})
            raise BuildError(f"the graph calls environment functions {names} (call_dps_packed): build it with "
                             "mlc.graph.build, which connects them to their Python functions")
        extra = {"library_dir": library_dir} if library_dir is not None else {}
        runtime = backend.load(lowered, state, source=source, callbacks=callbacks, after_call=after_call, **extra)
        times.lap("load (LLVM code generation)")
    log.info("%s", times.report())
    return Compiled(runtime, state)
