"""The graph stages of the build pipeline (what ``mlc.graph.build`` runs before code generation).

=======================  ==============================================================
stage                    what
=======================  ==============================================================
``resolve-packed-calls`` ``call_dps_packed`` of the module's own tensor programs -> ``call_tir``
``verify-graph``         :func:`..ir.verify.verify_graph` (environment functions registered)
optimization stages      :func:`..transform.optimize.optimization_stages` (graph ``opt_level``)
``inline-graph-calls``   primitive functions FuseTIR did not turn into tensor programs
``legalize``             the remaining graph ops -> ``call_tir`` (:mod:`..legalize`)
``dedupe-kernels``       tensor programs identical up to their name become one (:mod:`..transform.dedupe`)
``mark-reshapes``        (CPU) tensor programs that only reshape, called as views at lowering (:mod:`..transform.reshape_view`)
``default-schedule``     (CPU) rule-based schedules from the target (:mod:`mlc_mlir.schedule.rules`)
``gpu-schedule``         (cuda) default GPU schedules (:mod:`mlc_mlir.schedule.gpu_rules`)
``lower-graph``          graph functions -> destination-passing functions (:mod:`..transform.lower`)
``graph-inline``         tensor programs inlined into them, unused ones dropped
=======================  ==============================================================

Code generation follows (:func:`mlc_mlir.compiler.pipeline.codegen_stages`).
"""

from __future__ import annotations

from typing import Any

from ...compiler.pipeline import Compilation, GraphStage, ModuleStage, PassStage, Stage
from ...errors import GraphError
from ...ir import Module
from ...schedule import rules
from ...schedule.gpu_rules import default_gpu_schedule
from ..ir.analysis import clone_module
from ..legalize import legalize
from ..transform.dedupe import dedupe_kernels
from ..transform.dps_packed import resolve_packed_calls
from ..transform.reshape_view import mark_reshape_views
from ..transform.lower import lower_graph_functions
from ..transform.optimize import optimization_stages
from ..transform.outline import inline_graph_calls
from ..ir.verify import verify_graph
from .vm_build import static_extent_checks

__all__ = ["graph_stages"]


def _verify(state: Compilation):
    def run(mod: Module) -> None:
        verify_graph(mod, check_env=True)
        state.input_functions = list(mod.functions)

    return run


def _legalize(op_map: dict | None):
    def run(mod: Module) -> Module:
        return legalize(mod, op_map)

    return run


def _default_schedule(target: Any, opt_level: int):
    def run(mod: Module) -> Module:
        return rules.graph_default_schedule(mod, target, opt_level)  # target-chosen schedules

    return run


def _gpu_schedule(mod: Module) -> Module:
    return default_gpu_schedule(mod)


def _lower(state: Compilation, gpu_target: str | None):
    def run(mod: Module) -> None:
        state.optimized = clone_module(mod)
        state.extent_checks = static_extent_checks(state.optimized.mlir_module)
        state.graph_signatures, state.env_calls = lower_graph_functions(mod.mlir_module, keep_kernels=gpu_target is None)
        if not state.graph_signatures:
            raise GraphError(f"graph.build: the module has no graph function (functions: "
                             f"{state.input_functions}); "
                             "use mlc.build for tensor programs alone")
        if gpu_target is not None and state.env_calls:
            raise GraphError(f"graph.build(target={gpu_target!r}): environment functions "
                             f"{sorted({c.name for c in state.env_calls})} run Python on the host, which the "
                             "cuda build does not support; legalize them into tensor programs (op_map)")
        state.source = mod.script()

    return run


def graph_stages(state: Compilation, *, opt_level: int = 2, op_map: dict | None = None,
                 gpu_target: str | None = None, target: Any = "llvm") -> list[Stage]:
    """The graph stages of the build, in order.

    ``target``: the CPU target of the default schedules; ``gpu_target``: a cuda build
    (default GPU schedules instead).
    """
    return [
        # call_dps_packed("linear0", ...) of a tensor program of the module -> call_tir
        GraphStage("resolve-packed-calls", resolve_packed_calls),
        GraphStage("verify-graph", _verify(state)),
        # (weights laid out for the CPU rules' convolution strategy: not for the GPU rules)
        *[s for s in optimization_stages(opt_level, op_map, None if gpu_target is not None else target)
          if gpu_target is None or s.name != "transpose-conv-weights"],
        ModuleStage("inline-graph-calls", inline_graph_calls),
        GraphStage("legalize", _legalize(op_map)),
        # tensor programs identical up to their name (a repeated layer shape): scheduled and compiled once
        GraphStage("dedupe-kernels", dedupe_kernels),
        # (the CPU build's lowering calls a reshape as a view of its input: not the GPU's)
        *([] if gpu_target is not None else [ModuleStage("mark-reshapes", mark_reshape_views)]),
        (GraphStage("gpu-schedule", _gpu_schedule) if gpu_target is not None
         else GraphStage("default-schedule", _default_schedule(target, opt_level))),
        GraphStage("lower-graph", _lower(state, gpu_target)),
        PassStage("graph-inline", "inline,symbol-dce"),
    ]
