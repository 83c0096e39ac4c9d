"""The pipeline's pieces: three kinds of stage, one runner, the shared state, the CPU stages.

A stage is a :class:`PassStage` (upstream pass-pipeline text), a :class:`ModuleStage` (a
Python rewrite of the MLIR module) or a :class:`GraphStage` (a graph pass on an
``mlc.Module``); :func:`run_stages` runs a list of them, and ``print_after_all=True``
dumps are labelled with their names. :class:`Compilation` is the state they share.
:func:`codegen_stages` is the CPU target's list (inline, the memref ABI rewrite,
:func:`cpu_stages`, the fast entries); the driver (:mod:`.driver`) puts the graph
layer's stages before a target's when the module holds graph functions.
"""

from __future__ import annotations

import functools
import logging
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlir import ir
from mlir.passmanager import PassManager

from ..context import mlc_context
from ..errors import BuildError, LoweringError
from ..ir import Module
from ..irutil import diagnostics_text, has_op, walk_ops
from ..log import print_ir
from ..runtime.fastcall import fast_plans
from ..target import Target
from ..runtime.signature import FuncSignature
from .abi import to_memref_abi
from .alloc_check import check_allocations
from .codegen_flags import check_fastmath, set_fastmath, set_noalias, set_target_attrs
from .fastcall import add_entries
from .guards import reject_unsupported
from .partial_writes import guard_partial_writes
from .unroll_jam import unroll_and_jam
from .kernel_calls import kernel_results_to_outputs
from .memory_plan import plan_memory
from .loop_allocs import hoist_loop_allocs
from .exp_approx import approximate_exp
from .vector_opt import optimize_vectors

__all__ = ["Stage", "PassStage", "ModuleStage", "GraphStage", "Compilation", "cpu_stages", "codegen_stages",
           "run_stage", "run_stages", "run_pipeline", "uses_parallel_loops", "INLINE", "PARTIAL_WRITES",
           "BUFFERIZE", "SIMPLIFY", "LOOPS", "VECTORS"]

log = logging.getLogger(__name__)

_BUFFERIZE = ("one-shot-bufferize{bufferize-function-boundaries=1 "
              "function-boundary-type-conversion=identity-layout-map}")


@dataclass(frozen=True)
class PassStage:
    """Upstream passes: ``pipeline`` is pass-pipeline text, run nested under ``builtin.module``."""

    name: str
    pipeline: str


@dataclass(frozen=True)
class ModuleStage:
    """A Python rewrite of the MLIR module: ``fn(ir.Module)`` changes it in place."""

    name: str
    fn: Callable[[ir.Module], object]


@dataclass(frozen=True)
class GraphStage:
    """A graph pass: ``fn(mlc.Module)`` returns a new module, or None after changing it in place."""

    name: str
    fn: Callable[[Any], Any]


#: a named step of a pipeline: one of the three kinds
Stage = PassStage | ModuleStage | GraphStage

def uses_parallel_loops(module: ir.Module) -> bool:
    """Whether the module has ``scf.forall`` / ``scf.parallel`` loops (threads needed)."""
    return has_op(module, ("scf.forall", "scf.parallel"))


#: How a parallel loop's iterations go to the threads (OpenMP ``schedule``). ``static``
#: (OpenMP's default: one contiguous half each on 2 cores) leaves a core idle whenever the
#: other runs slower, which a shared machine's cores do, by up to 1.5x, for milliseconds at a
#: time: BERT's 1024 x 3072 x 768 contraction had its worker waiting 28% of its time.
#: ``guided`` hands out chunks of what is left / threads, down to one iteration: the core
#: that finishes first takes the rest. Interleaved on 2 cores (28 Nov): that contraction
#: 20.4 -> 17.2 ms, BERT d768 at batch 8 70.3 -> 62.3 ms, ResNet-18 at batch 1 25.6 ->
#: 24.2 ms; ``dynamic`` (one iteration at a time) 27.1 ms on ResNet-18, whose loops have
#: many short iterations.
LOOP_SCHEDULE = "guided"


def _threads_text(parallel: bool) -> str:
    return ("scf-forall-to-parallel,convert-scf-to-openmp,canonicalize" if parallel
            else "scf-forall-to-for")


