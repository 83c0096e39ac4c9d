"""Graphs (the course's Relax): graph functions of ``mlc`` ops, their builder and execution.

    bb = mlc.graph.BlockBuilder()            # write graph functions (builder.py)
    ex = mlc.graph.build(mod, "llvm")        # compile them (vm.py)
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    out = vm["main"](x)

Ops live in :mod:`mlc_mlir.graph.op`, passes in :mod:`mlc_mlir.graph.transform`,
pattern rewriting in :mod:`mlc_mlir.graph.rewrite`.
"""

from . import analysis, expr_functor, op, rewrite, transform
from .ast import BindingBlock, DataflowBlock, SeqExpr, VarBinding
from .builder import BlockBuilder
from .expr import Call, Constant, Expr, TensorStructInfo, Var, const
from .expr_functor import PyExprMutator, mutator
from .function import Function
from .legalize import DEFAULT_OP_MAP, legalize
from .lower import lower_graph_functions
from .optimize import count_kernels, optimize
from .verify import verify_graph
from .vm import Executable, GraphFunction, VirtualMachine, build

__all__ = ["BlockBuilder", "Var", "const", "Expr", "Call", "Constant", "op", "transform", "rewrite",
           "optimize", "count_kernels", "verify_graph", "legalize", "DEFAULT_OP_MAP",
           "lower_graph_functions", "build", "Executable", "VirtualMachine", "GraphFunction",
           "Function", "TensorStructInfo", "PyExprMutator", "mutator", "expr_functor", "analysis",
           "SeqExpr", "BindingBlock", "DataflowBlock", "VarBinding"]
