"""Legalization: graph ops to calls of tensor programs built with ``te`` (``LegalizeOps``).

Each rule of an op map receives the builder and the op as a :class:`Call` whose
arguments are variables of the op's operand shapes, and returns the replacement
expression, usually ``bb.call_te(te_fn, *call.args)`` (course ch.7, ``LowerToTensorIR``):

    def map_relu(bb, call):
        return bb.call_te(te_relu, call.args[0])

    mlc.graph.transform.LegalizeOps({"mlc.relu": map_relu})(mod)

:data:`DEFAULT_OP_MAP` (:mod:`.op_map`) covers every graph op of the dialect; a user map
overrides or extends it (keys ``"mlc.relu"`` or ``"relu"``). :class:`LegalizeOps` is the pass
form (``mlc.graph.transform.LegalizeOps``): a copy of the module, the input left untouched.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import tensor

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Module
from ..builder.block_builder import BlockBuilder
from ..builder.emit import Emitter
from ..ir.analysis import clone_module, fail, graph_functions, op_attrs, value_shapes, walk_ops
from ..ir.expr import Call, Expr, Var
from .op_map import (DEFAULT_OP_MAP, LegalizeRule, normalize_op_map, te_binary, te_ewise_fma, te_matmul,
                     te_permute_dims, te_relu, te_reshape, te_softmax)

__all__ = ["LegalizeOps", "legalize", "DEFAULT_OP_MAP", "LegalizeRule", "normalize_op_map", "te_matmul",
           "te_binary", "te_relu", "te_ewise_fma", "te_permute_dims", "te_reshape", "te_softmax"]


class LegalizeOps:
    """Replace graph ops by ``mlc.call_tir`` of tensor programs made with ``te``.

    Args:
        op_map: rules that override or extend the defaults, ``"mlc.relu"`` (or
            ``"relu"``, or the course's ``"relax.nn.relu"``) -> ``fn(bb, call) -> expr``;
            see :mod:`mlc_mlir.graph.legalize`.

    Primitive (fused) functions are legalized too: after ``FuseOps`` they become chains
    of ``call_tir`` that ``FuseTIR`` merges.

    Before::

        %lv0 = "mlc.relu"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>

    After (plus ``func.func @relu(%a, %out) attributes {mlc.prim_func}`` in the module)::

        %lv0 = "mlc.call_tir"(%x) {callee = @relu, ...} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    """

    def __init__(self, op_map: dict[str, LegalizeRule] | None = None):
        self.op_map = normalize_op_map(op_map)

    def __call__(self, mod: Module) -> Module:
        """A copy of ``mod`` with every graph op legalized."""
        if not isinstance(mod, Module):
            raise GraphError(f"LegalizeOps expects an mlc.Module, got {type(mod).__name__}")
        work = clone_module(mod)
        return legalize(work, self.op_map)


def legalize(mod: Module, op_map: dict[str, LegalizeRule] | None = None) -> Module:
    """Replace every graph op of ``mod`` (in place) by the expression its rule returns.

    Returns:
        ``mod``, whose graph functions now call tensor programs (added to the module).

    Raises:
        GraphError: a rule that fails or returns something that is not a graph expression.
    """
    rules = normalize_op_map(op_map)
    bb = BlockBuilder(mod)
    with mlc_context():
        for fop in graph_functions(mod.mlir_module):
            shapes = value_shapes(fop)
            for op in walk_ops(fop):
                if op.name in rules:
                    _legalize_op(bb, op, rules[op.name], shapes)
    return mod


def _legalize_op(bb: BlockBuilder, op: ir.Operation, rule: LegalizeRule,
                 shapes: dict[ir.Value, tuple]) -> None:
    args = []
    for i, v in enumerate(op.operands):
        shape, dtype = shapes[v]
        var = Var("abcdefgh"[i] if i < 8 else f"x{i}", shape, dtype)
        args.append(var)
    res_shape, res_dtype = shapes[op.results[0]]
    call = Call(op.name[4:], args, op_attrs(op, res_shape), res_shape, res_dtype)
    with bb._rewriting(op.name):
        try:
            new = rule(bb, call)
        except GraphError as exc:
            raise fail(op, f"legalization failed: {exc}") from exc
    if not isinstance(new, Expr):
        raise fail(op, f"legalization rule {getattr(rule, '__name__', rule)} returned "
                       f"{type(new).__name__}, not a graph expression")
    with ir.InsertionPoint(op), op.location:
        emitter = Emitter({id(a): v for a, v in zip(args, op.operands)}, func_name=op.name)
        value = emitter.value(new)
        old_type = op.results[0].type
        if str(value.type) != str(old_type):
            value = tensor.CastOp(old_type, value).result
    shapes[value] = shapes[op.results[0]]
    op.results[0].replace_all_uses_with(value)
    op.erase()
