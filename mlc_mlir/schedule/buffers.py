"""Compact cache buffers: a tile of a cache block gets its own buffer of the tile's shape.

``cache_read`` / ``cache_write`` allocate the whole cached buffer
(``bufferization.alloc_tensor``) outside every loop; once the copy block is moved under a
loop (``compute_at``) each iteration only writes one tile of it, through a
``tensor.extract_slice`` of the allocation. As in TVM, where the buffer of a block
computed at a loop shrinks to the region one iteration touches, each such slice becomes an
allocation of its own shape, inside the loop: the tile is contiguous (a packed copy of a
strided region, which keeps its rows in one cache-friendly block) instead of a strided
window of a large buffer.

This is a plain value rewrite: a slice of an uninitialized tensor is an uninitialized
tensor of the slice's type, whatever reads or writes follow.

IR before (``cache_read(C, 1, "local")`` + ``compute_at`` at the ``j`` loop)::

    %buf = bufferization.alloc_tensor() : tensor<1024x1024xf32>
    scf.for %j ... {
      %s = tensor.extract_slice %buf[0, %j] [256, 32] [1, 1] : ... to tensor<256x32xf32>
      %b = linalg.copy {mlc.block = "B_local"} ins(%B_tile) outs(%s)
      ...
    }

IR after::

    scf.for %j ... {
      %s = bufferization.alloc_tensor() : tensor<256x32xf32>
      %b = linalg.copy {mlc.block = "B_local"} ins(%B_tile) outs(%s)
      ...
    }
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import bufferization

__all__ = ["compact_cache_buffers"]


def _allocation(value: ir.Value) -> ir.Operation | None:
    """The static ``bufferization.alloc_tensor`` defining ``value``, if it is one."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation
    if op.name == "bufferization.alloc_tensor" and not list(op.operands):
        return op
    return None


def _slices_of_allocations(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if (op.name == "tensor.extract_slice" and _allocation(op.operands[0]) is not None
                and ir.RankedTensorType(op.results[0].type).has_static_shape):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def compact_cache_buffers(module: ir.Module) -> int:
    """Replace static slices of static ``bufferization.alloc_tensor`` ops by allocations of
    the slice's shape; erase allocations left unused. Returns how many slices were replaced.

    Must be called inside the shared context.
    """
    slices = _slices_of_allocations(module)
    allocs: list[ir.Operation] = []
    for op in slices:
        src = _allocation(op.operands[0])
        if not any(src == a for a in allocs):
            allocs.append(src)
        space = src.attributes["memory_space"] if "memory_space" in src.attributes else None
        with ir.InsertionPoint(op), op.location:
            new = bufferization.AllocTensorOp(op.results[0].type, [], memory_space=space)
        op.results[0].replace_all_uses_with(new.result)
        op.erase()
    for src in allocs:
        if not list(src.results[0].uses):
            src.erase()
    return len(slices)
