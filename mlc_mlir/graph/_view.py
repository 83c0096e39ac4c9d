"""The graph layer's view of a module, registered with the ground floor (:mod:`mlc_mlir.views`)."""

from __future__ import annotations

from ..views import GraphView, register_graph_view
from .ir.analysis import PURE_MLC_OPS
from .ir.ast import result_info
from .ir.function import Function
from .ir.printer import module_text
from .transform import pass_infra
from .vm.pipeline import graph_stages

register_graph_view(GraphView(function_class=Function, result_info=result_info, module_text=module_text,
                              op_names=PURE_MLC_OPS, transform=pass_infra, stages=graph_stages))
