"""The default rules' row chains (:mod:`.rules`): reductions along the last dim and the
elementwise blocks between them, computed one row at a time.

Softmax (``max``, ``exp``, ``sum``, the product with ``1 / sum``) and layer_norm are chains of
reductions along the rows' last dim and elementwise blocks over the whole shape, ending in
an elementwise block that writes the result. Scheduled block by block, each block is a pass
over the whole tensor and the exponentials a tensor of their own (BERT d256's attention
softmax at batch 8, 4096 rows of 128: four passes, 0.58 ms on one core). The row chain
instead computes every block at the result's row loop (``compute_at``), so a row's
intermediates stay in L1 and the input is read from memory once:

    rows (the outer dims; in parallel: the outer ones, or blocks of the innermost)
      max_rf: k0 { lanes (vector) }     max: the lanes reduced
      exp: the row, in vectors           sum_rf / sum as max
      softmax: the row, in vectors

Each reduction is split by the vector lanes and ``rfactor``-ed (partial maxima and sums in
one vector, the lanes reduced once per row); the elementwise blocks vectorized along the
row. The buffers of a row are allocated once per block of rows (the build's
``hoist-allocs`` stage).

A function qualifies when its last block is elementwise over the result's shape, every
other block is elementwise over that shape, elementwise over the rows (a value per row,
computed there as it is: softmax's ``1 / sum``) or reduces its last dim (extent a multiple of
the lanes, at most :data:`MAX_ROW` elements) into the leading dims (a kept dim of 1
allowed), and there is a reduction.

Decisions (``<block>.<name>``, on the last block): ``parallel``, ``rows`` (the rows computed
together, :data:`ROWS_AT_ONCE`: each reduction's lanes are summed one by one, a chain of
dependent additions that rows computed together overlap).
"""

from __future__ import annotations

import math

from ..target import Target
from .payload import BlockInfo
from .rule_common import column_tile, divisors, largest_divisor, parallel_options, vector_lanes_or_none
from .rule_elementwise import PARALLEL_MIN_ELEMENTS, is_elementwise
from .rule_sampler import RuleSampler
from .schedule import Schedule

__all__ = ["takes_row_chain", "schedule_row_chain", "MAX_ROW", "ROW_BLOCKS", "PARALLEL_BLOCKS_PER_CORE"]

#: the longest row computed in L1 (its intermediates: a few rows of 4-byte elements)
MAX_ROW = 4096
#: the blocks of rows the innermost row loop is cut into when it runs in parallel
ROW_BLOCKS = 64
#: the rows computed together (their reductions' lane sums interleave)
ROWS_AT_ONCE = 8
#: the outer row loops run in parallel when they make this many iterations per core
PARALLEL_BLOCKS_PER_CORE = 4


def _is_row_reduction(info: BlockInfo, out: BlockInfo, row: int) -> bool:
    """One reduction, the last dim (extent ``row``), into the result's leading dims (or
    them and a kept dim of 1); every input reads it last."""
    lead = tuple(out.extents[:-1])
    red = [d for d in range(info.ndims) if info.is_reduction(d)]
    if red != [info.ndims - 1] or info.extents[-1] != row:
        return False
    if tuple(info.extents[:-1]) not in (lead, lead + (1,)):
        return False
    kd = info.ndims - 1
    # (every input read along the row at plain indices: the rfactor of a reduction that also
    # reads a per-row value at a constant index, log_softmax's sum of exp(x - max[.., 0]),
    # aborts in upstream's tiling, so log_softmax keeps the block rules)
    return all(m and m[-1] == kd and None not in m for m in info.maps[:info.n_inputs]) and kd not in info.maps[-1]


def _is_full(info: BlockInfo, out: BlockInfo) -> bool:
    """Elementwise over the result's shape (softmax's exponentials)."""
    return is_elementwise(info) and info.extents == out.extents and info.maps[-1] == out.maps[-1]


