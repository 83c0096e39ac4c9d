"""The pipeline: one :class:`Stage` type, one runner, one list of named stages.

:func:`build_stages` is the whole path from graph functions to the LLVM dialect, read top
to bottom: the graph stages of ``mlc.graph.build`` (:mod:`mlc_mlir.graph.vm.pipeline`), then
:func:`codegen_stages` (inline, the memref ABI rewrite, :func:`cpu_stages`, the fast
entries), which is all that ``mlc.build`` runs on tensor programs and what
``mlc-opt --mlc-lower-to-llvm`` runs. Each stage is an upstream pass pipeline (text) or a
Python function; ``print_after_all=True`` dumps are labelled with the stage names.
:class:`Compilation` carries what stages record for later ones (signatures, parallelism).
"""

from __future__ import annotations

import functools
import logging
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlir import ir
from mlir.passmanager import PassManager

from ..context import mlc_context
from ..errors import BuildError, LoweringError
from ..irutil import diagnostics_text, has_op
from ..log import print_ir
from ..target import Target
from ..views import graph_view
from .abi import FuncSignature
from .alloc_check import check_allocations
from .codegen_flags import check_fastmath, set_fastmath, set_noalias, set_target_attrs
from .guards import reject_unsupported
from .partial_writes import guard_partial_writes
from .unroll_jam import unroll_and_jam
from .vector_opt import optimize_vectors

__all__ = ["Stage", "Compilation", "cpu_stages", "codegen_stages", "build_stages", "run_stage",
           "run_stages", "run_pipeline", "uses_parallel_loops"]

log = logging.getLogger(__name__)

BUFFERIZE = ("one-shot-bufferize{bufferize-function-boundaries=1 "
             "function-boundary-type-conversion=identity-layout-map}")


@dataclass(frozen=True)
class Stage:
    """A named step of a pipeline (the one stage type of the project).

    ``passes`` is upstream pass-pipeline text, or a Python function: with ``graph=False``
    ``fn(ir.Module)`` rewriting the MLIR module in place; with ``graph=True``
    ``fn(mlc.Module) -> mlc.Module | None`` (graph passes, which may return a new module).
    """

    name: str
    passes: str | Callable[..., object]
    graph: bool = False


def uses_parallel_loops(module: ir.Module) -> bool:
    """Whether the module has ``scf.forall`` / ``scf.parallel`` loops (threads needed)."""
    return has_op(module, ("scf.forall", "scf.parallel"))


def _threads_text(parallel: bool) -> str:
    return ("scf-forall-to-parallel,convert-scf-to-openmp,canonicalize" if parallel
            else "scf-forall-to-for")


def _to_llvm_text(parallel: bool) -> str:
    x86 = platform.machine() in ("x86_64", "AMD64")
    vector_to_llvm = "convert-vector-to-llvm{enable-x86vector=true}" if x86 else "convert-vector-to-llvm"
    return ",".join([
        vector_to_llvm, "convert-arith-to-llvm", "finalize-memref-to-llvm",
        "convert-index-to-llvm", "convert-func-to-llvm", "convert-cf-to-llvm",
        "convert-ub-to-llvm"] + (["convert-openmp-to-llvm"] if parallel else []) +
        ["reconcile-unrealized-casts"])


def cpu_stages(*, parallel: bool, signatures: Mapping[str, FuncSignature] | None = None,
               fastmath: str = "contract", target: Target | str | None = None) -> list[Stage]:
    """The stages from tensor programs (after the ABI rewrite) to the LLVM dialect.

    Args:
        parallel: the module has parallel loops (lowered to OpenMP).
        signatures: the public functions' memref signatures (from the ABI rewrite):
            their memref arguments get ``noalias`` after ``to-llvm`` (see codegen_flags.py).
            The mapping may still be empty here and filled by the ``memref-abi`` stage.
        fastmath: ``#arith.fastmath`` flags put on float arith ops before ``to-llvm``.
        target: the CPU target; ``-mcpu`` / ``-mattr`` become function attributes.
    """
    target = Target.of(target)
    stages = [
        Stage("check-input", reject_unsupported),  # BuildError instead of an abort (guards.py)
        # partial vector writes that upstream's bufferization takes for whole ones (partial_writes.py)
        Stage("partial-writes", guard_partial_writes),
        Stage("bufferize", "eliminate-empty-tensors," + BUFFERIZE),
        Stage("deallocate", "buffer-deallocation-pipeline,convert-bufferization-to-memref"),
        Stage("simplify", "canonicalize,cse"),
        # small accumulators of reduction loops: a parallel loop around unrolled and jammed (unroll_jam.py)
        Stage("unroll-jam", functools.partial(unroll_and_jam, target=target, fastmath=check_fastmath(fastmath))),
        # accumulators hoisted into registers, contractions -> broadcast + FMA (vector_opt.py)
        Stage("vector-opt", optimize_vectors),
        Stage("threads", _threads_text(parallel)),
        Stage("loops", "convert-linalg-to-loops,fold-memref-alias-ops,lower-affine"),
        Stage("vectors", "func.func(lower-vector-multi-reduction),convert-vector-to-scf"),
        Stage("control-flow", "convert-scf-to-cf,expand-strided-metadata,lower-affine"),
        Stage("math", "math-expand-ops,convert-math-to-llvm,convert-math-to-libm"),
        Stage("fastmath", functools.partial(set_fastmath, fastmath=check_fastmath(fastmath))),
        Stage("to-llvm", _to_llvm_text(parallel)),
        Stage("checked-alloc", check_allocations),  # a failed malloc raises (alloc_check.py)
    ]
    if signatures is not None:
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


