"""The graph layer's registered passes (:mod:`mlc_mlir.passes`): ``mlc-opt --mlc-NAME`` and the optimization stages.

- ``--mlc-verify-graph``: :func:`verify_graph` (shapes, callees, dataflow purity);
- ``--mlc-legalize-ops``: graph ops -> ``mlc.call_tir`` of ``te``-built tensor programs;
- ``--mlc-lower-graph``: graph functions -> destination-passing functions of calls (what
  ``mlc.graph.build`` compiles; tensor programs stay as separate functions here);
- ``--mlc-rewrite-ewise-fma``: multiply + add -> ewise_fma (a Python rewrite pattern);
- ``--mlc-rewrite-reshape-unary``: reshape -> activation -> reshape back -> the activation;
- ``--mlc-rewrite-matmul-permute``: a transpose before a matmul by a matrix moved after it;
- ``--mlc-fold-constant``: fold ops of constants into constants (``FoldConstant``);
- ``--mlc-fold-batch-norm``: batch norms after constant-weight convolutions folded into them;
- ``--mlc-transpose-conv-weights``: constant conv weights stored (C, KH, KW, F) where the
  convolution's gemm takes the pixels as rows;
- ``--mlc-remove-unused``: drop bindings nothing uses (``remove_all_unused``);
- ``--mlc-fuse-dense-add``: matmul + add -> call of a primitive function (course ch.7);
- ``--mlc-fuse-ops``: group ops by pattern kind into primitive functions;
- ``--mlc-fuse-tir``: each primitive function of call_tir's -> one tensor program;
- ``--mlc-inline-graph-calls``: inline calls of graph functions (undo outlining);
- ``--mlc-optimize-graph``: the build's default pipeline (opt_level 2).
"""

from __future__ import annotations

from typing import Any

from ...context import mlc_context
from ...ir import Module
from ...passes import register_pass
from .conv_weights import transpose_in_place
from .fold_batch_norm import fold_batch_norms
from .fold_constant import fold_constants
from .fusion import FuseDenseAddPass, FuseOps, FuseTIR
from ..legalize import legalize
from .lower import lower_graph_functions
from .optimize import optimize
from .outline import inline_graph_calls
from .rewrite import ewise_fma, matmul_before_permute, unary_through_reshapes
from ..ir.analysis import remove_all_unused
from ..ir.verify import verify_graph

__all__ = ["verify_graph_pass", "legalize_ops_pass", "lower_graph_pass", "rewrite_ewise_fma_pass",
           "rewrite_reshape_unary_pass", "rewrite_matmul_permute_pass",
           "remove_unused_pass", "fuse_dense_add_pass", "fuse_ops_pass", "fuse_tir_pass",
           "inline_graph_calls_pass", "optimize_graph_pass", "fold_constant_pass", "fold_batch_norm_pass",
           "transpose_conv_weights_pass"]


@register_pass("verify-graph", "check graph functions: shapes, callees, dataflow blocks")
def verify_graph_pass(mod: Module) -> Module:
    """Run :func:`verify_graph`; the module is returned unchanged."""
    verify_graph(mod)
    return mod


@register_pass("legalize-ops", "replace graph ops by call_tir of te-built tensor programs")
def legalize_ops_pass(mod: Module, op_map: dict | None = None) -> Module:
    """Legalize every graph op (in place) with the default op map, updated with ``op_map``."""
    verify_graph(mod)
    return legalize(mod, op_map)


@register_pass("lower-graph", "lower graph functions to destination-passing functions of calls")
def lower_graph_pass(mod: Module) -> Module:
    """Lower legalized graph functions (in place) as ``mlc.graph.build`` does before compiling.

    Calls of graph functions (primitive functions FuseTIR did not merge) are inlined first.
    """
    verify_graph(mod)
    with mlc_context():
        inline_graph_calls(mod.mlir_module)
        lower_graph_functions(mod.mlir_module)
    return mod


