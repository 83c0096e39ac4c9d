"""The default graph optimization pipeline (what ``mlc.graph.build(opt_level=...)`` runs).

One list of named stages, read top to bottom; each is the pass registered under its name
(:mod:`.passes`, the same one ``mlc-opt --mlc-NAME`` runs):

=====================  =========  ==================================================
stage                  opt_level  what
=====================  =========  ==================================================
``rewrite-ewise-fma``  >= 2       multiply + add -> ewise_fma (:mod:`.rewrite`)
``rewrite-reshape-     >= 2       reshape -> activation -> reshape back ->
unary``                           the activation (:mod:`.rewrite`)
``remove-unused``      >= 2       drop the bindings the rewrites left dead
``fold-batch-norm``    >= 1       conv2d + batch_norm -> conv2d of scaled weights + bias
``fold-constant``      >= 1       ops of constants -> constants (:mod:`.fold_constant`)
``transpose-conv-      >= 2       constant conv weights stored (C, KH, KW, F) where the
weights``                         pixels are the gemm's rows (:mod:`.conv_weights`)
``fuse-ops``           >= 1       group ops into primitive functions (FuseOps)
``legalize-ops``       >= 1       graph ops -> call_tir of tensor programs
``fuse-tir``           >= 1       each primitive function -> one tensor program
=====================  =========  ==================================================

``opt_level=0`` runs nothing: the build legalizes op by op, one kernel per op.
"""

from __future__ import annotations

import logging
from typing import Any

from ...compiler.pipeline import GraphStage, Stage, run_stages
from ...errors import GraphError
from ...ir import Module
from ...passes import get_pass
from ..ir.analysis import clone_module, graph_functions, walk_ops
from ..legalize import LegalizeRule

__all__ = ["optimization_stages", "optimize", "count_kernels", "MAX_OPT_LEVEL"]

log = logging.getLogger("mlc_mlir.graph.optimize")  # the name it had before graph/ was split

MAX_OPT_LEVEL = 3


def optimization_stages(opt_level: int, op_map: dict[str, LegalizeRule] | None = None,
                        target: Any = None) -> list[Stage]:
    """The graph stages (:class:`~mlc_mlir.compiler.pipeline.Stage`) of ``opt_level`` (0 to 3), in order
    (``target``: the CPU target whose register tile the convolution weights are laid out for)."""
    if not isinstance(opt_level, int) or isinstance(opt_level, bool) or not 0 <= opt_level <= MAX_OPT_LEVEL:
        raise GraphError(f"opt_level must be an int from 0 to {MAX_OPT_LEVEL}, got {opt_level!r}")
    names: list[str] = []
    if opt_level >= 2:
        names += ["rewrite-ewise-fma", "rewrite-reshape-unary", "rewrite-matmul-permute", "remove-unused"]
    if opt_level >= 1:
        names += ["fold-batch-norm", "fold-constant"]
    if opt_level >= 2:
        names += ["transpose-conv-weights"]
    if opt_level >= 1:
        names += ["fuse-ops", "legalize-ops", "fuse-tir"]
    options: dict[str, dict[str, Any]] = {"legalize-ops": {"op_map": op_map}} if op_map else {}
    if target is not None:
        options["transpose-conv-weights"] = {"target": target}
    # the passes of the one registry (what mlc-opt --mlc-NAME runs), in place on the build's copy
    return [GraphStage(n, get_pass(n, **options.get(n, {})).run) for n in names]


def optimize(mod: Module, *, opt_level: int = 2, op_map: dict[str, LegalizeRule] | None = None,
             print_after_all: bool = False) -> Module:
    """Run the stages of ``opt_level`` on a copy of ``mod``.

    Args:
        mod: graph functions and tensor programs.
        opt_level: 0 (nothing), 1 (fusion), 2 or 3 (fusion after the ewise_fma rewrite).
        op_map: extra legalization rules (see ``LegalizeOps``).
        print_after_all: print the module after each stage to stderr.

    Returns:
        The optimized copy (``mod`` itself is left untouched).
    """
    stages = optimization_stages(opt_level, op_map)
    out = run_stages(clone_module(mod), stages, print_after_all=print_after_all)
    log.debug("graph optimization (opt_level %d) done: %d kernels", opt_level, count_kernels(out))
    return out


def count_kernels(mod: Module) -> int:
    """How many tensor programs the graph functions of ``mod`` call (``mlc.call_tir`` ops)."""
    return sum(1 for f in graph_functions(mod.mlir_module) for o in walk_ops(f) if o.name == "mlc.call_tir")
