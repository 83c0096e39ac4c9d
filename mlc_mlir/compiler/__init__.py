"""The compiler: tensor programs -> LLVM dialect -> JIT (``mlc.build``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from ..context import mlc_context
from ..errors import BuildError
from ..ir import Module
from .abi import FuncSignature
from .alloc_check import alloc_failure_check
from .executable import CompiledFunction, ProfileResult, RuntimeModule
from ..target import Target
from .codegen_flags import check_fastmath
from ..toolchain import mlir_lib, openmp_lib
from .pipeline import (Compilation, Stage, build_stages, codegen_stages, cpu_stages, run_pipeline, run_stage,
                       run_stages, uses_parallel_loops)

__all__ = ["build", "compile_module", "RuntimeModule", "CompiledFunction", "ProfileResult",
           "Stage", "Compilation", "cpu_stages", "codegen_stages", "build_stages", "run_pipeline",
           "run_stage", "run_stages", "FuncSignature"]

_TARGETS = ("llvm", "cpu")
log = logging.getLogger(__name__)


def build(mod: Module, target: str | Target = "llvm", *, opt_level: int = 3,
          print_after_all: bool = False, arch: str | None = None, fastmath: str = "contract") -> RuntimeModule:
    """Compile every public function of ``mod`` for the host CPU or a CUDA GPU.

    The compiled call checks the arrays passed in (dtype, shape, ...), not the indices the
    program computes: an out-of-bounds ``tensor.extract`` / ``tensor.insert`` (or
    ``memref.load`` / ``memref.store``) in a hand-written program is undefined behaviour,
    as in C: it reads or writes other memory, returns garbage or kills the process with a
    segfault. ``te`` checks its affine indices against static dimensions when the program
    is created (a ``TEError``), not against symbolic ones: ``A[i + 1]`` for ``i`` in
    ``range(n)`` over a tensor of ``n`` elements reads one past the end.

    Args:
        mod: tensor programs (tensor form of docs/conventions.md, or memref form).
        target: ``"llvm"`` (host CPU, its vector features; ``"llvm -mcpu=znver3"``,
            ``"llvm -mattr=+avx2,+fma"``: see :mod:`mlc_mlir.target`), or ``"cuda"`` /
            ``"cuda -arch=sm_90"`` (loop nests bound with ``sch.bind``; see
            :func:`mlc_mlir.compiler.cuda.build_cuda`).
        opt_level: LLVM optimisation level 0-3 (``mlc.graph.build`` calls this one
            ``llvm_opt_level``; its ``opt_level`` is the graph optimisation level).
        print_after_all: print the IR after each pipeline stage (named as in
            :func:`codegen_stages`) to stderr.
        arch: CUDA chip (``"sm_90"``) for ``target="cuda"``.
        fastmath: LLVM fast-math flags of float arithmetic (``#arith.fastmath``):
            ``"contract"`` (default: multiply-adds fused into FMAs, one rounding; results
            within 1e-6 relative of NumPy), ``"none"`` (IEEE, bit-exact evaluation order),
            or a comma list such as ``"contract,afn"``; ``"fast"``/``"reassoc"`` allow
            reordering sums (less accurate, and slower on reduction loops here).

    Returns:
        A :class:`RuntimeModule` (a :class:`CudaModule` for cuda): ``rt["name"](*arrays)``
        runs in place.

    Raises:
        BuildError: unknown target, a function not in destination-passing form, or a
            lowering stage that fails (``LoweringError``, with the diagnostics).
    """
    if not isinstance(mod, Module):
        raise BuildError(f"build expects an mlc.Module, got {type(mod).__name__}")
    kind = _check_target(target)
    fastmath = check_fastmath(fastmath)
    if kind == "cuda":
        from .cuda import build_cuda

        return build_cuda(mod, str(target), arch=arch, opt_level=opt_level, print_after_all=print_after_all)
    if arch is not None:
        raise BuildError(f"arch={arch!r} is a CUDA option; target {target!r} is the host CPU")
    return compile_module(mod, opt_level=opt_level, print_after_all=print_after_all, target=target,
                          fastmath=fastmath)


def _check_target(target: str | Target) -> str:
    if isinstance(target, Target):
        return target.kind
    if not isinstance(target, str):
        target = str(target)
    kind = target.split()[0] if target.strip() else target
    if kind == "cuda":
        return "cuda"
    if kind not in _TARGETS:
        raise BuildError(f"unknown target {target!r}; supported: 'llvm', 'cuda' ('cuda -arch=sm_90')")
    Target(target)  # TargetError for a bad -mcpu / -mattr
    return "llvm"


def host_target(target: str | Target) -> Target:
    """``target`` parsed; BuildError if its code would not run on this machine (JIT)."""
    tgt = Target.of("llvm" if str(target).split()[0] == "cpu" else target)
    if not tgt.is_host:
        from ..target import host_features

        missing = sorted(tgt.features - host_features() & {"avx", "avx2", "fma", "avx512f", "neon"})
        raise BuildError(f"target {str(tgt)!r} needs {missing}, which this machine lacks; the JIT runs code "
                         "here (schedule for such a target with mlc.schedule.rules, build on a machine that has them)")
    return tgt


def compile_module(mod: Module, *, opt_level: int = 3, print_after_all: bool = False,
                   target: str | Target = "llvm", fastmath: str = "contract",
                   extra_stages: list[Stage] | None = None,
                   callbacks: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
                   after_call: Callable[[], None] | None = None,
                   stages: list[Stage] | None = None, state: Compilation | None = None) -> RuntimeModule:
    """Run the pipeline on a copy of ``mod`` and JIT it (the engine of :func:`build` and graph builds).

    Args:
        opt_level: LLVM optimisation level 0-3 (of the JIT; not the graph ``opt_level``).
        target: the host CPU target (``"llvm"``, ``"llvm -mattr=..."``); its ``-mcpu`` /
            ``-mattr`` reach the JIT as function attributes.
        fastmath: ``#arith.fastmath`` flags (see :func:`build`).
        extra_stages: stages run before :func:`codegen_stages` (ignored with ``stages``).
        callbacks: symbol name -> ctypes function registered on the engine (Python
            functions that compiled code calls), or a function returning that mapping
            once the stages ran (graph builds learn their environment functions then).
        after_call: run after every call of a compiled function (e.g. to re-raise errors
            captured inside callbacks).
        stages, state: the whole stage list and the :class:`Compilation` it records into
            (default: ``extra_stages + codegen_stages(state)``).
    """
    if not 0 <= opt_level <= 3:
        raise BuildError(f"opt_level must be 0..3, got {opt_level}")
    tgt = host_target(target)
    fastmath = check_fastmath(fastmath)
    state = Compilation() if state is None else state
    if stages is None:
        state.target, state.fastmath = tgt, fastmath
        stages = [*(extra_stages or []), *codegen_stages(state)]
    work = mod.clone()
    source = work.script()
    with mlc_context():
        module = run_stages(work, stages, print_after_all=print_after_all).mlir_module
        if callable(callbacks):
            callbacks = callbacks()
        engine = _jit(module, state, opt_level, callbacks)
        after_call = alloc_failure_check(engine, after_call)
    return RuntimeModule(engine=engine, signatures=state.signatures, lowered=module,
                         source=state.source or source, target=str(tgt), after_call=after_call,
                         keep_alive=list((callbacks or {}).values()), fast_plans=state.plans)


def _jit(module: ir.Module, state: Compilation, opt_level: int,
         callbacks: Mapping[str, Any] | None) -> ExecutionEngine:
    libs = [mlir_lib("libmlir_c_runner_utils.so")]
    if state.parallel:
        libs.append(openmp_lib())
    log.debug("JIT of %s (opt_level %d) with %s", ", ".join(state.signatures), opt_level, ", ".join(libs))
    try:
        # object dump kept: rt.get_source("asm") disassembles the code the JIT runs
        engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=libs, enable_object_dump=True)
    except (RuntimeError, ir.MLIRError) as exc:
        raise BuildError(f"JIT compilation failed: {exc}") from None
    for name, cb in (callbacks or {}).items():
        engine.register_runtime(name, cb)
    engine.initialize()
    return engine
