"""The compiler: the compile driver (:mod:`.driver`), its targets (:mod:`.targets`), the
pipeline's stages, the JIT's runtime module (``mlc.build``)."""

from __future__ import annotations

import os

from ..ir import Module
from ..target import Target
from ..runtime.signature import FuncSignature
from .compile_cache import cache_root, cached_module_build
from .cpu_backend import CpuBackend
from .driver import Compiled, backend_for, compile, lower
from ..runtime.module import CompiledFunction, ProfileResult, RuntimeModule
from .executable import JitModule
from .pipeline import Compilation, GraphStage, ModuleStage, PassStage, Stage, run_stage, run_stages

__all__ = ["build", "compile", "lower", "Compiled", "RuntimeModule", "JitModule", "CompiledFunction", "ProfileResult",
           "Stage", "PassStage", "ModuleStage", "GraphStage", "Compilation", "run_stage", "run_stages",
           "FuncSignature"]


def build(mod: Module, target: str | Target = "llvm", *, opt_level: int = 3,
          print_after_all: bool = False, arch: str | None = None, fastmath: str = "contract",
          cache: bool | str | os.PathLike[str] = False) -> RuntimeModule:
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
            :mod:`mlc_mlir.compiler.cuda`). A module with graph functions is lowered by the
            graph stages first (``mlc.graph.build`` wraps the same driver, :func:`.driver.compile`).
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
        cache: the persistent compile cache (:mod:`.compile_cache`), off by default here (the
            tuner builds thousands of candidates): True (``$MLC_CACHE_DIR``, else the user's
            cache directory; ``MLC_CACHE_DIR=off`` wins) or a directory. A hit loads the
            library of an earlier build of the same module and options (CPU targets only).

    Returns:
        A :class:`RuntimeModule` (a :class:`CudaModule` for cuda): ``rt["name"](*arrays)``
        runs in place.

    Raises:
        BuildError: unknown target, a function not in destination-passing form, or a
            lowering stage that fails (``LoweringError``, with the diagnostics).
    """
    def fresh(library_dir: str | None) -> RuntimeModule:
        return compile(mod, target, opt_level=opt_level, fastmath=fastmath, arch=arch,
                       print_after_all=print_after_all, library_dir=library_dir).runtime

    root = cache_root(cache) if cache is not False and not print_after_all and arch is None else None
    if root is not None and isinstance(mod, Module):
        backend = backend_for(target, opt_level=opt_level, fastmath=fastmath)
        if isinstance(backend, CpuBackend):
            return cached_module_build(mod, backend.target, root, opt_level=opt_level, fastmath=backend.fastmath,
                                       build=fresh)
    return fresh(None)
