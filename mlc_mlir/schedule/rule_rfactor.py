"""The default rules' contractions read along k by every input (:mod:`.rules`): ``x @ w.T``.

B read transposed with k last and a multiple of the vector lanes: k split by the lanes
and ``rfactor``-ed, the partial sums ``Y_rf`` over an ``mr x nr`` tile of accumulator
vectors (at most the registers less 4), loop order ``batch.., i0, j0, k0, i1, j1, lanes``
(lanes vectorized, ``i1``/``j1`` unrolled); the lanes summed (``Y``) and the epilogue
applied at ``j0`` on the tile.

Decisions (``<block>.<name>`` in the trace): ``parallel``, ``cols``, ``rows``.
"""

from __future__ import annotations

from ..target import Target
from .payload import BlockInfo
from .rule_common import (PARALLEL_MIN_FLOPS, Contraction, divisors, epilogue_chain, fuse_epilogue,
                          largest_divisor, macs, outermost_wide, parallel_options)
from .rule_elementwise import PARALLEL_MIN_ELEMENTS
from .rule_sampler import RuleSampler
from .schedule import Schedule

__all__ = ["lanes_along_k", "schedule_rfactor"]


def lanes_along_k(info: BlockInfo, kind: Contraction, tgt: Target) -> int | None:
    """The vector lanes when every input reads the (single, last) reduction dim contiguously
    but B is read transposed (``x @ w.T``), or no input reads the output's last dim (a
    reduction of rows kept as a dim of 1, softmax's max and sum: 0.87 ms for GPT-2's 12 x
    128 x 128 scores as a 14 x 1 register tile, serial): partial sums in lanes (rfactor)
    then; else None. Not for a body that reads its loop indices (``linalg.index``: cumsum's
    ``k <= i``), which :meth:`Schedule.rfactor` refuses."""
    kd = info.ndims - 1
    row_reduction = not any(kind.j in m for m in info.maps[:info.n_inputs])  # softmax's max / sum: j of extent 1
    if (kind.contiguous and not row_reduction) or kind.reduce != (kd,) or None in info.extents or not info.has_init \
            or "linalg.index" in info.body:
        return None
    lanes = tgt.vector_lanes(info.element_type)
    if info.extents[kd] % lanes or any(m[-1] != kd for m in info.maps[:info.n_inputs]):
        return None
    return lanes


def schedule_rfactor(sch: Schedule, fname: str, info: BlockInfo, kind: Contraction, blocks: list[BlockInfo],
                     tgt: Target, sm: RuleSampler, lanes: int, scheduled: set[str]) -> set[str]:
    """``x @ w.T``: k split by the lanes, the partial sums (``rfactor``) over an mr x nr tile
    of accumulator vectors, the lanes summed and the epilogue applied on the tile; returns
    the names of the blocks scheduled (``scheduled``: blocks other rules have scheduled)."""
    ext, kd = info.extents, info.ndims - 1
    # (a reduction of one input -- softmax's max and sum, layer_norm's sums: memory-bound --
    # from as many elements as an elementwise block: BERT d256's layer_norm at batch 8,
    # 1024 x 256, its sums on one core 0.153 ms a call, on two 0.114)
    least = PARALLEL_MIN_ELEMENTS if info.n_inputs == 1 else PARALLEL_MIN_FLOPS
    par = bool(int(sm.choose("parallel", parallel_options(tgt), int(tgt.num_cores > 1 and macs(info) >= least))))
    block = sch.get_block(info.name, fname)
    k0, k1 = sch.split(sch.get_loops(block)[kd], [None, lanes])
    rf = sch.rfactor(k1)
    loops = sch.get_loops(rf)
    accs = max(1, tgt.vector_registers - 4)
    nr = int(sm.choose("cols", divisors(ext[kind.j], accs),
                       largest_divisor(ext[kind.j], 4 if kind.i is not None else accs)))
    j0, j1 = sch.split(loops[kind.j], [None, nr])
    outer, inner, mr = [j0], [j1], 1
    if kind.i is not None:
        mr = int(sm.choose("rows", divisors(ext[kind.i], accs // nr), largest_divisor(ext[kind.i], accs // nr)))
        i0, i1 = sch.split(loops[kind.i], [None, mr])
        outer, inner = [i0, j0], [i1, j1]
    sch.reorder(*[loops[d] for d in kind.batch], *outer, loops[kd], *inner, loops[-1])
    sch.vectorize(loops[-1])
    for lp, f in zip(reversed(inner), (nr, mr)):
        if f > 1:
            sch.unroll(lp)
    sch.decompose_reduction(rf, loops[kd])
    sch.reverse_compute_at(block, j0)  # the lanes summed on the tile
    done = {info.name} | fuse_epilogue(sch, fname, epilogue_chain(info, blocks, scheduled), j0, cols=nr,
                                       unroll_rows=False)
    if par:
        outer_ext = [ext[kind.i] // mr] if kind.i is not None else []
        sch.parallel(outermost_wide([loops[d] for d in kind.batch] + outer,
                                    [ext[d] for d in kind.batch] + outer_ext + [ext[kind.j] // nr]))
    return done
