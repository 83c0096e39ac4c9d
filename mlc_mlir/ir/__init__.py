"""``mlc_mlir.ir``: the module type of the ground floor (the course's ``tvm.ir``).

:mod:`.module` holds :class:`Module` (``IRModule``) and its functions; higher layers show
themselves through it by registering a view (:mod:`mlc_mlir.views`). The course's
``tvm.ir.transform`` (``module_pass``, ``PassContext``) is the graph layer's pass
infrastructure, reached through that view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..parse_guard import MAX_NESTING, guarded_parse
from ..views import graph_view
from .module import (Function, FunctionNames, GlobalVar, IRModule, Module, Op, graph_functions,
                     is_graph_function)

__all__ = ["Module", "IRModule", "Function", "Op", "GlobalVar", "FunctionNames", "guarded_parse", "MAX_NESTING",
           "is_graph_function", "graph_functions", "transform"]

if TYPE_CHECKING:
    from ..graph.transform import pass_infra as transform
else:  # hidden from type checkers, so that a misspelt ``mlc.ir`` name is an error there

    def __getattr__(name: str):
        if name == "transform":  # the course's tvm.ir.transform.module_pass / PassContext
            return graph_view().transform
        raise AttributeError(f"module 'mlc_mlir.ir' has no attribute {name!r}")