def _to_llvm_text(parallel: bool) -> str:
    # Buffers from aligned_alloc: LLVM knows its result aliases nothing else. malloc'ed and
    # aligned by pointer arithmetic (the default), two intermediates (a convolution band's
    # im2col and the image's result) may alias for LLVM, and the gemm's accumulators were
    # stored at every k step (ResNet-18's banded 3x3 convolution at 64 channels, batch 8,
    # 28.7 -> 14.9 ms).
    x86 = platform.machine() in ("x86_64", "AMD64")
    vector_to_llvm = "convert-vector-to-llvm{enable-x86vector=true}" if x86 else "convert-vector-to-llvm"
    return ",".join([
        vector_to_llvm, "convert-arith-to-llvm", "finalize-memref-to-llvm{use-aligned-alloc=true}",
        "convert-index-to-llvm", "convert-func-to-llvm", "convert-cf-to-llvm",
        "convert-ub-to-llvm"] + (["convert-openmp-to-llvm"] if parallel else []) +
        ["reconcile-unrealized-casts"])


# Stages the CPU and CUDA pipelines share.
INLINE = PassStage("inline", "inline")
#: partial vector writes that upstream's bufferization takes for whole ones (partial_writes.py)
PARTIAL_WRITES = ModuleStage("partial-writes", guard_partial_writes)
BUFFERIZE = PassStage("bufferize", "eliminate-empty-tensors," + _BUFFERIZE + ",drop-equivalent-buffer-results")
SIMPLIFY = PassStage("simplify", "canonicalize,cse")
LOOPS = PassStage("loops", "convert-linalg-to-loops,fold-memref-alias-ops,lower-affine")
VECTORS = PassStage("vectors", "func.func(lower-vector-multi-reduction),convert-vector-to-scf")


def cpu_stages(state: Compilation) -> list[Stage]:
    """The stages from tensor programs (after the ABI rewrite) to the LLVM dialect.

    ``state`` carries what they need: the target (``-mcpu`` / ``-mattr`` become function
    attributes), the ``#arith.fastmath`` flags, and what earlier stages record (the public
    functions' memref signatures, whose arguments get ``noalias``; whether there are
    parallel loops, lowered to OpenMP).
    """
    target, fastmath = Target.of(state.target), check_fastmath(state.fastmath)
    stages: list[Stage] = [
        ModuleStage("check-input", reject_unsupported),  # BuildError instead of an abort (guards.py)
        PARTIAL_WRITES,
        BUFFERIZE,
        # kernels kept as functions (graph builds) write their results into their outputs
        ModuleStage("kernel-results", kernel_results_to_outputs),
        PassStage("deallocate", "buffer-deallocation-pipeline,convert-bufferization-to-memref"),
        SIMPLIFY,
        # a buffer allocated per iteration of a serial loop: once around it (loop_allocs.py)
        ModuleStage("hoist-allocs", hoist_loop_allocs),
        # a graph function's intermediates share buffers (memory_plan.py)
        ModuleStage("memory-plan", state.memory_plan),
        # small accumulators of reduction loops: a parallel loop around unrolled and jammed (unroll_jam.py)
        ModuleStage("unroll-jam", functools.partial(unroll_and_jam, target=target, fastmath=fastmath)),
        # accumulators hoisted into registers, contractions -> broadcast + FMA (vector_opt.py)
        ModuleStage("vector-opt", optimize_vectors),
        ModuleStage("threads", state.threads),
        LOOPS,
        VECTORS,
        PassStage("control-flow", "convert-scf-to-cf,expand-strided-metadata,lower-affine"),
        PassStage("math-expand", "math-expand-ops"),
        # exp on vectors as a polynomial (LLVM would call expf per lane; exp_approx.py)
        ModuleStage("exp-approx", approximate_exp),
        PassStage("math", "convert-math-to-llvm,convert-math-to-libm"),
        ModuleStage("fastmath", functools.partial(set_fastmath, fastmath=fastmath)),
        ModuleStage("to-llvm", state.to_llvm),
        ModuleStage("checked-alloc", check_allocations),  # a failed malloc raises (alloc_check.py)
        ModuleStage("noalias", functools.partial(set_noalias, signatures=state.signatures)),
    ]
    if target.llvm_function_attrs()[0] is not None:
        stages.append(ModuleStage("target", functools.partial(set_target_attrs, target=target)))
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
    if isinstance(stage, GraphStage):
        with mlc_context():
            out = stage.fn(mod)
        return mod if out is None else out
    if isinstance(stage, PassStage):
        run_pipeline(mod.mlir_module, stage.pipeline, stage=stage.name)
    elif isinstance(stage, ModuleStage):
        with mlc_context():
            stage.fn(mod.mlir_module)
    else:
        raise LoweringError(f"internal: {stage!r} is not a pipeline stage")
    return mod


