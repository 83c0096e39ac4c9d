"""``FoldBatchNorm``: an inference batch norm after a convolution with constant weights
becomes part of the convolution (TVM's ``FoldScaleAxis`` / ``SimplifyInference`` for the
conv + bn pattern; what ONNX Runtime and oneDNN do at load time).

``batch_norm(conv2d(x, W), gamma, beta, mean, var)`` with every parameter a constant is
``conv2d(x, W * s) + (beta - mean * s)`` with ``s = gamma / sqrt(var + eps)`` per output
channel: one kernel less per layer, and the epilogue left is a bias add that fuses into
the convolution. A bias the convolution already had (``conv2d`` then ``add`` of a
constant of shape ``(1, O, 1, 1)``) folds in too.

Before::

    %y = "mlc.conv2d"(%x, %w) {...} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %z = "mlc.batch_norm"(%y, %g, %b, %m, %v) {axis = 1 : i64, epsilon = 1.0e-05 : f64} : ...

After::

    %y = "mlc.conv2d"(%x, %w_bn) {...} : ...
    %z = "mlc.add"(%y, %bias_bn) : (tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x6x6xf32>

The weights are scaled in float64 and rounded once to the weights' dtype.
"""

from __future__ import annotations

import logging

import numpy as np
from mlir import ir

from ...errors import GraphError
from ...ir import Module
from ..builder.emit import constant_attr
from ..ir.analysis import clone_module
from .fold_constant import constant_op, constant_value, rewrite_graph_ops

__all__ = ["FoldBatchNorm", "fold_batch_norms"]

log = logging.getLogger("mlc_mlir.graph.fold_batch_norm")


class FoldBatchNorm:
    """Fold inference batch norms into the convolutions before them (a copy of the module).

        mod = mlc.graph.transform.FoldBatchNorm()(mod)

    ``mlc.graph.build`` runs it from ``opt_level=1`` (``mlc-opt --mlc-fold-batch-norm``).
    """

    def __call__(self, mod: Module) -> Module:
        if not isinstance(mod, Module):
            raise GraphError(f"FoldBatchNorm expects an mlc.Module, got {type(mod).__name__}")
        work = clone_module(mod)
        fold_batch_norms(work)
        return work


def fold_batch_norms(mod: Module) -> int:
    """Fold every conv2d + batch_norm pair of ``mod``'s graph functions in place; returns how many."""
    folded = rewrite_graph_ops(mod, lambda op: op.name == "mlc.batch_norm", _fold)
    if folded:
        log.info("fold-batch-norm: %d batch norm(s) folded into convolutions", folded)
    return folded


def _defining(value: ir.Value, name: str) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if owner.operation.name == name else None


def _single_use(value: ir.Value) -> bool:
    return len(list(value.uses)) == 1


def _array(value: ir.Value, blobs: dict[str, bytes]) -> np.ndarray | None:
    const = constant_op(value)
    return None if const is None else constant_value(const, blobs)


def _fold(bn: ir.Operation, blobs: dict[str, bytes]) -> bool:
    if ir.IntegerAttr(bn.attributes["axis"]).value != 1:
        return False
    eps = ir.FloatAttr(bn.attributes["epsilon"]).value
    src = bn.operands[0]
    bias_add, conv_bias = None, None
    conv = _defining(src, "mlc.conv2d")
    if conv is None:  # conv2d + add(bias) + batch_norm
        bias_add = _defining(src, "mlc.add")
        if bias_add is None or not _single_use(src):
            return False
        conv = _defining(bias_add.operands[0], "mlc.conv2d")
        conv_bias = _array(bias_add.operands[1], blobs)
        if conv is None or conv_bias is None:
            return False
    if not _single_use(conv.results[0]):
        return False
    w = _array(conv.operands[1], blobs)
    params = [_array(v, blobs) for v in bn.operands[1:]]
    if w is None or any(p is None for p in params) or w.ndim != 4:
        return False
    gamma, beta, mean, var = (p.astype(np.float64).reshape(-1) for p in params)
    o = w.shape[0]
    if any(p.shape != (o,) for p in (gamma, beta, mean, var)):
        return False
    if conv_bias is not None:
        if conv_bias.size != o or conv_bias.shape not in ((o,), (1, o, 1, 1)):
            return False
        cb = conv_bias.astype(np.float64).reshape(-1)
    else:
        cb = np.zeros(o)
    scale = gamma / np.sqrt(var + eps)
    new_w = (w.astype(np.float64) * scale[:, None, None, None]).astype(w.dtype)
    new_b = ((cb - mean) * scale + beta).astype(w.dtype).reshape(1, o, 1, 1)
    res_type = bn.results[0].type
    with ir.InsertionPoint(bn), bn.location:
        w_type = conv.operands[1].type
        b_type = ir.RankedTensorType.get([1, o, 1, 1], ir.RankedTensorType(w_type).element_type)
        w_const = ir.Operation.create("mlc.constant", results=[w_type],
                                      attributes={"value": constant_attr(new_w, "conv_bn_weight", w_type)})
        b_const = ir.Operation.create("mlc.constant", results=[b_type],
                                      attributes={"value": constant_attr(new_b, "conv_bn_bias", b_type)})
        attrs = {k: conv.attributes[k] for k in conv.attributes}
        new_conv = ir.Operation.create("mlc.conv2d", results=[conv.results[0].type],
                                       operands=[conv.operands[0], w_const.results[0]], attributes=attrs)
        add_attrs = {k: bn.attributes[k] for k in bn.attributes if k == "mlc.shape"}
        add = ir.Operation.create("mlc.add", results=[res_type], operands=[new_conv.results[0], b_const.results[0]],
                                  attributes=add_attrs)
    bn.results[0].replace_all_uses_with(add.results[0])
    bn.erase()
    if bias_add is not None:
        bias_add.erase()
    conv.erase()
    return True
