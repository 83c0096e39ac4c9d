"""The default rules' contractions of one row (a matrix-vector product), streaming B by rows.

A contraction whose output is one row (``y[0, j] = sum_k a[0, k] * b[k, j]``: a classifier at
batch 1, a decoder's projection for one token) reads every element of B once, and B is large
(MobileNet-v2's classifier: 1280 x 1000, 5 MB). The register-tile rule (:mod:`.rule_small`)
gives it tiles of one row and a few vectors of columns, each tile walking all of k: B is
read a column panel at a time, one short run per row of B, rows 4000 bytes apart. Here k is
the outer loop and the whole row of columns (one block per core) the inner one, its
accumulators in memory (the output row stays in L1): B is read row after row, contiguously.
One thread, interleaved, against the register tile: 1280 x 1000 with B out of cache 0.66-0.79
-> 0.43-0.67 ms, in cache 0.149-0.158 -> 0.126-0.128 ms; 512 x 1000 (ResNet-18's classifier)
0.330 -> 0.306; 768 x 768 0.341 -> 0.314.

Decision (``<block>.<name>`` in the trace): ``row_stream`` (1: this order; 0: the register
tile's, :mod:`.rule_small`), ``parallel``.
"""

from __future__ import annotations

from ..target import Target
from .payload import BlockInfo
from .rule_common import PARALLEL_MIN_FLOPS, Contraction, element_bytes, macs, parallel_options
from .rule_sampler import RuleSampler
from .schedule import Schedule

__all__ = ["takes_row_stream", "schedule_row_stream", "ROW_STREAM_MIN_BYTES"]

#: a one-row contraction streams B by rows from this size of B (smaller ones stay in cache
#: either way and keep the register tile)
ROW_STREAM_MIN_BYTES = 1 << 20


def takes_row_stream(info: BlockInfo, kind: Contraction, tgt: Target) -> bool:
    """Whether ``info`` is a one-row contraction for :func:`schedule_row_stream`: every
    output dim but ``j`` of one iteration, one reduction dim, B read at ``[k, j]`` with
    ``j`` contiguous, whole vectors of columns and B of at least :data:`ROW_STREAM_MIN_BYTES`."""
    ext = info.extents
    if not kind.contiguous or len(kind.reduce) != 1 or None in ext:
        return False
    others = [d for d in range(len(ext)) if d != kind.j and d not in kind.reduce]
    if any(ext[d] != 1 for d in others):
        return False
    lanes = tgt.vector_lanes(info.element_type)
    cols, k = ext[kind.j], ext[kind.reduce[0]]
    b_maps = [m for m in info.maps[:info.n_inputs] if kind.j in m]
    return (cols % lanes == 0 and len(b_maps) == 1 and b_maps[0][-1] == kind.j
            and b_maps[0][-2:-1] == (kind.reduce[0],) and cols * k * element_bytes(info) >= ROW_STREAM_MIN_BYTES)


def schedule_row_stream(sch: Schedule, fname: str, info: BlockInfo, kind: Contraction, tgt: Target,
                        sm: RuleSampler) -> set[str] | None:
    """Schedule one-row contraction ``info`` with k outside the row of columns (one block
    of them per core), the columns vectorized; None when decision ``row_stream`` says no
    (the caller's other rules then). Returns the names of the blocks scheduled (its
    epilogue is left to the elementwise rule: one pass over a row)."""
    if not int(sm.choose("row_stream", [0, 1], 1)):
        return None
    ext = info.extents
    lanes = tgt.vector_lanes(info.element_type)
    block = sch.get_block(info.name, fname)
    loops = sch.get_loops(block)
    vectors = ext[kind.j] // lanes
    want = tgt.num_cores > 1 and vectors > 1 and macs(info) >= PARALLEL_MIN_FLOPS
    par = bool(int(sm.choose("parallel", parallel_options(tgt), int(want))))
    # one block of whole vectors per core: the smallest divisor of the vectors that gives
    # every core one (125 vectors on 2 cores: 5 blocks of 25)
    blocks = next(d for d in range(min(tgt.num_cores, vectors), vectors + 1) if vectors % d == 0) if par else 1
    jb, jo, jv = sch.split(loops[kind.j], [blocks, None, lanes])
    k = loops[kind.reduce[0]]
    others = [lp for d, lp in enumerate(loops) if d != kind.j and d not in kind.reduce]
    sch.reorder(*others, jb, k, jo, jv)
    sch.vectorize(jv)
    if par:
        sch.parallel(jb)
    sch.decompose_reduction(block, k)
    return {info.name}
