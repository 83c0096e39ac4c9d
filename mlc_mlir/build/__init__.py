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
from .fastcall import add_entries, fast_plans
from .executable import CompiledFunction, ProfileResult, RuntimeModule
from .pipeline import Stage, cpu_stages, mlir_lib, openmp_lib, run_pipeline, run_stages, uses_parallel_loops

__all__ = ["build", "compile_module", "RuntimeModule", "CompiledFunction", "ProfileResult",
           "Stage", "cpu_stages", "run_pipeline", "run_stages", "FuncSignature"]

_TARGETS = ("llvm", "cpu")
log = logging.getLogger(__name__)


def build(mod: Module, target: str = "llvm", *, opt_level: int = 3,
          print_after_all: bool = False, arch: str | None = None) -> RuntimeModule:
    """Compile every public function of ``mod`` for the host CPU or a CUDA GPU.

    Args:
        mod: tensor programs (tensor form of docs/conventions.md, or memref form).
        target: ``"llvm"`` (host CPU, its vector features), or ``"cuda"`` /
            ``"cuda -arch=sm_90"`` (loop nests bound with ``sch.bind``; see
            :func:`mlc_mlir.build.cuda.build_cuda`).
        opt_level: LLVM optimisation level 0-3.
        print_after_all: print the IR after each pipeline stage to stderr.
        arch: CUDA chip (``"sm_90"``) for ``target="cuda"``.

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
    if kind == "cuda":
        from .cuda import build_cuda

        return build_cuda(mod, str(target), arch=arch, opt_level=opt_level, print_after_all=print_after_all)
    if arch is not None:
        raise BuildError(f"arch={arch!r} is a CUDA option; target {target!r} is the host CPU")
    return compile_module(mod, opt_level=opt_level, print_after_all=print_after_all, target=kind)


def _check_target(target: str) -> str:
    if not isinstance(target, str):
        target = str(target)
    kind = target.split()[0] if target.strip() else target
    if kind == "cuda":
        return "cuda"
    if kind not in _TARGETS:
        raise BuildError(f"unknown target {target!r}; supported: 'llvm', 'cuda' ('cuda -arch=sm_90')")
    return "llvm"


def compile_module(mod: Module, *, opt_level: int = 3, print_after_all: bool = False,
                   target: str = "llvm", extra_stages: list[Stage] | None = None,
                   callbacks: Mapping[str, Any] | None = None,
                   after_call: Callable[[], None] | None = None) -> RuntimeModule:
    """Lower a copy of ``mod`` and JIT it (the engine of :func:`build` and graph builds).

    Args:
        extra_stages: stages run before the ABI rewrite (e.g. graph lowering).
        callbacks: symbol name -> ctypes function registered on the engine (Python
            functions that compiled code calls).
        after_call: run after every call of a compiled function (e.g. to re-raise errors
            captured inside callbacks).
    """
    if not 0 <= opt_level <= 3:
        raise BuildError(f"opt_level must be 0..3, got {opt_level}")
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
        run_stages(module, cpu_stages(parallel=parallel), print_after_all=print_after_all)
        plans = add_entries(module, fast_plans(signatures))  # rt["f"](...) as a builtin (fastcall.py)
        libs = [mlir_lib("libmlir_c_runner_utils.so")]
        if parallel:
            libs.append(openmp_lib())
        log.debug("JIT of %s (opt_level %d) with %s", ", ".join(signatures), opt_level, ", ".join(libs))
        try:
            engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=libs)
        except (RuntimeError, ir.MLIRError) as exc:
            raise BuildError(f"JIT compilation failed: {exc}") from None
        for name, cb in (callbacks or {}).items():
            engine.register_runtime(name, cb)
        engine.initialize()
    return RuntimeModule(engine=engine, signatures=signatures, lowered=module, source=source,
                         target=target, after_call=after_call, keep_alive=list((callbacks or {}).values()),
                         fast_plans=plans)
