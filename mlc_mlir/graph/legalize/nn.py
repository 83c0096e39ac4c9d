"""Legalization rules of the neural-network graph ops (:mod:`mlc_mlir.graph.ir.op_nn`)."""

from __future__ import annotations

from ... import topi
from ..builder.block_builder import BlockBuilder
from ..ir.expr import Call, Expr
from .rule import LegalizeRule, _rule

__all__ = ["NN_LEGALIZE"]


def _conv2d(bb: BlockBuilder, call: Call) -> Expr:
    """``topi.nn.conv2d``: upstream's named ops for float data (``tensor.pad``, then
    ``linalg.conv_2d_nchw_fchw``, or ``linalg.depthwise_conv_2d_nchw_chw`` for ``groups == C``
    with one input channel per group; the default schedule turns the first into im2col + a
    contraction, :mod:`mlc_mlir.schedule.conv_gemm`); a generic for grouped convolutions.
    Named "conv2d", "depthwise_conv2d" (``weight`` (C*m, 1, KH, KW)) or "group_conv2d"."""
    a = call.attrs
    data, weight = call.args
    groups = int(a.get("groups", 1))
    name = "conv2d" if groups == 1 else "depthwise_conv2d" if weight.shape[1] == 1 else "group_conv2d"
    return bb.call_te(topi.nn.conv2d, data, weight, a.get("strides", 1), a.get("padding", 0),
                      a.get("dilation", 1), "NCHW", groups, primfunc_name_hint=name)


def _max_pool2d(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    return bb.call_te(topi.nn.pool2d, call.args[0], a["pool_size"], a.get("strides", a["pool_size"]),
                      a.get("dilation", 1), a.get("padding", 0), "max", bool(a.get("ceil_mode", False)),
                      primfunc_name_hint="max_pool2d")


def _avg_pool2d(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    return bb.call_te(topi.nn.pool2d, call.args[0], a["pool_size"], a.get("strides", a["pool_size"]),
                      a.get("dilation", 1), a.get("padding", 0), "avg", bool(a.get("ceil_mode", False)),
                      "NCHW", bool(a.get("count_include_pad", True)), primfunc_name_hint="avg_pool2d")


def _adaptive_avg_pool2d(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.nn.adaptive_pool, call.args[0], call.shape[2:], "avg",
                      primfunc_name_hint="adaptive_avg_pool2d")


NN_LEGALIZE: dict[str, LegalizeRule] = {
    "mlc.conv2d": _conv2d,
    "mlc.max_pool2d": _max_pool2d,
    "mlc.avg_pool2d": _avg_pool2d,
    "mlc.adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "mlc.batch_norm": _rule(topi.nn.batch_norm, "batch_norm", "axis", "epsilon"),
    "mlc.layer_norm": _rule(topi.nn.layer_norm, "layer_norm", "axes", "epsilon"),
    "mlc.gelu_tanh": _rule(topi.nn.gelu_tanh, "gelu_tanh"),
    "mlc.silu": _rule(topi.nn.silu, "silu"),
    "mlc.log_softmax": _rule(topi.nn.log_softmax, "log_softmax", "axis"),
    "mlc.safe_softmax": _rule(topi.nn.safe_softmax, "safe_softmax", "axis"),
}
