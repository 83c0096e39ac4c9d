"""``call_dps_packed`` of a tensor program of the module (course ch.3).

The course writes ``R.call_dps_packed("linear0", (x, w0, b0), ...)`` where ``linear0`` is
a ``T.prim_func`` of the same module: TVM finds the compiled function by name. Here an
``mlc.call_dps`` whose callee is not a registered environment function but names a
tensor program of the module becomes the equivalent ``mlc.call_tir`` (``graph.build``
does this first), so the course's module runs as written.
"""

from __future__ import annotations

from mlir import ir

from ...irutil import symbol_ops
from ...context import mlc_context
from ...ir import Module
from ...runtime import list_funcs
from ..ir.analysis import graph_functions, is_graph_function, walk_ops

__all__ = ["resolve_packed_calls"]


def _tensor_programs(mod: Module) -> set[str]:
    return {name for name, op in symbol_ops(mod.mlir_module, defined=True).items() if not is_graph_function(op)}


def _targets(mod: Module) -> list[ir.Operation]:
    programs = _tensor_programs(mod)
    registered = set(list_funcs())
    out = []
    for fop in graph_functions(mod.mlir_module):
        for op in walk_ops(fop):
            if op.name == "mlc.call_dps":
                name = ir.StringAttr(op.attributes["callee"]).value
                if name in programs and name not in registered:
                    out.append(op)
    return out


def resolve_packed_calls(mod: Module) -> Module:
    """``mod``, or a copy whose ``call_dps_packed`` calls of its own tensor programs are
    ``call_tir`` calls (a registered environment function of the same name wins)."""
    with mlc_context():
        if not _targets(mod):
            return mod
        work = mod.clone()
        for op in _targets(work):
            attrs = {name: op.attributes[name] for name in op.attributes}
            attrs["callee"] = ir.FlatSymbolRefAttr.get(ir.StringAttr(attrs["callee"]).value)
            with ir.InsertionPoint(op):
                new = ir.Operation.create("mlc.call_tir", results=[op.results[0].type],
                                          operands=list(op.operands), attributes=attrs, loc=op.location)
            op.results[0].replace_all_uses_with(new.results[0])
            op.erase()
        return work
