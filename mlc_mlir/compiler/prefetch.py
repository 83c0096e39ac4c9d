"""Software prefetch for tiles that read many rows of a large buffer (part of ``vector-opt``).

A contraction over an NCHW activation (a 1x1 convolution: ``y[f, p] += w[f, c] * x[c, p]``)
reads, for each register tile of columns ``p``, one vector from every row ``c`` of ``x``:
the reduction loop jumps a whole row (12-50 KB at 56 x 56 and 112 x 112) at every step,
so every step touches a new page, and the next tile reads the next line of the same rows.
The hardware prefetchers do not follow 32-96 such streams: MobileNet-v2's 1x1 convolution
of 96 -> 24 channels at 56 x 56, batch 8, one thread, spent most of its time on the stalled
load of ``x`` (a third of the samples on the instruction after it), 4.4-12.7 ms against ONNX
Runtime's 3.1 ms (its NCHWc layout reads contiguous channel blocks).

:func:`prefetch_row_streams` finds such loads after the stage's transform script, where they
are plain ``vector.load`` ops:

    scf.for %j = %c0 to %c3136 step %c16 {          column tiles
      scf.for %k = %c0 to %c96 step %c1 ... {        the reduction: one row of x per step
        %b = vector.load %x[%n, %k, %j] : memref<8x96x3136xf32>, vector<16xf32>

and puts before each a ``memref.prefetch`` of the same row :data:`TILES_AHEAD` column tiles
further (clamped to the row's last element), so that the tile that reads it finds it in
cache:

        %a = arith.addi %j, %c32 : index
        %m = arith.minsi %a, %c3135 : index
        memref.prefetch %x[%n, %k, %m], read, locality<3>, data : memref<8x96x3136xf32>

The load qualifies when its memref is row-major with static shape, one index other than the
last is the induction variable of the loop directly around it, that dimension's stride is at
least :data:`MIN_STRIDE_BYTES`, and the last index is the induction variable of an enclosing
loop with a constant step (the column tiles). Contractions whose panel of B is copied into a
local buffer (the large-contraction rule) read it contiguously and are left alone, as are
rows shorter than a page apart (28 x 28 and smaller images: the prefetchers keep up).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref

from ..irutil import is_row_major, row_major_strides, walk_ops
from ..target import PAGE_BYTES
from .loop_deps import const, induction_var, inside

__all__ = ["prefetch_row_streams", "TILES_AHEAD", "MIN_STRIDE_BYTES"]

#: how many column tiles ahead a row is prefetched (MobileNet-v2's 1x1 convolutions of 32 -> 16
#: channels at 112 x 112 and 96 -> 24 at 56 x 56, batch 8, one thread, interleaved in one
#: process: 1, 2, 3 and 4 tiles of 16 columns ahead 9.2, 4.8-5.3, 5.2, 5.2-5.4 ms against
#: 7.3-12.7 without; 96 -> 24: 2 tiles 2.1-3.8 ms, 4 tiles 2.0-4.2, without 4.4-8.3)
TILES_AHEAD = 2
#: the least distance in bytes between the rows the reduction loop steps through: a new page
#: at (nearly) every step, which the hardware prefetchers do not follow. A classifier's weight
#: rows of 1000 floats (4000 bytes) qualify: MobileNet-v2's 1280 x 1000 at batch 8, one thread,
#: its weights out of cache as in the model, interleaved (29 Nov, AVX-512 host): 0.79 -> 0.54
#: ms. Rows of a 28 x 28 image (3136 bytes, a new page at 3 steps of 4) do not: the 1x1
#: convolutions of 32 -> 192 and 192 -> 32 channels there ran as fast or slower with it.
MIN_STRIDE_BYTES = PAGE_BYTES - PAGE_BYTES // 8


def prefetch_row_streams(fn: ir.Operation) -> int:
    """Insert a prefetch before every qualifying ``vector.load`` of ``fn`` (see the module
    docstring); returns how many were inserted."""
    count = 0
    for load in walk_ops(fn, ["vector.load"]):
        target = _prefetch_target(load)
        if target is None:
            continue
        tile_iv, step, last = target
        mem, idx = load.operands[0], list(load.operands[1:])
        with ir.InsertionPoint(load), load.location:
            index = ir.IndexType.get()
            ahead = arith.AddIOp(tile_iv, arith.ConstantOp(index, TILES_AHEAD * step).result).result
            column = arith.MinSIOp(ahead, arith.ConstantOp(index, last).result).result
            memref.PrefetchOp(mem, idx[:-1] + [column], False, 3, True)
        count += 1
    return count


def _prefetch_target(load: ir.Operation) -> tuple[ir.Value, int, int] | None:
    """(the column tiles' induction variable, their step, the row's last index) when ``load``
    steps through rows at least :data:`MIN_STRIDE_BYTES` apart in the loop around it."""
    loop = load.parent
    if loop is None or loop.name != "scf.for":
        return None
    mtype = ir.MemRefType(load.operands[0].type)
    idx = list(load.operands[1:])
    if len(idx) < 2 or not is_row_major(mtype):
        return None
    iv = induction_var(loop)
    rows = [d for d, v in enumerate(idx[:-1]) if v == iv]
    if len(rows) != 1:
        return None
    elem_bytes = max(1, getattr(mtype.element_type, "width", 32) // 8)
    if row_major_strides(mtype.shape)[rows[0]] * elem_bytes < MIN_STRIDE_BYTES:
        return None
    tiles = _enclosing_loop_of(idx[-1], loop)
    if tiles is None:
        return None
    step = const(tiles.operands[2])
    if step is None or step <= 0:
        return None
    return idx[-1], step, mtype.shape[-1] - 1


def _enclosing_loop_of(value: ir.Value, inner: ir.Operation) -> ir.Operation | None:
    """The ``scf.for`` around ``inner`` whose induction variable ``value`` is, else None."""
    if not isinstance(value.owner, ir.Block):
        return None
    loop = value.owner.owner
    if loop.name != "scf.for" or value != induction_var(loop) or loop == inner or not inside(inner, loop):
        return None
    return loop
