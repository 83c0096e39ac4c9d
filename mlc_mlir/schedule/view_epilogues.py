"""Elementwise blocks that read a block's result through an expand reshape, run in the
producer's shape, before the default rules run.

A convolution's contraction computes ``(n, f, oh * ow)`` and its fused epilogue -- bias,
ReLU6, a residual add -- reads it back through ``tensor.expand_shape`` as ``(n, f, oh,
ow)`` (:mod:`.conv_gemm`). The rules compute an epilogue on the contraction's register
tile only when it reads the result at the same dims (:func:`.rule_common.epilogue_chain`);
through the reshape a tile of ``oh * ow`` columns is no box of ``(oh, ow)``, so the
epilogue ran as a pass of its own over the whole result, written out and read back
(MobileNet-v2's 1x1 convolution from 16 to 96 channels at 112 x 112, batch 8, one thread:
10.6 ms, ONNX Runtime 6.9 ms).

:func:`collapse_view_epilogues` rewrites such a block over the reshape's collapsed dims:
``y[n, f, h, w] = clip(g[n, f, h * W + w] + b[f])`` becomes ``y'[n, f, p] = clip(g[n, f, p]
+ b[f])`` writing a ``tensor.collapse_shape`` of its destination, and the result is
expanded back for its users (a view, no copy). Its other operands are collapsed the same
way where they hold the collapsed dims (a residual input), or kept where they hold none of
them (a bias broadcast along ``h`` and ``w``). The same kernel then runs in 5.4 ms.

Blocks this leaves alone: the epilogue of a contraction that reads its own input through
a reshape (a 3x3 convolution's im2col: :func:`.rule_common.per_item` computes the im2col
and the epilogue per image instead), a body that reads ``linalg.index``, an operand holding only some
of a collapsed group's dims or holding them out of order, a dynamic dim, a destination not
indexed by the identity map.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import tensor

from ..ir import Module
from ..irutil import walk_ops
from .rewrite_named import rewrite_generics, static_shape

__all__ = ["collapse_view_epilogues"]


def collapse_view_epilogues(mod: Module) -> Module:
    """``mod`` with every elementwise ``linalg.generic`` that reads a ``linalg`` op's result
    through a ``tensor.expand_shape`` run over the collapsed dims instead (a copy; ``mod``
    itself when there is none)."""
    def rewrite(g: ir.Operation) -> bool:
        groups = _groups(g)
        return bool(groups) and _collapse(g, groups)

    return rewrite_generics(mod, lambda g: _groups(g) is not None, rewrite)


def _maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _groups(op: ir.Operation) -> list[list[int]] | None:
    """The reassociation of the expand reshape that ``op`` reads a linalg op's result
    through (the groups of ``op``'s dims to collapse), when ``op`` can run collapsed."""
    if len(op.results) != 1 or any(str(it) != '#linalg.iterator_type<parallel>'
                                    for it in ir.ArrayAttr(op.attributes["iterator_types"])):
        return None
    maps = _maps(op)
    n_in = len(op.operands) - 1
    ndims = maps[-1].n_dims
    if list(maps[-1].results) != [ir.AffineDimExpr.get(d) for d in range(ndims)] or None in static_shape(
            op.results[0].type):
        return None
    if walk_ops(op, ("linalg.index",)):
        return None
    for i in range(n_in):
        src = op.operands[i]
        owner = src.owner
        if isinstance(owner, ir.Block) or owner.name != "tensor.expand_shape":
            continue
        inner = owner.operands[0].owner
        if isinstance(inner, ir.Block) or not inner.name.startswith("linalg.") or _reads_a_view(inner):
            continue
        if list(maps[i].results) != list(maps[-1].results):
            continue
        groups = [[int(ir.IntegerAttr(d).value) for d in ir.ArrayAttr(g)]
                  for g in ir.ArrayAttr(owner.attributes["reassociation"])]
        if all(len(g) == 1 for g in groups):
            continue
        extents = static_shape(op.results[0].type)
        if all(_operand_groups(m, groups, extents) is not None for m in maps):
            return groups
    return None


def _reads_a_view(op: ir.Operation) -> bool:
    """Whether ``op`` reads another block's result through a reshape (a convolution's
    contraction reading its im2col): the rules compute that im2col and the epilogue per
    image (:func:`.rule_common.per_item`), which a collapsed epilogue would not join."""
    for v in op.operands:
        owner = v.owner
        if (not isinstance(owner, ir.Block) and owner.name in ("tensor.collapse_shape", "tensor.expand_shape")
                and not isinstance(owner.operands[0].owner, ir.Block)
                and owner.operands[0].owner.name.startswith("linalg.")):
            return True
    return False


def _operand_groups(amap: ir.AffineMap, groups: list[list[int]],
                    extents: list[int]) -> list[tuple[list[int], ir.AffineExpr]] | None:
    """How an operand read at ``amap`` reads the collapsed dims: per result after
    collapsing, the operand's positions it merges and its index (a collapsed dim, or a
    result as it was); None when the operand holds a collapsed group in part or out of
    order. A group's dims of extent 1 need not be held (a bias ``b[f]`` reads the group
    ``(n, f)`` of a batch of one)."""
    new_dim = {d: k for k, g in enumerate(groups) for d in g}
    results = list(amap.results)
    dims = [r.position if isinstance(r, ir.AffineDimExpr) else None for r in results]
    out: list[tuple[list[int], ir.AffineExpr]] = []
    seen: set[int] = set()
    k = 0
    while k < len(results):
        d = dims[k]
        if d is None:
            if not isinstance(results[k], ir.AffineConstantExpr):
                return None
            out.append(([k], results[k]))
            k += 1
            continue
        g = groups[new_dim[d]]
        wide = [x for x in g if extents[x] != 1]
        if len(g) > 1 and dims[k:k + len(g)] == g:
            span = list(range(k, k + len(g)))
        elif len(g) == 1 or wide == [d]:
            span = [k]
        elif extents[d] == 1:  # a unit dim of a group read alone: always index 0
            out.append(([k], ir.AffineConstantExpr.get(0)))
            k += 1
            continue
        else:
            return None
        if new_dim[d] in seen:
            return None
        seen.add(new_dim[d])
        out.append((span, ir.AffineDimExpr.get(new_dim[d])))
        k += len(span)
    return out


def _collapse(op: ir.Operation, groups: list[list[int]]) -> bool:
    """Rewrite ``op`` in place over the collapsed dims; its result expanded back for its users."""
    maps = _maps(op)
    extents = static_shape(op.results[0].type)
    n_new = len(groups)
    result = op.results[0]
    out_type = result.type
    new_maps = []
    with ir.InsertionPoint(op), op.location:
        for i, (operand, amap) in enumerate(zip(list(op.operands), maps)):
            reads = _operand_groups(amap, groups, extents)
            new_maps.append(ir.AffineMap.get(n_new, 0, [e for _, e in reads]))
            reassoc = [span for span, _ in reads]
            if all(len(g) == 1 for g in reassoc):
                continue
            owner = operand.owner
            shape = _collapsed_shape(operand, reassoc)
            if (not isinstance(owner, ir.Block) and owner.name == "tensor.expand_shape"
                    and static_shape(owner.operands[0].type) == shape):
                op.operands[i] = owner.operands[0]
            else:
                ctype = ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size() if s is None else s for s in shape],
                                                ir.RankedTensorType(operand.type).element_type)
                op.operands[i] = tensor.CollapseShapeOp(ctype, operand, reassoc).result
    result.set_type(op.operands[len(op.operands) - 1].type)
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps])
    op.attributes["iterator_types"] = ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * n_new)
    with ir.InsertionPoint.after(op), op.location:
        expanded = tensor.ExpandShapeOp(out_type, result, groups, [], static_shape(out_type))
    for use in list(result.uses):
        if use.owner != expanded.operation:
            use.owner.operands[use.operand_number] = expanded.result
    return True


def _collapsed_shape(value: ir.Value, reassoc: list[list[int]]) -> list[int | None]:
    shape = static_shape(value.type)
    return [None if None in (sizes := [shape[r] for r in g]) else math.prod(sizes) for g in reassoc]