def run_stage(mod: Any, stage: Stage) -> Any:
    """Run one stage on ``mod`` (an ``mlc.Module``); return the module (graph stages may replace it)."""
    if stage.graph:
        with mlc_context():
            out = stage.passes(mod)
        return mod if out is None else out
    if isinstance(stage.passes, str):
        run_pipeline(mod.mlir_module, stage.passes, stage=stage.name)
    else:
        with mlc_context():
            stage.passes(mod.mlir_module)
    return mod


def run_stages(module: Any, stages: Sequence[Stage], *, print_after_all: bool = False,
               after_stage: Callable[[Stage, Any], None] | None = None) -> Any:
    """Run ``stages`` in order (the one runner); print the IR after each when asked.

    ``module`` is an ``mlc.Module`` or an ``ir.Module`` (then graph stages are not
    allowed); returns the module after the last stage (the same kind as given).
    ``after_stage(stage, mlc_module)`` is called after each stage (snapshots).
    """
    from ..ir import Module

    raw = isinstance(module, ir.Module)
    mod = Module(module) if raw else module
    for stage in stages:
        if raw and stage.graph:
            raise LoweringError(f"stage {stage.name!r} is a graph stage: run it on an mlc.Module")
        start = time.perf_counter()
        mod = run_stage(mod, stage)
        log.debug("stage %s done in %.1f ms", stage.name, 1e3 * (time.perf_counter() - start))
        if print_after_all:
            print_ir(stage.name, mod.script() if stage.graph else str(mod.mlir_module))
        if after_stage is not None:
            after_stage(stage, mod)
    return mod.mlir_module if raw else mod


class Compilation:
    """What the stages of one build record for the next ones and for the runtime.

    ``signatures`` (filled in place by ``memref-abi``), ``parallel`` (``threads``),
    ``plans`` (``fast-entries``); graph builds add ``graph_signatures``, ``env_calls``,
    ``optimized``, ``extent_checks`` (``lower-graph``) and ``source`` (the module the
    code generation starts from).
    """

    def __init__(self) -> None:
        self.signatures: dict[str, Any] = {}
        self.parallel = False
        self.plans: dict[str, Any] = {}
        self.graph_signatures: dict[str, Any] = {}
        self.env_calls: list[Any] = []
        self.optimized: Any = None
        self.extent_checks: dict[str, Any] = {}
        self.source: str | None = None
        self.input_functions: list[str] = []
        #: codegen options of the CPU stages (``mlc.build(fastmath=..., target=...)``)
        self.fastmath = "contract"
        self.target: Any = None

    def memref_abi(self, module: ir.Module) -> None:
        """The ABI rewrite (:func:`.abi.to_memref_abi`) as a stage: records the signatures."""
        from .abi import to_memref_abi

        self.signatures.update(to_memref_abi(module))
        if not self.signatures:
            raise BuildError("the module has no public function to compile")
        self.parallel = uses_parallel_loops(module)

    def threads(self, module: ir.Module) -> None:
        """``scf.forall`` -> OpenMP when the module has parallel loops, else sequential loops."""
        run_pipeline(module, _threads_text(self.parallel), stage="threads")

    def to_llvm(self, module: ir.Module) -> None:
        """The final conversion to the LLVM dialect (OpenMP too when parallel)."""
        run_pipeline(module, _to_llvm_text(self.parallel), stage="to-llvm")

    def fast_entries(self, module: ir.Module) -> None:
        """Builtin entries for ``rt["f"](...)`` (:mod:`.fastcall`)."""
        from .fastcall import add_entries, fast_plans

        self.plans = add_entries(module, fast_plans(self.signatures))


def codegen_stages(state: Compilation) -> list[Stage]:
    """Tensor programs -> LLVM dialect: what ``mlc.build`` and ``--mlc-lower-to-llvm`` run.

    Calls between functions are inlined first: the memref ABI changes public signatures,
    and calls returning memrefs trip the deallocation pipeline.
    """
    lazy = {"threads": state.threads, "to-llvm": state.to_llvm}
    return [Stage("inline", "inline"), Stage("memref-abi", state.memref_abi),
            *[Stage(s.name, lazy[s.name]) if s.name in lazy else s
              for s in cpu_stages(parallel=False, signatures=state.signatures, fastmath=state.fastmath,
                                  target=state.target)],
            Stage("fast-entries", state.fast_entries)]


def build_stages(state: Compilation, *, graph: bool = False, opt_level: int = 2,
                 op_map: dict | None = None, target: Any = "llvm") -> list[Stage]:
    """The whole path to the LLVM dialect as one list: graph stages (when ``graph``) + codegen.

    The graph part (``mlc.graph.build``) is :func:`mlc_mlir.graph.vm.pipeline.graph_stages`
    (verify, optimize at graph ``opt_level``, legalize, lower the graph functions).
    """
    stages: list[Stage] = []
    if graph:  # the graph layer's stages, through the view it registers (mlc_mlir.views)
        stages += graph_view().stages(state, opt_level=opt_level, op_map=op_map, target=target)
    return stages + codegen_stages(state)
