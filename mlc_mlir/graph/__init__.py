"""Graphs (the course's Relax): graph functions of ``mlc`` ops, their builder and execution.

    bb = mlc.graph.BlockBuilder()            # write graph functions (builder/)
    ex = mlc.graph.build(mod, "llvm")        # compile them (vm/)
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    out = vm["main"](x)

The subpackages, in the order a graph goes through them:

==============  ==========================================================================
``ir/``         expressions, ops (``mlc.graph.op``) and shape rules, analysis
                (``remove_all_unused``), verify, AST
``builder/``    ``BlockBuilder``, emitting ``mlc`` ops, ``emit_te`` (te -> tensor program),
                ``PyExprMutator``
``transform/``  passes (``mlc.graph.transform``), the default optimization, pattern rewrites
                (``mlc.graph.rewrite``), fusion, lowering; graph passes for ``mlc-opt``
``legalize/``   graph ops -> ``call_tir`` of ``te`` programs (``LegalizeOps``, op map)
``vm/``         the graph stages of the build pipeline, ``build``, ``VirtualMachine``
==============  ==========================================================================
"""

from ..ir import GlobalVar, Op
from .builder import BlockBuilder, expr_functor
from .builder.expr_functor import PyExprMutator, mutator
from .ir import analysis, op
from .ir.ast import BindingBlock, DataflowBlock, SeqExpr, VarBinding
from .ir.expr import Call, Constant, DataflowVar, Expr, TensorStructInfo, Var, const
from .ir.function import Function
from .ir.verify import verify_graph
from .legalize import DEFAULT_OP_MAP, legalize
from . import transform
from .transform import rewrite
from .transform.lower import lower_graph_functions
from .transform.optimize import count_kernels, optimize
from .vm import Executable, GraphFunction, VirtualMachine, build
from . import _view  # noqa: F401 - registers the graph layer's view of a module (mlc_mlir.views)

__all__ = ["Op", "GlobalVar", "BlockBuilder", "Var", "DataflowVar", "const", "Expr", "Call", "Constant", "op", "transform", "rewrite",
           "optimize", "count_kernels", "verify_graph", "legalize", "DEFAULT_OP_MAP",
           "lower_graph_functions", "build", "Executable", "VirtualMachine", "GraphFunction",
           "Function", "TensorStructInfo", "PyExprMutator", "mutator", "expr_functor", "analysis",
           "SeqExpr", "BindingBlock", "DataflowBlock", "VarBinding"]
