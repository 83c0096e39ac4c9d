"""Build: tensor programs -> LLVM dialect -> JIT (``mlc.build``)."""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable, Mapping
from typing import Any

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from ..context import mlc_context
from ..errors import BuildError
from ..ir import Module
from .abi import FuncSignature, to_memref_abi
from .alloc_check import alloc_failure_check
from .fastcall import add_entries, fast_plans
from .executable import CompiledFunction, ProfileResult, RuntimeModule
from ..target import Target
from .codegen_flags import check_fastmath
from .pipeline import Stage, cpu_stages, mlir_lib, openmp_lib, run_pipeline, run_stages, uses_parallel_loops

__all__ = ["build", "compile_module", "RuntimeModule", "CompiledFunction", "ProfileResult",
           "Stage", "cpu_stages", "run_pipeline", "run_stages", "FuncSignature"]

_TARGETS = ("llvm", "cpu")
log = logging.getLogger(__name__)


def build(mod: Module, target: str | Target = "llvm", *, opt_level: int = 3,
          print_after_all: bool = False, arch: str | None = None, fastmath: str = "contract") -> RuntimeModule:
    """Compile every public function of ``mod`` for the host CPU or a CUDA GPU.

    Args:
        mod: tensor programs (tensor form of docs/conventions.md, or memref form).
        target: ``"llvm"`` (host CPU, its vector features; ``"llvm -mcpu=znver3"``,
            ``"llvm -mattr=+avx2,+fma"``: see :mod:`mlc_mlir.target`), or ``"cuda"`` /
            ``"cuda -arch=sm_90"`` (loop nests bound with ``sch.bind``; see
            :func:`mlc_mlir.build.cuda.build_cuda`).
        opt_level: LLVM optimisation level 0-3.
        print_after_all: print the IR after each pipeline stage to stderr.
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


def _host_target(target: str | Target) -> Target:
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
                   callbacks: Mapping[str, Any] | None = None,
                   after_call: Callable[[], None] | None = None) -> RuntimeModule:
    """Lower a copy of ``mod`` and JIT it (the engine of :func:`build` and graph builds).

    Args:
        target: the host CPU target (``"llvm"``, ``"llvm -mattr=..."``); its ``-mcpu`` /
            ``-mattr`` reach the JIT as function attributes.
        fastmath: ``#arith.fastmath`` flags (see :func:`build`).
        extra_stages: stages run before the ABI rewrite (e.g. graph lowering).
        callbacks: symbol name -> ctypes function registered on the engine (Python
            functions that compiled code calls).
        after_call: run after every call of a compiled function (e.g. to re-raise errors
            captured inside callbacks).
    """
    if not 0 <= opt_level <= 3:
        raise BuildError(f"opt_level must be 0..3, got {opt_level}")
    tgt = _host_target(target)
    fastmath = check_fastmath(fastmath)
    work = mod.clone()
    source = work.script()
    module = work.mlir_module
    with mlc_context():
        if extra_stages:
            run_stages(module, extra_stages, print_after_all=print_after_all)
        # Calls between functions are inlined first: the memref ABI changes public
        # signatures, and calls returning memrefs trip the deallocation pipeline.
        run_pipeline(module, "inline", stage="inline")
        signatures = to_memref_abi(module)
        if not signatures:
            raise BuildError("the module has no public function to compile")
        parallel = uses_parallel_loops(module)
        run_stages(module, cpu_stages(parallel=parallel, signatures=signatures, fastmath=fastmath, target=tgt),
                   print_after_all=print_after_all)
        plans = add_entries(module, fast_plans(signatures))  # rt["f"](...) as a builtin (fastcall.py)
        libs = [mlir_lib("libmlir_c_runner_utils.so")]
        if parallel:
            libs.append(openmp_lib())
        log.debug("JIT of %s (opt_level %d) with %s", ", ".join(signatures), opt_level, ", ".join(libs))
        try:
            # object dump kept: rt.get_source("asm") disassembles the code the JIT runs
            engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=libs, enable_object_dump=True)
        except (RuntimeError, ir.MLIRError) as exc:
            raise BuildError(f"JIT compilation failed: {exc}") from None
        for name, cb in (callbacks or {}).items():
            engine.register_runtime(name, cb)
        engine.initialize()
        after_call = alloc_failure_check(engine, after_call)
    return RuntimeModule(engine=engine, signatures=signatures, lowered=module, source=source,
                         target=str(tgt), after_call=after_call, keep_alive=list((callbacks or {}).values()),
                         fast_plans=plans)
