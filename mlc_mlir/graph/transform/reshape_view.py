"""Tensor programs that only reshape: at graph lowering a view of their input, not a copy.

Relax's ``RewriteDataflowReshape``: a legalized ``reshape`` (``squeeze``, ``expand_dims``,
``flatten``) that fusion left alone (its producer a contraction, its consumer a softmax:
attention's ``(b * h, s, s) -> (b, h, s, s)``) is a tensor program copying every element
to the same row-major position. Called, it reads and writes the whole tensor (BERT d256 at
batch 8: 0.18 ms of a 15.6 ms layer); as a ``tensor.collapse_shape`` + ``expand_shape`` of
its input, bufferization makes it a view of the same buffer.

:func:`mark_reshape_views` (a build stage before the default schedules) marks each such
program with :data:`RESHAPE_ATTR`; graph lowering calls it as a view where its result is not
a function's result. :func:`reshape_of` recognizes such a program exactly: one ``linalg.generic`` copying its
one input into its output (the body yields the input element), every loop parallel, the
output indexed by the loops, static shapes, and the input index map evaluated at every
output position equal to the row-major reshape's (NumPy, in chunks), for tensors up to
:data:`MAX_CHECKED_ELEMENTS`.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

__all__ = ["reshape_of", "mark_reshape_views", "RESHAPE_ATTR", "MAX_CHECKED_ELEMENTS"]

#: the attribute of a tensor program that only reshapes (set before the schedules change it)
RESHAPE_ATTR = "mlc.reshape_view"

#: larger reshapes are left as copies (checking each position costs time at build)
MAX_CHECKED_ELEMENTS = 1 << 24
_CHUNK = 1 << 20


def mark_reshape_views(module: ir.Module) -> None:
    """Mark every tensor program of ``module`` that only reshapes (:func:`reshape_of`)."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and "mlc.prim_func" in op.attributes and len(op.regions[0].blocks) \
                and reshape_of(op) is not None:
            op.attributes[RESHAPE_ATTR] = ir.UnitAttr.get()


def reshape_of(fop: ir.Operation) -> tuple[ir.RankedTensorType, ir.RankedTensorType] | None:
    """(input type, output type) when tensor program ``fop`` (tensor form, destination
    last) reads its one input in row-major order into its output's shape; None otherwise."""
    body = fop.regions[0].blocks[0]
    ops = [o.operation for o in body.operations]
    if len(ops) != 2 or ops[0].name != "linalg.generic" or ops[1].name != "func.return" or len(body.arguments) != 2:
        return None
    gen, ret = ops
    src, dst = body.arguments[0], body.arguments[1]
    if (len(gen.operands) != 2 or gen.operands[0] != src or gen.operands[1] != dst or len(gen.results) != 1
            or len(ret.operands) != 1 or ret.operands[0] != gen.results[0]):
        return None
    try:
        in_t, out_t = ir.RankedTensorType(src.type), ir.RankedTensorType(dst.type)
    except ValueError:
        return None
    if not (in_t.has_static_shape and out_t.has_static_shape) or in_t.element_type != out_t.element_type:
        return None
    in_shape, out_shape = list(in_t.shape), list(out_t.shape)
    numel = math.prod(out_shape)
    if math.prod(in_shape) != numel or numel > MAX_CHECKED_ELEMENTS:
        return None
    iters = [str(a) for a in ir.ArrayAttr(gen.attributes["iterator_types"])]
    if any(i != "#linalg.iterator_type<parallel>" for i in iters):
        return None
    block = gen.regions[0].blocks[0]
    inner = [o.operation for o in block.operations]
    if len(inner) != 1 or inner[0].name != "linalg.yield" or len(inner[0].operands) != 1 \
            or inner[0].operands[0] != block.arguments[0]:
        return None
    in_map, out_map = (ir.AffineMapAttr(m).value for m in ir.ArrayAttr(gen.attributes["indexing_maps"]))
    if out_map != ir.AffineMap.get_identity(len(out_shape)) or in_map.n_dims != len(out_shape) \
            or in_map.n_symbols or len(in_map.results) != len(in_shape):
        return None
    for start in range(0, numel, _CHUNK):
        flat = np.arange(start, min(numel, start + _CHUNK), dtype=np.int64)
        loops = np.unravel_index(flat, out_shape)
        want = np.unravel_index(flat, in_shape)
        for expr, w in zip(in_map.results, want):
            got = _evaluate(expr, loops)
            if got is None or not np.array_equal(np.broadcast_to(got, w.shape), w):
                return None
    return in_t, out_t


def _evaluate(e: ir.AffineExpr, dims: tuple) -> np.ndarray | int | None:
    """Affine expression ``e`` at the loop positions ``dims`` (arrays); None for a form not handled."""
    if isinstance(e, ir.AffineDimExpr):
        return dims[e.position]
    if isinstance(e, ir.AffineConstantExpr):
        return e.value
    if isinstance(e, (ir.AffineAddExpr, ir.AffineMulExpr, ir.AffineModExpr, ir.AffineFloorDivExpr,
                      ir.AffineCeilDivExpr)):
        lhs, rhs = _evaluate(e.lhs, dims), _evaluate(e.rhs, dims)
        if lhs is None or rhs is None:
            return None
        if isinstance(e, ir.AffineAddExpr):
            return lhs + rhs
        if isinstance(e, ir.AffineMulExpr):
            return lhs * rhs
        if isinstance(rhs, np.ndarray) or rhs <= 0:
            return None
        if isinstance(e, ir.AffineModExpr):
            return np.mod(lhs, rhs)
        if isinstance(e, ir.AffineFloorDivExpr):
            return np.floor_divide(lhs, rhs)
        return -np.floor_divide(-lhs, rhs)
    return None
