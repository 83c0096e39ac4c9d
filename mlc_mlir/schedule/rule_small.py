"""The default rules' contractions in a register tile (:mod:`.rules`), the epilogue fused.

A contraction that is not large (:mod:`.rule_blocked`) nor read along k by every input
(:mod:`.rule_rfactor`): register tile ``mr x nr`` over the last two output dims ``i, j``
(:func:`.rule_common.register_tile_for`), columns vectorized and rows unrolled, the rows'
(and, when no divisor fills the tile, the columns') partial tile peeled, one block of rows
or of column tiles per core, the elementwise consumers computed on the tile.

Decisions (``<block>.<name>`` in the trace): ``parallel``, ``peel_cols``, ``cols``,
``split_cores``, ``rows``, ``k_block``, ``epilogue_at`` (see :func:`.rules.apply_rules`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..target import Target
from .payload import BlockInfo
from .rule_common import (PARALLEL_MIN_FLOPS, Contraction, column_tile, divisors, epilogue_chain, fuse_epilogue,
                          macs, parallel_options, per_item, register_rows, register_tile_for, sample_rows,
                          view_epilogue, view_producer)
from .rule_sampler import RuleSampler
from .schedule import Schedule
from .trace import LoopRV

__all__ = ["schedule_small", "K_PANEL_BYTES"]

#: a contraction whose panel of B (K x N) is larger than this gets k in blocks outside its
#: register tiles (decision ``k_block``, :func:`_k_block`)
K_PANEL_BYTES = 1 << 20


@dataclass
class _Nest:
    """The loop nest of a contraction under construction (what the steps below decide)."""

    by_dim: dict[int, LoopRV]
    j0: LoopRV | None = None
    j1: LoopRV | None = None
    nr: int = 1
    col_peel: bool = False
    mr: int = 1
    rows_left: int | None = None  # the rows one core's loop covers (a row block per core: fewer)
    panel_cols: int = 1           # the columns a row panel covers (a column block per core: fewer)
    outer: list[LoopRV] = field(default_factory=list)
    inner: list[LoopRV] = field(default_factory=list)
    peel: LoopRV | None = None


def schedule_small(sch: Schedule, fname: str, info: BlockInfo, kind: Contraction, blocks: list[BlockInfo],
                   tgt: Target, sm: RuleSampler, scheduled: set[str]) -> set[str]:
    """Schedule contraction ``info`` in register tiles, its epilogue fused; returns the
    names of the blocks scheduled. ``scheduled``: blocks other rules have scheduled."""
    mr_cap, nr_cap = register_tile_for(info, tgt)
    ext = info.extents
    block = sch.get_block(info.name, fname)
    nest = _Nest(dict(enumerate(sch.get_loops(block))))
    ei = ext[kind.i] if kind.i is not None else None
    top_trips = ext[kind.batch[0]] if kind.batch else (ei if kind.i is not None else ext[kind.j] // 8)
    want = tgt.num_cores > 1 and macs(info) >= PARALLEL_MIN_FLOPS and (top_trips or 0) >= 2
    par = bool(int(sm.choose("parallel", parallel_options(tgt), int(want))))
    _split_columns(sch, sm, nest, info, kind, tgt, _columns_cap(ei if kind.i is not None else 1, mr_cap, nr_cap,
                                                                 tgt, info))
    nest.outer, nest.inner, nest.rows_left, nest.panel_cols = [nest.j0], [nest.j1], ei, ext[kind.j]
    if kind.i is not None:
        _split_rows(sch, sm, nest, kind, tgt, par, mr_cap, ei)
    by_dim = nest.by_dim
    chain = epilogue_chain(info, blocks, scheduled) if None not in ext else []
    k_outer = _k_block(sch, sm, nest, info, kind, tgt, chain)
    if k_outer is not None:  # the batch or the row block per core, then k's blocks, then the tiles
        lead = [by_dim[d] for d in kind.batch] or nest.outer[:len(nest.outer) - 2]
        sch.reorder(*lead, k_outer, *nest.outer[len(nest.outer) - 2 if not kind.batch else 0:],
                    by_dim[kind.reduce[0]], *nest.inner)
    else:
        sch.reorder(*[by_dim[d] for d in kind.batch], *nest.outer, *[by_dim[d] for d in kind.reduce], *nest.inner)
    if nest.peel is not None:
        sch.peel(nest.peel)
    if nest.col_peel:
        sch.peel(nest.j0)
    sch.vectorize(nest.j1)
    if kind.i is not None and nest.mr > 1:
        sch.unroll(nest.inner[0])
    done = {info.name}
    # (with a symbolic extent the fused epilogue tile does not vectorize: it gets the
    # elementwise rule instead); the consumers are computed on the register tile (j0) or on
    # the row panel (i0)
    on_panel = kind.i is not None and nest.rows_left is not None and bool(int(sm.choose("epilogue_at", [0, 1], 0)))
    if None not in ext:
        done |= fuse_epilogue(sch, fname, chain, nest.outer[-2] if on_panel else nest.j0,
                              cols=nest.panel_cols if on_panel else nest.nr, unroll_rows=nest.mr > 1)
    # a convolution's im2col per image, inside the batch loop (the parallel one, or with
    # one core serial); the init then once per image at that loop (ResNet-18's 3x3 at 256
    # and 512 channels, batch 8, 2 threads: medians 7.7-9.1 ms against 8.5-10.1 with the
    # init at k, interleaved)
    producer = view_producer(info, kind, blocks, scheduled)
    items = per_item(sch, sm, fname, by_dim[producer[1]] if producer else None, producer, parallel_inside=False)
    done |= items
    if items:  # the epilogue per item too
        done |= view_epilogue(sch, fname, info, blocks, done | scheduled, by_dim[kind.batch[0]], kind.batch[0])
    if info.has_init and None not in ext:  # (a symbolic extent's init tile does not vectorize)
        at = k_outer if k_outer is not None else by_dim[kind.reduce[0]]
        sch.decompose_reduction(block, sch.get_loops(block)[1] if items else at)
    if par:  # (a peeled loop stays serial: then the next one out runs in parallel)
        top = next((lp for lp in [by_dim[d] for d in kind.batch] + nest.outer
                    if lp is not nest.peel and not (nest.col_peel and lp is nest.j0)), None)
        if top is not None:
            sch.parallel(top)
    return done


def _split_columns(sch: Schedule, sm: RuleSampler, nest: _Nest, info: BlockInfo, kind: Contraction, tgt: Target,
                   nr_cap: int) -> None:
    """The register tile's columns (decisions ``peel_cols``, ``cols``): a divisor of the
    extent, or where no divisor fills the tile (127, 100, 1000 = 62 x 16 + 8), whole-vector
    tiles with the partial last one peeled (127 x 127: 9 GFLOP/s in 1-column tiles, 86 so;
    without the peel, divisor tiles, which the cores may share as column blocks)."""
    lanes = tgt.vector_lanes(info.element_type)
    ej = info.extents[kind.j]
    peelable = (ej is not None and ej > nr_cap and nr_cap % lanes == 0
                and column_tile(ej, nr_cap, lanes) < nr_cap)
    nest.col_peel = peelable and bool(int(sm.choose("peel_cols", [0, 1], 1)))
    if nest.col_peel:
        widths = list(range(lanes, nr_cap + 1, lanes))
        nr_rv = sm.choose("cols", widths, widths[-1])
        nest.j0, nest.j1 = sch.split(nest.by_dim[kind.j], [None, nr_rv])
        nest.nr = int(nr_rv)
    else:
        (nest.j0, nest.j1), nest.nr = sm.split("cols", nest.by_dim[kind.j], ej, column_tile(ej, nr_cap, lanes),
                                               nr_cap)


def _k_block(sch: Schedule, sm: RuleSampler, nest: _Nest, info: BlockInfo, kind: Contraction, tgt: Target,
             chain: list[BlockInfo]) -> LoopRV | None:
    """k in blocks outside the tiles (decision ``k_block``, 0: none) when the panel of B
    the tiles stream, K x N, exceeds :data:`K_PANEL_BYTES` (k's blocks inside the batch dims
    and the cores' row blocks): each tile's row of A then stays in L1 for a block of k (ResNet-18's 256 x 2304 x 196
    contraction of its 3x3 convolutions at 256 channels: 1.80 -> 1.27 ms with blocks of
    512 on 2 cores; 256 x 1152 x 196 and 512 x 4608 x 49, panels under 1 MiB, gain
    nothing). Not with a fused epilogue (it would run on a partial sum). Returns k's outer
    loop (the block's inner loop is ``by_dim[k]`` now), or None."""
    ext = info.extents
    if len(kind.reduce) != 1 or chain or None in ext or kind.i is None:
        return None
    kd = kind.reduce[0]
    panel = ext[kd] * ext[kind.j] * (tgt.vector_bits // tgt.vector_lanes(info.element_type) // 8)
    options = [d for d in divisors(ext[kd], 1024) if d >= 256 and d < ext[kd]]
    if panel <= K_PANEL_BYTES or not options:
        return None
    kc = int(sm.choose("k_block", [0, *options], max(d for d in options if d <= max(512, options[0]))))
    if not kc:
        return None
    k0, nest.by_dim[kd] = sch.split(nest.by_dim[kd], [None, kc])
    return k0


def _split_rows(sch: Schedule, sm: RuleSampler, nest: _Nest, kind: Contraction, tgt: Target, par: bool,
                mr_cap: int, ei: int | None) -> None:
    """The rows: one block per core (of rows, or of column tiles: decision ``split_cores``),
    then the register tile's rows (decision ``rows``), the partial tile peeled."""
    rows, lead, cores = nest.by_dim[kind.i], [], tgt.num_cores
    if ei is None:  # a dynamic extent (symbolic batch) is split by 1: the tile keeps static sizes
        i0, i1 = sch.split(rows, [None, 1])
    else:
        # one block per core: of rows, or of column tiles (every core gets all the rows: one
        # partial row tile in all, not one per block)
        rows_ok = par and not kind.batch and ei % cores == 0 and ei // cores >= 2
        cols_ok = par and not kind.batch and not nest.col_peel and (nest.panel_cols // nest.nr) % cores == 0
        if cols_ok and (not rows_ok or int(sm.choose("split_cores", [0, 1], 0))):
            jp, nest.j0 = sch.split(nest.j0, [cores, None])
            lead, nest.panel_cols = [jp], nest.panel_cols // cores
        elif rows_ok:
            ip, rows = sch.split(rows, [cores, None])
            lead, ei = [ip], ei // cores
        if par and not kind.batch and not lead and ei >= 2 * mr_cap:
            # rows that do not split evenly over the cores (127): the rows of the full tiles
            # first, their tiles shared by the cores, then the partial tile (the outer loop
            # peeled: a peeled loop cannot run in parallel, nor sit inside a parallel one
            # whose blocks differ)
            mr_rv = sample_rows(sm, ei, mr_cap)
            nest.mr = int(mr_rv)
            full = nest.mr * (ei // nest.mr)
            if full < ei:
                head, rows = sch.split(rows, [None, full])
                lead = [head]
            i0, i1 = sch.split(rows, [None, mr_rv])
            nest.peel = lead[0] if lead else None
        else:
            (i0, i1), nest.mr = register_rows(sm, sch, rows, ei, mr_cap)
            nest.peel = i0 if ei % nest.mr else None
    nest.rows_left = ei
    nest.outer, nest.inner = [*lead, i0, nest.j0], [i1, nest.j1]


def _columns_cap(rows: int | None, mr_cap: int, nr_cap: int, tgt: Target, info: BlockInfo) -> int:
    """The register tile's column cap for a contraction of ``rows`` rows (static, fewer than
    the tile's ``mr_cap``): wider, so that the accumulators still fill the register file and
    hide the FMA latency. With ``rows`` rows of ``nv`` vectors the tile needs ``rows * nv``
    accumulators, ``nv`` B vectors (none for one row: each B vector feeds one FMA, from
    memory) and one broadcast: a row vector times a matrix (batch 1) gets 8 AVX2 vectors of
    columns (64 f32) instead of 2, which left it latency-bound (0.91x NumPy against 0.5x)."""
    if rows is None or rows >= mr_cap:
        return nr_cap
    lanes = tgt.vector_lanes(info.element_type)
    regs = tgt.vector_registers
    nv = max(v for v in range(1, regs + 1) if rows * v + (v if rows > 1 else 0) + 1 <= regs)
    nv = 1 << (min(nv, 8).bit_length() - 1)  # a power of two: 3 rows x 3 vectors (24 f32
    # columns) ran at 6 GFLOP/s (3 x 120 x 512), 3 x 2 vectors at 40
    return max(nr_cap, nv * lanes)
