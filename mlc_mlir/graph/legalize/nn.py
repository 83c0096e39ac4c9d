"""Legalization rules of the neural-network graph ops (:mod:`mlc_mlir.graph.ir.op_nn`)."""

from __future__ import annotations

from ... import topi
from .rule import LegalizeRule, _rule

__all__ = ["NN_LEGALIZE"]

NN_LEGALIZE: dict[str, LegalizeRule] = {
    "mlc.conv2d": _rule(topi.nn.conv2d, "conv2d", "strides", "padding", "dilation"),
    "mlc.max_pool2d": _rule(topi.nn.max_pool2d, "max_pool2d", "pool_size", "strides", "dilation"),
    "mlc.batch_norm": _rule(topi.nn.batch_norm, "batch_norm", "axis", "epsilon"),
    "mlc.layer_norm": _rule(topi.nn.layer_norm, "layer_norm", "axes", "epsilon"),
}
