"""``tensor.pad`` as a block of its own (TVM's ``pad_temp``), for the GPU rules.

Legalization pads a convolution's or a pool's input with ``tensor.pad``, which the CPU rules
read in place. Tiled for a GPU, upstream fuses the pad into the outermost bound loop, so work
sits between the ``blockIdx`` loops and the kernel cannot be formed. Rewritten as a
``linalg.generic`` block (``mlc.block = "pad"``, ``pad_1``...) that reads its input at clamped
indices and selects the padding value outside it, the pad gets a kernel of its own from the
rules, as every other block does::

    %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] { tensor.yield %cst }
    // becomes
    %p = linalg.generic {mlc.block = "pad"} outs(%empty) {
      %v = tensor.extract %x[%n, %c, clamp(%h - 1), clamp(%w - 1)]
      linalg.yield select(%h >= 1 && %h < 1 + H && %w >= 1 && %w < 1 + W, %v, %cst)
    }
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from ..context import mlc_context
from ..ir import Module
from ..irutil import walk_ops

__all__ = ["pads_as_blocks"]


def _pad_value(pad: ir.Operation) -> ir.Attribute | None:
    """The constant that ``pad`` yields, or ``None`` (a value computed at run time)."""
    body = pad.regions[0].blocks[0]
    value = body.operations[len(body.operations) - 1].operands[0]  # the tensor.yield's
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    return owner.attributes["value"]


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _rewrite(pad: ir.Operation, name: str) -> bool:
    src, result = pad.operands[0], pad.results[0]
    src_type, out_type = ir.RankedTensorType(src.type), ir.RankedTensorType(result.type)
    value = _pad_value(pad)
    if value is None or not src_type.has_static_shape or not out_type.has_static_shape or len(pad.operands) > 1:
        return False
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    rank = out_type.rank
    identity = ir.AffineMap.get_identity(rank)
    with ir.InsertionPoint(pad):
        empty = tensor.empty(out_type.shape, out_type.element_type)
        generic = linalg.GenericOp([out_type], [], [empty], ir.ArrayAttr.get([ir.AffineMapAttr.get(identity)]),
                                   ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank))
    generic.attributes["mlc.block"] = ir.StringAttr.get(name)
    body = generic.regions[0].blocks.append(out_type.element_type)
    with ir.InsertionPoint(body):
        inside, reads = None, []
        for d in range(rank):
            i = linalg.IndexOp(d).result
            extent, before = src_type.shape[d], low[d]
            if extent == out_type.shape[d] and before == 0:
                reads.append(i)
                continue
            conds = [arith.cmpi(arith.CmpIPredicate.sge, i, _index(before)),
                     arith.cmpi(arith.CmpIPredicate.slt, i, _index(before + extent))]
            for cond in conds:
                inside = cond if inside is None else arith.andi(inside, cond)
            shifted = arith.subi(i, _index(before))
            reads.append(arith.minsi(arith.maxsi(shifted, _index(0)), _index(extent - 1)))
        read = tensor.extract(src, reads)
        out = read if inside is None else arith.select(inside, read, arith.constant(out_type.element_type, value))
        linalg.YieldOp([out])
    result.replace_all_uses_with(generic.results[0])
    pad.erase()
    return True


def pads_as_blocks(mod: Module) -> int:
    """Rewrite, in place, every ``tensor.pad`` of a constant in the tensor programs of ``mod``
    as a block named ``pad`` (``pad_1``, ... when taken); returns how many were rewritten.
    Pads of a value computed at run time or of dynamic shapes are left as they are."""
    count = 0
    with mlc_context():
        for fn in mod.mlir_module.body.operations:
            if fn.operation.name != "func.func" or "mlc.prim_func" not in fn.operation.attributes:
                continue
            taken = {ir.StringAttr(op.attributes["mlc.block"]).value for op in walk_ops(fn)
                     if "mlc.block" in op.attributes}
            for pad in walk_ops(fn, ["tensor.pad"]):
                name, k = "pad", 0
                while name in taken:
                    k += 1
                    name = f"pad_{k}"
                if _rewrite(pad, name):
                    taken.add(name)
                    count += 1
    return count
