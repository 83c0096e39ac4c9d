"""The graph layer's ``mlc-opt`` passes (registered in :mod:`mlc_mlir.passes` on import).

- ``--mlc-verify-graph``: :func:`verify_graph` (shapes, callees, dataflow purity);
- ``--mlc-legalize-ops``: graph ops -> ``mlc.call_tir`` of ``te``-built tensor programs;
- ``--mlc-lower-graph``: graph functions -> destination-passing functions of calls (what
  ``mlc.graph.build`` compiles; tensor programs stay as separate functions here).
"""

from __future__ import annotations

from ..context import mlc_context
from ..ir import Module
from ..passes import register_pass
from .legalize import legalize
from .lower import lower_graph_functions
from .verify import verify_graph

__all__ = ["verify_graph_pass", "legalize_ops_pass", "lower_graph_pass", "GRAPH_PASSES"]


@register_pass("verify-graph", "check graph functions: shapes, callees, dataflow blocks")
def verify_graph_pass(mod: Module) -> Module:
    """Run :func:`verify_graph`; the module is returned unchanged."""
    verify_graph(mod)
    return mod


@register_pass("legalize-ops", "replace graph ops by call_tir of te-built tensor programs")
def legalize_ops_pass(mod: Module) -> Module:
    """Legalize every graph op with the default op map (in place)."""
    verify_graph(mod)
    return legalize(mod)


@register_pass("lower-graph", "lower graph functions to destination-passing functions of calls")
def lower_graph_pass(mod: Module) -> Module:
    """Lower legalized graph functions (in place) as ``mlc.graph.build`` does before compiling."""
    verify_graph(mod)
    with mlc_context():
        lower_graph_functions(mod.mlir_module)
    return mod


#: name -> pass, for callers that do not go through the registry
GRAPH_PASSES = {"verify-graph": verify_graph_pass, "legalize-ops": legalize_ops_pass,
                "lower-graph": lower_graph_pass}
