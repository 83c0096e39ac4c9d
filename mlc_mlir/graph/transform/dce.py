"""``remove_all_unused``: dead binding elimination for graph functions.

IRDL ops always count as side-effecting, so MLIR's own dead code elimination
(canonicalize, CSE, the greedy rewrite driver) never erases an ``mlc`` op. This pass
knows which ones are pure: graph ops, ``mlc.constant``, ``mlc.call_tir``,
``mlc.call_dps`` (a destination-passing call only writes its own output), calls of
graph functions, and the ops of the pure upstream dialects (``arith``, ``tensor``...).
``mlc.alloc_tensor`` and the dataflow structure (``mlc.dataflow``, ``mlc.output``) stay.
"""

from __future__ import annotations

from typing import overload

from mlir import ir

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Function, Module
from ..ir.analysis import PURE_MLC_OPS, clone_module, func_name, graph_functions, is_graph_function, walk_ops
from ..ir.verify import PURE_DIALECTS

__all__ = ["remove_all_unused", "remove_unused_ops"]


def _removable(op: ir.Operation, graph_funcs: set[str]) -> bool:
    name = op.name
    if name.startswith("mlc."):
        return name[4:] in PURE_MLC_OPS
    if name == "func.call":
        return ir.FlatSymbolRefAttr(op.attributes["callee"]).value in graph_funcs
    return name.split(".", 1)[0] in PURE_DIALECTS and not op.regions


def remove_unused_ops(fop: ir.Operation, graph_funcs: set[str]) -> int:
    """Erase pure ops of ``fop`` whose results nothing uses (in place); returns how many."""
    removed = 0
    changed = True
    while changed:
        changed = False
        for op in reversed(walk_ops(fop)):
            if op.results and _removable(op, graph_funcs) and all(not list(r.uses) for r in op.results):
                op.erase()
                removed += 1
                changed = True
    return removed


@overload
def remove_all_unused(func_or_mod: Module) -> Module: ...
@overload
def remove_all_unused(func_or_mod: Function) -> Function: ...
def remove_all_unused(func_or_mod: Module | Function) -> Module | Function:
    """Remove the bindings whose values nothing uses (course ``relax.analysis.remove_all_unused``).

    Args:
        func_or_mod: a module (every graph function is cleaned) or one function of a module.

    Returns:
        A cleaned copy: a :class:`Module`, or the :class:`Function` of the same name in a
        copy of its module. The input is not modified.

    Before (after the ewise_fma rewrite, ``lv0`` is dead)::

        %lv0 = "mlc.multiply"(%x, %y) : ...
        %lv1 = "mlc.ewise_fma"(%x, %y, %y) : ...
        "mlc.output"(%lv1) ...

    After::

        %lv1 = "mlc.ewise_fma"(%x, %y, %y) : ...
        "mlc.output"(%lv1) ...

    Raises:
        GraphError: the argument is neither a module nor a function of one.
    """
    if isinstance(func_or_mod, Module):
        work = clone_module(func_or_mod)
        with mlc_context():
            names = _graph_names(work)
            for fop in graph_functions(work.mlir_module):
                remove_unused_ops(fop, names)
        return work
    if isinstance(func_or_mod, Function):
        work = clone_module(func_or_mod.module)
        fn = work[func_or_mod.name]
        with mlc_context():
            if not is_graph_function(fn.op):
                raise GraphError(f"remove_all_unused: @{fn.name} is not a graph function")
            remove_unused_ops(fn.op, _graph_names(work))
        return fn
    raise GraphError(f"remove_all_unused expects an mlc.Module or a Function of one, got "
                     f"{type(func_or_mod).__name__}")


def _graph_names(mod: Module) -> set[str]:
    return {func_name(f) for f in graph_functions(mod.mlir_module)}
