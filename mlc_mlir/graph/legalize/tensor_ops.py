"""Legalization rules of the tensor graph ops (:mod:`mlc_mlir.graph.ir.op_tensor`): each op
becomes one tensor program made by the :mod:`mlc_mlir.topi` function of the same meaning."""

from __future__ import annotations

from ... import topi
from ..builder.block_builder import BlockBuilder
from ..ir.expr import Call, Expr
from ..ir.infer_tensor import COMPARISONS, FLOAT_UNARY, REDUCTIONS
from .rule import LegalizeRule, _rule

__all__ = ["TENSOR_LEGALIZE"]

_SAME_NAME = (*COMPARISONS, *FLOAT_UNARY, "logical_not", "logical_and", "logical_or", "bitwise_and",
              "bitwise_or", "where", "power", "maximum", "minimum", "negative", "abs")

def _strided_slice(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    return bb.call_te(topi.strided_slice, call.args[0], a["begin"], a["end"], a["strides"], a["axes"],
                      primfunc_name_hint="strided_slice")


def _concat(bb: BlockBuilder, call: Call) -> Expr:
    axis = call.attrs.get("axis", 0)
    return bb.call_te(lambda *ts: topi.concatenate(ts, axis), *call.args, primfunc_name_hint="concat")


TENSOR_LEGALIZE: dict[str, LegalizeRule] = {
    **{f"mlc.{name}": _rule(getattr(topi, name), name) for name in _SAME_NAME},
    "mlc.clip": _rule(topi.clip, "clip", "min", "max"),
    "mlc.astype": _rule(topi.cast, "astype", "dtype"),
    "mlc.full_like": _rule(topi.full_like, "full_like", "fill_value", "dtype"),
    **{f"mlc.{name}": _rule(getattr(topi, name), name, "axis", "keepdims") for name in REDUCTIONS},
    "mlc.cumsum": _rule(topi.cumsum, "cumsum", "axis", "dtype"),
    "mlc.broadcast_to": _rule(topi.broadcast_to, "broadcast_to", "shape"),
    "mlc.expand_dims": _rule(topi.expand_dims, "expand_dims", "axis"),
    "mlc.squeeze": _rule(topi.squeeze, "squeeze", "axis"),
    "mlc.strided_slice": _strided_slice,
    "mlc.concat": _concat,
    "mlc.take": _rule(topi.take, "take", "axis"),
    "mlc.tril": _rule(topi.tril, "tril", "k"),
    "mlc.triu": _rule(topi.triu, "triu", "k"),
}
