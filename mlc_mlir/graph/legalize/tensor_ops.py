"""Legalization rules of the tensor graph ops (:mod:`mlc_mlir.graph.ir.op_tensor`): each op
becomes one tensor program made by the :mod:`mlc_mlir.topi` function of the same meaning."""

from __future__ import annotations

from ... import topi
from ..ir.infer_tensor import COMPARISONS, FLOAT_UNARY, REDUCTIONS
from .rule import LegalizeRule, _rule

__all__ = ["TENSOR_LEGALIZE"]

_SAME_NAME = (*COMPARISONS, *FLOAT_UNARY, "logical_not", "logical_and", "logical_or", "bitwise_and",
              "bitwise_or", "where", "power", "maximum", "minimum", "negative", "abs")

TENSOR_LEGALIZE: dict[str, LegalizeRule] = {
    **{f"mlc.{name}": _rule(getattr(topi, name), name) for name in _SAME_NAME},
    "mlc.clip": _rule(topi.clip, "clip", "min", "max"),
    "mlc.astype": _rule(topi.cast, "astype", "dtype"),
    "mlc.full_like": _rule(topi.full_like, "full_like", "fill_value", "dtype"),
    **{f"mlc.{name}": _rule(getattr(topi, name), name, "axis", "keepdims") for name in REDUCTIONS},
    "mlc.cumsum": _rule(topi.cumsum, "cumsum", "axis", "dtype"),
}
