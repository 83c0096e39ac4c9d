"""The default rules' elementwise blocks (:mod:`.rules`): only spatial dims.

The last dim split by the largest divisor up to four vectors (whole vectors where one
divides it: :func:`vector_factor`), vectorized; the outermost
loop parallel above :data:`PARALLEL_MIN_ELEMENTS` elements; the elementwise blocks that
read the result over the same shape (a depthwise convolution's bias and ReLU6 after its
taps) computed on each row tile right after it (``reverse_compute_at``), so the result is
read back from L1 instead of memory.

Decisions (``<block>.<name>`` in the trace): ``vector``, ``parallel``, ``fuse_epilogue``.
"""

from __future__ import annotations

import math

from ..target import Target
from .payload import BlockInfo
from .rule_common import (column_tile, element_bytes, fuse_epilogue, is_plain, largest_divisor, outermost_wide,
                          parallel_options)
from .rule_sampler import RuleSampler
from .schedule import Schedule

__all__ = ["PARALLEL_MIN_ELEMENTS", "TRANSPOSE_TILE", "is_elementwise", "schedule_elementwise", "is_copy", "is_gather",
           "schedule_copy", "transposed_dim"]

#: an elementwise block runs its outer loop in parallel from this many elements (1 << 17
#: before: MobileNet-v2's 14 x 14 and 7 x 7 layers at batch 1, 75K elements and fewer, then
#: ran their depthwise taps and epilogues on one core; at 1 << 15 the model at batch 1 on 2
#: cores 9.64 -> 9.06 ms, BERT d256 at batch 1 even, interleaved, 28 Nov)
PARALLEL_MIN_ELEMENTS = 1 << 15


def is_elementwise(info: BlockInfo) -> bool:
    """Only spatial dims, every operand indexed by plain dims; not a reshape that drops unit
    dims (an input of higher rank read at constant indices: ``x[i, j, 0, 0]``), which
    linalg's vectorizer refuses (such a copy is left as it is)."""
    out_rank = len(info.maps[-1])
    dropping = any(len(m) > out_rank and None in m for m in info.maps[:info.n_inputs])
    return all(it == "parallel" for it in info.iters) and is_plain(info) and not dropping