def _is_per_row(info: BlockInfo, out: BlockInfo) -> bool:
    """Elementwise over the rows (a value per row: softmax's ``1 / sum``)."""
    lead = tuple(out.extents[:-1])
    return is_elementwise(info) and tuple(info.extents) in (lead, lead + (1,))


def takes_row_chain(blocks: list[BlockInfo], tgt: Target) -> bool:
    """Whether the function's blocks are a row chain (module docstring)."""
    if len(blocks) < 2:
        return False
    out = blocks[-1]
    if not is_elementwise(out) or out.ndims < 2 or None in out.extents \
            or out.maps[-1] != tuple(range(out.ndims)):
        return False
    lanes = vector_lanes_or_none(tgt, out)
    row = out.extents[-1]
    if lanes is None or row % lanes or row > MAX_ROW:
        return False
    reductions = 0
    for info in blocks[:-1]:
        if info.element_type != out.element_type:
            return False
        if _is_row_reduction(info, out, row):
            reductions += 1
        elif not (_is_full(info, out) or _is_per_row(info, out)):
            return False
    return reductions > 0


def schedule_row_chain(sch: Schedule, fname: str, blocks: list[BlockInfo], tgt: Target,
                       sm: RuleSampler) -> set[str]:
    """Schedule a row chain (:func:`takes_row_chain`); returns the names of its blocks."""
    out = blocks[-1]
    lanes = tgt.vector_lanes(out.element_type)
    row = out.extents[-1]
    rfs = {}
    for info in blocks[:-1]:
        if info.is_reduction(info.ndims - 1):
            loops = sch.get_loops(sch.get_block(info.name, fname))
            _, k1 = sch.split(loops[-1], [None, lanes])
            rfs[info.name] = sch.rfactor(k1)
    block = sch.get_block(out.name, fname)
    loops = sch.get_loops(block)
    lead = list(out.extents[:-1])
    want = tgt.num_cores > 1 and math.prod(lead) * row >= PARALLEL_MIN_ELEMENTS and math.prod(lead) > 1
    at, at_extent = loops[-2], lead[-1]  # the innermost row loop
    if int(sm.choose("parallel", parallel_options(tgt), int(want))):
        # the outer row loops fused up to enough blocks of rows for the cores, or else the
        # innermost row loop cut into blocks of rows
        enough = PARALLEL_BLOCKS_PER_CORE * tgt.num_cores
        p = next((k for k in range(len(lead)) if math.prod(lead[:k + 1]) >= enough), len(lead) - 1)
        if p < len(lead) - 1:
            sch.parallel(sch.fuse(*loops[:p + 1]) if p else loops[0])
        else:
            row_blocks = largest_divisor(lead[-1], ROW_BLOCKS)
            outer, at = sch.split(loops[-2], [row_blocks, None])
            sch.parallel(outer)
            at_extent = lead[-1] // row_blocks
    # a few rows at once: their reductions' chains (the lanes summed one by one) interleave
    rows = int(sm.choose("rows", divisors(at_extent, 2 * ROWS_AT_ONCE), largest_divisor(at_extent, ROWS_AT_ONCE)))
    if rows > 1:
        at, _ = sch.split(at, [None, rows])
    for info in reversed(blocks[:-1]):  # consumers first: each producer at the rows its readers take
        sch.compute_at(sch.get_block(info.name, fname), at)
        if info.name in rfs:
            sch.compute_at(rfs[info.name], at)
    for rf in rfs.values():
        own = sch.get_loops(rf)
        lane_loop, k0 = own[-2], own[-1]
        if rows > 1:  # k outside the rows: a vector accumulator per row
            sch.reorder(k0, own[-3], lane_loop)
            sch.unroll(own[-3])
        else:
            sch.reorder(k0, lane_loop)
        sch.vectorize(lane_loop)
        sch.decompose_reduction(rf, k0)
    v = column_tile(row, 4 * lanes, lanes)
    for info in blocks:
        if info is out or _is_full(info, out):
            _, inner = sch.split(sch.get_loops(sch.get_block(info.name, fname))[-1], [None, v])
            sch.vectorize(inner)
    return {info.name for info in blocks}
