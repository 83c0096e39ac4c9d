"""Graph building blocks shared by the frontends: each takes the builder and graph
expressions (plus Python attributes) and returns the emitted variable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import GraphError
from ..graph import op
from ..graph.ir.expr import Constant, Expr, const
from ..graph.ir.expr import Call

__all__ = ["linear", "conv2d", "max_pool2d", "batch_norm", "layer_norm", "flatten", "transpose",
           "softmax", "emit", "to_const", "pair"]


def emit(bb: Any, value: Expr) -> Expr:
    """``value`` bound with ``bb.emit`` unless it is already a variable or a constant."""
    return bb.emit(value) if isinstance(value, Call) else value


def to_const(tensor: Any) -> Constant:
    """A torch tensor (parameter or buffer) as a float32 graph constant."""
    data = tensor.detach().cpu().numpy()
    if data.dtype == np.float64:
        data = data.astype(np.float32)
    return const(data)


def pair(v: Any) -> tuple[int, int]:
    """An int or a 1/2-element sequence as a pair of ints."""
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(x) for x in v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def linear(bb: Any, x: Expr, weight: Expr, bias: Expr | None) -> Expr:
    """``x @ weight.T + bias`` (``nn.Linear``); a constant weight is transposed at import."""
    if isinstance(weight, Constant) and weight.data is not None:
        wt = const(np.ascontiguousarray(weight.data.T))
    else:
        wt = bb.emit(op.permute_dims(weight))
    out = bb.emit(op.matmul(x, wt))
    return bb.emit(op.add(out, bias)) if bias is not None else out


def conv2d(bb: Any, x: Expr, weight: Expr, bias: Expr | None, stride: Any, padding: Any,
           dilation: Any, groups: int) -> Expr:
    """``nn.Conv2d`` (NCHW): the ``conv2d`` graph op, plus the bias."""
    if groups != 1 or any(p != 0 for p in pair(padding)):
        raise GraphError(f"conv2d with padding={padding}, groups={groups} is not supported "
                         "(only padding 0 and groups 1)")
    out = bb.emit(op.nn.conv2d(x, weight, pair(stride), 0, pair(dilation)))
    if bias is None:
        return out
    return bb.emit(op.add(out, bb.emit(op.reshape(bias, (1, bias.shape[0], 1, 1)))))


def max_pool2d(bb: Any, x: Expr, kernel: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> Expr:
    """``nn.MaxPool2d`` (stride defaults to the kernel)."""
    if ceil_mode or any(p != 0 for p in pair(padding)):
        raise GraphError(f"max_pool2d with padding={padding}, ceil_mode={ceil_mode} is not supported")
    stride = kernel if stride is None or stride == [] else stride
    return bb.emit(op.nn.max_pool2d(x, pair(kernel), pair(stride), 0, pair(dilation)))


def batch_norm(bb: Any, x: Expr, weight: Expr, bias: Expr, mean: Expr, var: Expr, eps: float) -> Expr:
    """Inference ``nn.BatchNorm2d`` with running statistics."""
    return bb.emit(op.nn.batch_norm(x, weight, bias, mean, var, 1, float(eps)))


def layer_norm(bb: Any, x: Expr, shape: Sequence[int], weight: Expr | None, bias: Expr | None,
               eps: float) -> Expr:
    """``nn.LayerNorm`` over the trailing ``shape`` dims (no affine: weight 1, bias 0)."""
    shape = tuple(int(s) for s in shape)
    weight = weight if weight is not None else const(np.ones(shape, np.float32))
    bias = bias if bias is not None else const(np.zeros(shape, np.float32))
    axes = list(range(x.ndim - len(shape), x.ndim))
    return bb.emit(op.nn.layer_norm(x, weight, bias, axes, float(eps)))


def flatten(bb: Any, x: Expr, start_dim: int = 1, end_dim: int = -1) -> Expr:
    """``torch.flatten`` as a reshape."""
    n = x.ndim
    s, e = start_dim % n, end_dim % n
    mid = 1
    for d in x.shape[s:e + 1]:
        if not isinstance(d, int):
            raise GraphError(f"flatten of symbolic dimension {d} is not supported")
        mid *= d
    return bb.emit(op.reshape(x, (*x.shape[:s], mid, *x.shape[e + 1:])))


def transpose(bb: Any, x: Expr, d0: int, d1: int) -> Expr:
    """Swap dimensions ``d0`` and ``d1``."""
    axes = list(range(x.ndim))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return bb.emit(op.permute_dims(x, axes))


def softmax(bb: Any, x: Expr, dim: int | None) -> Expr:
    """Softmax along ``dim`` (default the last)."""
    return bb.emit(op.softmax(x, -1 if dim is None else int(dim)))
