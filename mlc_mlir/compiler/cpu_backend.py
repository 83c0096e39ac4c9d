"""The host CPU backend of the driver: the codegen stages (:func:`.pipeline.codegen_stages`) and the JIT."""

from __future__ import annotations

import logging
import shutil
import tempfile
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from ..context import mlc_context
from ..errors import BuildError
from ..target import Target, host_features
from ..toolchain import mlir_lib, openmp_lib
from ..runtime.heap import keep_heap
from ..runtime.module import RuntimeModule
from .alloc_check import alloc_failure_check
from .aot import AOT_MIN_CODE, code_text, load_library, write_library
from .codegen_flags import check_fastmath
from .executable import JitModule
from .pipeline import Compilation, Stage, codegen_stages

__all__ = ["CpuBackend", "host_target"]

log = logging.getLogger(__name__)


def host_target(target: str | Target) -> Target:
    """``target`` parsed; BuildError if its code would not run on this machine (JIT)."""
    tgt = Target.of("llvm" if str(target).split()[0] == "cpu" else target)
    if not tgt.is_host:
        missing = sorted(tgt.features - host_features() & {"avx", "avx2", "fma", "avx512f", "neon"})
        raise BuildError(f"target {str(tgt)!r} needs {missing}, which this machine lacks; the JIT runs code "
                         "here (schedule for such a target with mlc.schedule.rules, build on a machine that has them)")
    return tgt


@dataclass(frozen=True)
class CpuBackend:
    """``"llvm"``: tensor programs -> LLVM dialect (:func:`codegen_stages`) -> the JIT."""

    target: Target
    fastmath: str = "contract"
    opt_level: int = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "fastmath", check_fastmath(self.fastmath))

    def graph_options(self) -> dict[str, Any]:
        """How the graph layer's stages schedule for this target (the default CPU rules)."""
        return {"target": self.target}

    def prepare(self, state: Compilation) -> None:
        state.target, state.fastmath = self.target, self.fastmath

    def stages(self, state: Compilation) -> list[Stage]:
        return codegen_stages(state)

    def after_stage(self, stage: Stage, mod: Any) -> None:
        """Nothing kept between stages on the CPU."""

    def load(self, lowered: ir.Module, state: Compilation, *, source: str,
             callbacks: Mapping[str, Any] | None = None,
             after_call: Callable[[], None] | None = None, library_dir: str | None = None) -> RuntimeModule:
        """The runtime module (``rt["name"](*arrays)``) of the LLVM-dialect module: the JIT's, or a
        shared library's (:mod:`.aot`: kernels compiled in parallel), loaded.

        A library is written to ``library_dir`` when given (the compile cache's entry), else to
        a temporary directory when the module holds more than :data:`.aot.AOT_MIN_CODE` of
        code (the JIT is slower there). Callbacks (environment functions) need the JIT.
        """
        if not callbacks:
            with mlc_context():
                text = code_text(lowered)
            temporary = library_dir is None and len(text.code) >= AOT_MIN_CODE
            if library_dir is not None or temporary:
                out = library_dir or tempfile.mkdtemp(prefix="mlc-library-")
                path = write_library(lowered, state, out, target=self.target, opt_level=self.opt_level,
                                     source=state.source or source, graph=bool(state.graph_signatures), text=text)
                rt = load_library(path, lowered)
                if temporary:  # the loaded code stays mapped; the files go with the module
                    weakref.finalize(rt, shutil.rmtree, out, True)
                return rt
        engine = _jit(lowered, state, self.opt_level, callbacks)
        return JitModule(engine=engine, signatures=state.signatures, lowered=lowered,
                         source=state.source or source, target=str(self.target),
                         after_call=alloc_failure_check(engine, after_call),
                         keep_alive=list((callbacks or {}).values()), fast_plans=state.plans)


def _jit(module: ir.Module, state: Compilation, opt_level: int,
         callbacks: Mapping[str, Any] | None) -> ExecutionEngine:
    keep_heap()  # the kernels' buffers stay in the heap between calls (runtime/heap.py)
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