def run_stages(module: Any, stages: Sequence[Stage], *, print_after_all: bool = False,
               after_stage: Callable[[Stage, Any], None] | None = None) -> Any:
    """Run ``stages`` in order (the one runner); print the IR after each when asked.

    ``module`` is an ``mlc.Module`` or an ``ir.Module`` (then graph stages are not
    allowed); returns the module after the last stage (the same kind as given).
    ``after_stage(stage, mlc_module)`` is called after each stage (snapshots).
    """
    raw = isinstance(module, ir.Module)
    mod = Module(module) if raw else module
    for stage in stages:
        if raw and isinstance(stage, GraphStage):
            raise LoweringError(f"stage {stage.name!r} is a graph stage: run it on an mlc.Module")
        start = time.perf_counter()
        mod = run_stage(mod, stage)
        log.debug("stage %s done in %.1f ms", stage.name, 1e3 * (time.perf_counter() - start))
        if print_after_all:
            print_ir(stage.name, mod.script() if isinstance(stage, GraphStage) else str(mod.mlir_module))
        if after_stage is not None:
            after_stage(stage, mod)
    return mod.mlir_module if raw else mod


@dataclass
class Compilation:
    """What the stages of one build record for the next ones and for the loader: the one
    state a pipeline's stages share.

    Set by the driver: ``target``, ``fastmath``. Filled by stages: ``signatures``
    (``memref-abi``), ``parallel`` (``memref-abi``: the module has parallel loops and the
    target more than one core), ``plans`` (``fast-entries``); graph builds add ``graph_signatures``, ``env_calls``,
    ``optimized``, ``extent_checks``, ``input_functions`` (``lower-graph``), ``source``
    (the module the code generation starts from) and ``memory_plans`` (``memory-plan``).
    """

    target: Target | None = None
    fastmath: str = "contract"
    signatures: dict[str, FuncSignature] = field(default_factory=dict)
    parallel: bool = False
    plans: dict[str, Any] = field(default_factory=dict)
    graph_signatures: dict[str, Any] = field(default_factory=dict)
    env_calls: list[Any] = field(default_factory=list)
    optimized: Any = None
    extent_checks: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    input_functions: list[str] = field(default_factory=list)
    memory_plans: dict[str, Any] = field(default_factory=dict)

    def memref_abi(self, module: ir.Module) -> None:
        """The ABI rewrite (:func:`.abi.to_memref_abi`) as a stage: records the signatures."""
        self.signatures.update(to_memref_abi(module))
        if not self.signatures:
            raise BuildError("the module has no public function to compile")
        # (a one-core target's scf.forall loops run serially: the default rules keep a panel
        # epilogue's loop one there, whose bufferization gives each iteration a buffer of its own)
        self.parallel = uses_parallel_loops(module) and (self.target is None or Target.of(self.target).num_cores > 1)

    def memory_plan(self, module: ir.Module) -> None:
        """Graph functions' intermediates in shared buffers (:func:`.memory_plan.plan_memory`)."""
        self.memory_plans.update(plan_memory(module, Target.of(self.target).num_cores))

    def threads(self, module: ir.Module) -> None:
        """``scf.forall`` -> OpenMP when ``parallel`` (parallel loops and a target of more than
        one core, ``memref-abi``), else sequential loops; the OpenMP loops get
        :data:`LOOP_SCHEDULE`."""
        run_pipeline(module, _threads_text(self.parallel), stage="threads")
        if self.parallel:
            schedule = ir.Attribute.parse(f"#omp<schedulekind {LOOP_SCHEDULE}>")
            for loop in walk_ops(module.operation, ("omp.wsloop",)):
                if "schedule_kind" not in loop.attributes:
                    loop.attributes["schedule_kind"] = schedule

    def to_llvm(self, module: ir.Module) -> None:
        """The final conversion to the LLVM dialect (OpenMP too when parallel)."""
        run_pipeline(module, _to_llvm_text(self.parallel), stage="to-llvm")

    def fast_entries(self, module: ir.Module) -> None:
        """Builtin entries for ``rt["f"](...)`` (:mod:`.fastcall`)."""
        self.plans = add_entries(module, fast_plans(self.signatures))


def codegen_stages(state: Compilation) -> list[Stage]:
    """Tensor programs -> LLVM dialect: the CPU target's stages (``mlc.build``, the code
    generation of ``mlc.graph.build``, ``--mlc-lower-to-llvm``).

    Calls between functions are inlined first: the memref ABI changes public signatures,
    and calls returning memrefs trip the deallocation pipeline.
    """
    return [INLINE, ModuleStage("memref-abi", state.memref_abi), *cpu_stages(state),
            ModuleStage("fast-entries", state.fast_entries)]