def schedule_elementwise(sch: Schedule, fname: str, info: BlockInfo, tgt: Target, sm: RuleSampler,
                         lanes: int, chain: list[BlockInfo] | None = None) -> set[str]:
    """Vectorize the last dim (decision ``vector``: the inner factor, up to four vectors of
    ``lanes``) and run the outer loop in parallel (decision ``parallel``); the blocks of
    ``chain`` (:func:`.rule_common.epilogue_chain`: elementwise readers over the same
    shape) computed on each tile of the row (decision ``fuse_epilogue``: MobileNet-v2's
    144-channel 56 x 56 depthwise convolution with its bias and ReLU6 at batch 8, one
    thread: 3.83 -> 2.55 ms, the taps' result no longer written out and read back). A block
    whose output's last index is not its last, static dim, or whose last dim has no divisor
    of 2 or more within four vectors, is left as it is. Returns the chain's blocks scheduled."""
    out = info.maps[-1]
    if not out or out[-1] is None or info.extents[out[-1]] is None:
        return set()
    block = sch.get_block(info.name, fname)
    loops = sch.get_loops(block)
    last = out[-1]
    v = vector_factor(info.extents[last], lanes, gathers="tensor.extract" in info.body)
    if v < 2 or last != info.ndims - 1:
        return set()
    (outer, inner), v = sm.split("vector", loops[last], info.extents[last], v, 4 * lanes)
    sch.vectorize(inner)
    elements = 1
    for e in info.extents:
        elements *= e if e is not None else 64
    top = outermost_wide(sch.get_loops(block)[:-1], [*info.extents[:last], info.extents[last] // v])
    want = tgt.num_cores > 1 and elements >= PARALLEL_MIN_ELEMENTS and len(info.extents) > 1
    if int(sm.choose("parallel", parallel_options(tgt), int(want))):
        sch.parallel(top)
    if not chain or last == 0 or not int(sm.choose("fuse_epilogue", [0, 1], 1)):
        return set()
    # at the vector tile's loop (the row loop when one tile covers the row): one tile of the
    # result is read by the chain while it is in registers or L1
    at = outer if info.extents[last] // int(v) > 1 else sch.get_loops(block)[last - 1]
    return fuse_epilogue(sch, fname, chain, at, cols=int(v), unroll_rows=False)


def vector_factor(extent: int, lanes: int, *, gathers: bool = False) -> int:
    """The vectorized inner factor of an elementwise block's last dim: the largest divisor of
    ``extent`` up to four vectors that is whole vectors, else the largest divisor up to four
    vectors. A factor of 28 (MobileNet-v2's 112- and 56-pixel rows) is three whole vectors
    and a masked remainder; 16 ran the 32-channel 112 x 112 depthwise convolution with its
    epilogue in 0.67-0.72 ms against 0.94-1.29 ms (AVX2, one thread, 28 Nov).

    A block that reads through ``tensor.extract`` (``gathers``: padding, strided windows)
    takes one vector where it divides the extent: its clamped reads become loads only in
    vectors that miss the border (:mod:`mlc_mlir.compiler.gathers`), and its masks are
    legal vectors only at the hardware's width (the 32-channel 112 x 112 depthwise
    convolution's padded copy, 120 columns: 24 lanes 0.79-0.99 ms, 8 lanes 0.26-0.31); a
    row of no whole vector takes half or a quarter of one (MobileNet-v2's 144-channel
    stride-2 depthwise convolution in place, 28 pixels at batch 8: 4 lanes 4.1-4.8 ms,
    28 lanes 16 ms)."""
    if gathers:  # one vector, else the widest power-of-two part of one from 4 lanes (28 pixels: 4)
        part = next((w for w in (lanes, lanes // 2, lanes // 4) if w >= 4 and extent % w == 0), None)
        if part is not None:
            return part
    v = column_tile(extent, 4 * lanes, lanes)  # whole vectors, else a divisor up to one vector
    return v if v % lanes == 0 else largest_divisor(extent, 4 * lanes)


def is_copy(info: BlockInfo) -> bool:
    """A block whose reductions all run over one element (te's way to keep a copy such as
    im2col from being inlined into its consumer) and whose outer dim is spatial."""
    reductions = [d for d in range(info.ndims) if info.is_reduction(d)]
    return (bool(reductions) and all(info.extents[d] == 1 for d in reductions)
            and info.ndims > 1 and not info.is_reduction(0))


def is_gather(info: BlockInfo) -> bool:
    """Only spatial dims, an input read through an index that is not a plain dim even with
    the loops' ranges known (:mod:`.index_maps`: a transpose through a reshape, BERT's
    ``k`` laid out per head); the output's indices plain dims. Vectorized, its reads would
    be gathers: it gets :func:`schedule_copy` (the outer loop parallel)."""
    return (all(it == "parallel" for it in info.iters) and info.ndims > 1 and not is_plain(info)
            and all(d is not None for d in info.maps[-1]))


#: the output's last dim of a transposing gather is tiled by this many elements (decision
#: ``transpose_tile``), with the loop that walks the input's rows inside the tiles
TRANSPOSE_TILE = 8


def transposed_dim(info: BlockInfo) -> int | None:
    """The loop that walks an input of a gather along its contiguous last index while the
    output's last dim steps through that input a cache line or more apart, or None.

    BERT's ``k`` laid out per head for ``q @ k^T``, ``out[b * 4 + h, e, s] = in[s, b, h * 64 +
    e]``: the output's last dim ``s`` reads ``in`` 8 KB apart and ``e`` (no plain index of
    ``in``: it is in the last, linearized one) walks ``in``'s rows."""
    last = info.ndims - 1
    if info.maps[-1][-1] != last or info.extents[last] is None:
        return None
    for dims, shape in zip(info.maps[:info.n_inputs], info.shapes[:info.n_inputs]):
        if len(dims) < 2 or dims[-1] is not None or last not in dims:
            continue
        inner = shape[dims.index(last) + 1:]
        if any(e is None for e in inner) or math.prod(inner) * element_bytes(info) < 64:
            continue
        walks = [d for d in range(last) if d not in dims and (info.extents[d] or 0) > 1]
        if walks:
            return walks[-1]
    return None


def schedule_copy(sch: Schedule, fname: str, info: BlockInfo, tgt: Target, sm: RuleSampler) -> None:
    """Run a large copy's outer loop in parallel (decision ``parallel``); its reads (gathers,
    div/mod indices) are left to the compiler. A transposing gather (:func:`transposed_dim`)
    has its output's last dim tiled (decision ``transpose_tile``) with the loop that walks
    the input's rows between the tile loops, so that the rows one tile reads stay in L1
    while it writes them out: BERT d256's ``k`` per head at batch 8, one thread, 1.17 ->
    0.2 ms (reads 8 KB apart on every element before)."""
    block = sch.get_block(info.name, fname)
    loops, extents = sch.get_loops(block), list(info.extents)
    walk = transposed_dim(info) if is_gather(info) else None
    if walk is not None:
        last = info.ndims - 1
        options = [0] + [t for t in (TRANSPOSE_TILE, 2 * TRANSPOSE_TILE) if extents[last] % t == 0]
        choice = sm.choose("transpose_tile", options, options[1] if len(options) > 1 else 0)
        tile = int(choice)
        if tile and extents[last] > tile:
            outer, inner = sch.split(loops[last], [None, choice])
            keep = [d for d in range(last) if d != walk]
            sch.reorder(*[loops[d] for d in keep], outer, loops[walk], inner)
            loops = sch.get_loops(block)
            extents = [extents[d] for d in keep] + [extents[last] // tile, extents[walk], tile]
    elements = 1
    for e in info.extents:
        elements *= e if e is not None else 64
    want = tgt.num_cores > 1 and elements >= PARALLEL_MIN_ELEMENTS
    if int(sm.choose("parallel", parallel_options(tgt), int(want))):
        sch.parallel(outermost_wide(loops, extents))

