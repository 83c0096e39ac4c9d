"""Legalization rules of the tensor graph ops (:mod:`mlc_mlir.graph.ir.op_tensor`)."""

from __future__ import annotations

from ... import topi
from .rule import LegalizeRule, _rule

__all__ = ["TENSOR_LEGALIZE"]

TENSOR_LEGALIZE: dict[str, LegalizeRule] = {}
