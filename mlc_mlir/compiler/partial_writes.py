"""The ``partial-writes`` build stage: keep One-Shot Bufferize from dropping a copy.

Upstream's bufferization model of ``vector.transfer_write`` on a tensor says whether the
write *reads* its destination (keeps the elements it does not overwrite) by comparing
the destination's shape with the vector's shape pairwise (``llvm::zip``, LLVM 22
``Vector/Transforms/BufferizableOpInterfaceImpl.cpp``). A write of ``vector<8xf32>`` at
``[0, 0]`` into ``tensor<3x8xf32>`` compares only ``3`` with ``8``, concludes that the
whole tensor is overwritten, and One-Shot Bufferize then lets a second write of the same
tensor share its buffer although rows 1 and 2 were still to be read. Two ``rfactor``
reductions whose unrolled row chains start from one zero tensor (``topi.nn.layer_norm``'s
sum and sum of squares, rows <= 8) computed wrong rows this way.

IR before (two chains from one tensor ``%z``)::

    %a = vector.transfer_write %v, %z[%c0, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<3x8xf32>
    %b = vector.transfer_write %w, %z[%c0, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<3x8xf32>

One-Shot Bufferize writes ``%a`` into a fresh, uninitialized buffer (no copy of ``%z``).
This stage gives such writes an index that is not a constant (an ``arith.index_cast`` of
``0``), so the interface's "every index is 0" test fails and it reports the read::

    %c0_i64 = arith.constant 0 : i64
    %i = arith.index_cast %c0_i64 : i64 to index
    %a = vector.transfer_write %v, %z[%i, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<3x8xf32>

The next stage's canonicalization folds the cast back to ``%c0``. Only the writes that
upstream would misjudge are touched: a write that does cover its destination keeps its
constant indices (and its in-place, copy-free bufferization).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, vector

from ..irutil import walk_ops
from .loop_deps import const

__all__ = ["guard_partial_writes", "misjudged_as_overwrite"]


def _covers_destination(write: vector.TransferWriteOp, dest: ir.RankedTensorType) -> bool:
    """Whether ``write`` overwrites every element of ``dest`` (identity map, equal rank,
    every vector dim at least the destination's)."""
    vshape = ir.VectorType(write.valueToStore.type).shape
    pmap = ir.AffineMapAttr(write.permutation_map).value
    return (len(vshape) == dest.rank and pmap == ir.AffineMap.get_identity(dest.rank)
            and all(v >= d for v, d in zip(vshape, dest.shape)))


def misjudged_as_overwrite(op: ir.Operation) -> bool:
    """Whether upstream's bufferization model takes the ``vector.transfer_write`` ``op``
    for a write of its whole destination tensor although it is not one."""
    write = op.opview
    if not isinstance(write.base.type, ir.RankedTensorType):
        return False
    dest = ir.RankedTensorType(write.base.type)
    if not dest.has_static_shape or write.mask is not None:
        return False
    if any(const(i) != 0 for i in write.indices):
        return False
    vshape = ir.VectorType(write.valueToStore.type).shape
    upstream_says_full = all(d <= v for d, v in zip(dest.shape, vshape))
    return upstream_says_full and not _covers_destination(write, dest)


def guard_partial_writes(module: ir.Module) -> None:
    """Give every ``vector.transfer_write`` that :func:`misjudged_as_overwrite` a
    non-constant zero as its first index, so One-Shot Bufferize keeps its destination's
    other elements (copies the buffer where it is shared)."""
    for op in walk_ops(module.operation, ["vector.transfer_write"]):
        if not misjudged_as_overwrite(op):
            continue
        with ir.InsertionPoint(op), op.location:
            zero = arith.ConstantOp(ir.IntegerType.get_signless(64), 0).result
            index = arith.IndexCastOp(ir.IndexType.get(), zero).result
        op.operands[2] = index  # operands: value, base, indices..., mask
