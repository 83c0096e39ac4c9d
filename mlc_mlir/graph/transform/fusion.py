"""The fusion passes of ``mlc.graph.transform``: FuseDenseAddPass, FuseOps, FuseTIR.

Each is a callable ``Module -> Module`` (the input is left untouched); the work is done
by :mod:`.fuse_ops`, :mod:`.fuse_tir` and a rewrite pattern (:mod:`.rewrite`).
"""

from __future__ import annotations

import itertools

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Module
from . import rewrite
from ..ir.analysis import clone_module, remove_all_unused
from .fuse_ops import fuse_ops
from .fuse_tir import fuse_tir
from .pass_infra import PassInfo
from ..ir.verify import verify_graph

__all__ = ["FuseDenseAddPass", "FuseOps", "FuseTIR", "dense_add_pattern"]


def _check(mod: object, what: str) -> Module:
    if not isinstance(mod, Module):
        raise GraphError(f"{what} expects an mlc.Module, got {type(mod).__name__}")
    return mod


def dense_add_pattern() -> rewrite.Pattern:
    """The rewrite pattern of :class:`FuseDenseAddPass` (its own ``fused_matmul_add<k>`` counter)."""
    counter = itertools.count()

    @rewrite.pattern("add", name="fuse_dense_add")
    def fuse_dense_add(add: rewrite.Node, rw: rewrite.Rewriter) -> rewrite.Node | None:
        for mm in add.args:
            if mm.op == "matmul" and mm.num_users == 1 and mm.block == add.block:
                return rw.outline([mm, add], f"fused_matmul_add{next(counter)}", param_names=("x", "w", "b"))
        return None

    return fuse_dense_add


class FuseDenseAddPass:
    """Fuse ``add(matmul(x, w), b)`` into a call of a primitive function (course ch.7).

    A rewrite pattern on ``mlc.add`` (run by MLIR's greedy driver) whose operand is a
    matmul used only there, in the same block: both ops move into a new private function
    ``fused_matmul_add<k>`` marked ``mlc.primitive``, called with ``func.call``; the dead
    matmul is then removed (``remove_all_unused``). Primitive functions are not visited.

    Before (``tests/lit/graph/fuse_dense_add.mlir``)::

        %0 = "mlc.permute_dims"(%w0) {axes = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
        %1 = "mlc.matmul"(%x, %0) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
        %2 = "mlc.add"(%1, %b0) : (tensor<1x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>

    After::

        func.func private @fused_matmul_add0(%x: tensor<1x8xf32> {mlc.name = "x"},
            %w: tensor<8x16xf32> {mlc.name = "w"}, %b: tensor<16xf32> {mlc.name = "b"})
            -> tensor<1x16xf32> attributes {mlc.graph, mlc.primitive} {
          %1 = "mlc.matmul"(%x, %w) : ...
          %2 = "mlc.add"(%1, %b) : ...
          return %2 : tensor<1x16xf32>
        }
        ...
        %0 = "mlc.permute_dims"(%w0) ...
        %2 = func.call @fused_matmul_add0(%x, %0, %b0) : (tensor<1x8xf32>, tensor<8x16xf32>,
            tensor<16xf32>) -> tensor<1x16xf32>
    """

    info = PassInfo("FuseDenseAdd", 2)

    def __call__(self, mod: Module) -> Module:
        """A copy of ``mod`` with every matmul + add pair outlined."""
        _check(mod, "FuseDenseAddPass")
        verify_graph(mod)
        return remove_all_unused(rewrite.apply_patterns(mod, [dense_add_pattern()]))


class FuseOps:
    """Group the ops of each dataflow block by pattern kind into primitive functions.

    See :mod:`mlc_mlir.graph.transform.fuse_ops` for the rules: elementwise/broadcast/injective
    chains fuse; elementwise ops after a matmul join it; a value with several users,
    ``call_dps``, ``softmax`` and anything outside a dataflow block are never fused;
    groups of one op stay as they are.

    Before (``tests/lit/graph/fuse_ops.mlir``)::

        %lv0 = "mlc.matmul"(%x, %w) : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
        %lv1 = "mlc.add"(%lv0, %b) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
        %lv2 = "mlc.relu"(%lv1) : (tensor<2x8xf32>) -> tensor<2x8xf32>

    After::

        func.func private @fused_matmul_add_relu(%x: ..., %w: ..., %b: ...) -> tensor<2x8xf32>
            attributes {mlc.graph, mlc.primitive} { mlc.matmul, mlc.add, mlc.relu; return }
        ...
        %lv2 = func.call @fused_matmul_add_relu(%x, %w, %b) : (...) -> tensor<2x8xf32>
    """

    info = PassInfo("FuseOps", 1)

    def __call__(self, mod: Module) -> Module:
        """A copy of ``mod`` with its dataflow blocks fused."""
        _check(mod, "FuseOps")
        verify_graph(mod)
        work = clone_module(mod)
        with mlc_context():
            fuse_ops(work.mlir_module)
        return work


class FuseTIR:
    """Turn each primitive function (after ``LegalizeOps``) into one tensor program.

    See :mod:`mlc_mlir.graph.transform.fuse_tir`: the tensor programs it calls are inlined into
    one function (intermediates become ``tensor.empty``), elementwise producers are
    merged into their consumers, and the graph calls the result with one ``call_tir``.

    Before (``@matmul``, ``@add``, ``@relu`` are tensor programs; ``tests/lit/graph/fuse_tir.mlir``)::

        func.func private @fused_matmul_add_relu(...) attributes {mlc.graph, mlc.primitive} {
          %lv0 = "mlc.call_tir"(%x, %w) {callee = @matmul} ...
          %lv1 = "mlc.call_tir"(%lv0, %b) {callee = @add} ...
          %lv2 = "mlc.call_tir"(%lv1) {callee = @relu} ...
        ...
        %lv2 = func.call @fused_matmul_add_relu(%x, %w, %b) ...

    After::

        func.func @fused_matmul_add_relu(%x, %w, %b, %out0: tensor<2x8xf32> {mlc.name = "out0"})
            -> tensor<2x8xf32> attributes {mlc.prim_func} {
          %e = tensor.empty() : tensor<2x8xf32>
          %f = linalg.fill {mlc.block_init = "matmul"} ins(%cst : f32) outs(%e : tensor<2x8xf32>)
          %mm = linalg.generic {...} ins(%x, %w ...) outs(%f ...) attrs = {mlc.block = "matmul"}
          %r = linalg.generic {...} ins(%mm, %b ...) outs(%out0 ...) attrs = {mlc.block = "relu"}  // add + relu
          return %r
        ...
        %lv2 = "mlc.call_tir"(%x, %w, %b) {callee = @fused_matmul_add_relu, ...} ...
    """

    info = PassInfo("FuseTIR", 0)

    def __call__(self, mod: Module) -> Module:
        """A copy of ``mod`` whose primitive functions are tensor programs."""
        _check(mod, "FuseTIR")
        verify_graph(mod)
        work = clone_module(mod)
        with mlc_context():
            fuse_tir(work.mlir_module)
        return work
