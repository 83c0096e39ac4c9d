"""Graphs (the course's Relax): graph functions of ``mlc`` ops, their builder and execution.

    bb = mlc.graph.BlockBuilder()            # write graph functions (builder.py)
    ex = mlc.graph.build(mod, "llvm")        # compile them (vm.py)
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    out = vm["main"](x)

Ops live in :mod:`mlc_mlir.graph.op`, passes in :mod:`mlc_mlir.graph.transform`.
"""

from . import op, transform
from .builder import BlockBuilder
from .expr import Call, Constant, Expr, Var, const
from .legalize import DEFAULT_OP_MAP, legalize
from .lower import lower_graph_functions
from .verify import verify_graph
from .vm import Executable, GraphFunction, VirtualMachine, build

__all__ = ["BlockBuilder", "Var", "const", "Expr", "Call", "Constant", "op", "transform",
           "verify_graph", "legalize", "DEFAULT_OP_MAP", "lower_graph_functions", "build",
           "Executable", "VirtualMachine", "GraphFunction"]
