"""The graph IR: expressions, ops and their shape rules, functions, and reading them back.

==========================  ================================================================
module                      what
==========================  ================================================================
:mod:`.expr`                ``Var``, ``DataflowVar``, ``Constant``, ``Call``, shapes, dtypes
:mod:`.op`, :mod:`.op_nn`   the graph ops (``mlc.graph.op``, ``mlc.graph.op.nn``)
:mod:`.infer`, ``infer_nn`` shape and dtype rules, one per op
:mod:`.analysis`            reading graph functions from MLIR: which, value shapes, op walks;
                            ``remove_all_unused`` (course ``relax.analysis``)
:mod:`.verify`              ``verify_graph``: what IRDL cannot check
:mod:`.function`, ``ast``   the course's AST view of a graph function (``mod["main"].body``)
:mod:`.printer`             Relax-like text (``mod.show()``)
==========================  ================================================================

The MLIR module is the source of truth; these modules build, check and read it. The
public names are exported by :mod:`mlc_mlir.graph`.
"""