@register_pass("rewrite-ewise-fma", "rewrite multiply + add into ewise_fma (the multiply stays)")
def rewrite_ewise_fma_pass(mod: Module) -> Module:
    """Apply the :func:`mlc_mlir.graph.transform.rewrite.ewise_fma` pattern."""
    verify_graph(mod)
    return ewise_fma(mod)


@register_pass("rewrite-reshape-unary", "an activation between a reshape and its inverse applied to the "
               "reshape's input (the reshapes stay)")
def rewrite_reshape_unary_pass(mod: Module) -> Module:
    """Apply the :func:`mlc_mlir.graph.transform.rewrite.unary_through_reshapes` pattern."""
    verify_graph(mod)
    return unary_through_reshapes(mod)


@register_pass("rewrite-matmul-permute", "a matmul by a matrix after a transpose that keeps the last dim: the "
               "transpose moved after the matmul")
def rewrite_matmul_permute_pass(mod: Module) -> Module:
    """Apply the :func:`mlc_mlir.graph.transform.rewrite.matmul_before_permute` pattern."""
    verify_graph(mod)
    return matmul_before_permute(mod)


@register_pass("remove-unused", "remove graph bindings whose values nothing uses")
def remove_unused_pass(mod: Module) -> Module:
    """:func:`remove_all_unused` on every graph function."""
    return remove_all_unused(mod)


@register_pass("fuse-dense-add", "outline matmul + add into primitive functions (course FuseDenseAddPass)")
def fuse_dense_add_pass(mod: Module) -> Module:
    """:class:`FuseDenseAddPass`."""
    return FuseDenseAddPass()(mod)


@register_pass("fuse-ops", "group graph ops by pattern kind into primitive functions")
def fuse_ops_pass(mod: Module) -> Module:
    """:class:`FuseOps`."""
    return FuseOps()(mod)


@register_pass("fuse-tir", "merge each primitive function of call_tir's into one tensor program")
def fuse_tir_pass(mod: Module) -> Module:
    """:class:`FuseTIR`."""
    return FuseTIR()(mod)


@register_pass("inline-graph-calls", "inline the calls of graph functions (primitive functions)")
def inline_graph_calls_pass(mod: Module) -> Module:
    """:func:`inline_graph_calls` (in place)."""
    with mlc_context():
        inline_graph_calls(mod.mlir_module)
    return mod


@register_pass("optimize-graph", "the default graph optimization pipeline (ewise_fma, FuseOps, "
                                 "LegalizeOps, FuseTIR)")
def optimize_graph_pass(mod: Module) -> Module:
    """:func:`mlc_mlir.graph.transform.optimize.optimize` at opt_level 2."""
    verify_graph(mod)
    return optimize(mod, opt_level=2)



@register_pass("fold-constant", "fold graph ops whose operands are all constants into constants")
def fold_constant_pass(mod: Module) -> Module:
    """:func:`~mlc_mlir.graph.transform.fold_constant.fold_constants` (in place)."""
    fold_constants(mod)
    return mod


@register_pass("fold-batch-norm", "fold inference batch norms into the constant-weight convolutions before them")
def fold_batch_norm_pass(mod: Module) -> Module:
    """:func:`~mlc_mlir.graph.transform.fold_batch_norm.fold_batch_norms` (in place)."""
    fold_batch_norms(mod)
    return mod


@register_pass("transpose-conv-weights", "constant convolution weights stored (C, KH, KW, F) behind a permute_dims "
               "where the convolution's gemm takes the output pixels as rows")
def transpose_conv_weights_pass(mod: Module, target: Any = None) -> Module:
    """:func:`~mlc_mlir.graph.transform.conv_weights.transpose_in_place` (in place; ``target``:
    whose register tile, AVX2's where none is named: ``graph.build`` names its own)."""
    transpose_in_place(mod, target)
    return mod
