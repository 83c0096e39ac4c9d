"""The default rules' large contractions (:mod:`.rules`): the structure of a BLAS kernel.

A contraction whose B panel does not stay in cache (:func:`is_large`) is scheduled as
``benchmarks/schedules/matmul1024.mlir`` is written by hand: the cores share column
blocks, k in cache blocks with B's panel copied once per block, the target's full
register tile with the rows' remainder peeled, k unrolled inside the tile rows
(:func:`schedule_blocked`).

Decisions (``<block>.<name>`` in the trace): ``parallel``, ``peel_cols``, ``col_block``,
``split_cores``, ``row_block``, ``rows``, ``k_block``, ``k_unroll``, ``cache_b``, ``epilogue_panel`` (see
:func:`.rules.apply_rules`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..target import PAGE_BYTES, Target
from .payload import BlockInfo
from .rule_common import (Contraction, column_tile, divisors, element_bytes, epilogue_chain, fuse_epilogue, largest_divisor,
                          macs, parallel_options, per_item, register_rows, register_tile_for, view_epilogue,
                          view_producer)
from .rule_sampler import RuleSampler
from .schedule import Schedule
from .trace import BlockRV, LoopRV

__all__ = ["LARGE_MACS", "K_BLOCK", "MIN_COLUMNS", "NC_BLOCK", "NC_LARGE_L2", "LARGE_L2", "KC_BLOCK", "K_UNROLL",
           "NC_PEELED", "KC_PEELED", "UNROLL_MAX_REGISTERS", "KC_LARGE_L2", "FEW_COLUMNS_PANEL_BYTES", "FEW_ROWS", "PACKED_MIN_COLUMNS", "PACKED_MIN_MACS",
           "LINE_BYTES",
           "is_large", "schedule_blocked", "k_unroll_cap"]

#: contractions from this many multiply-adds (with a reduction of at least K_BLOCK and
#: MIN_COLUMNS columns) get cache blocks (NC_BLOCK x KC_BLOCK panels of B, one block of
#: rows per core)
LARGE_MACS = 1 << 24
#: the shortest reduction of a large contraction: ResNet-18's 7x7 stem as im2col + gemm
#: (64 x 147 x 12544) ran at 233 GFLOP/s blocked, 116 in the register-tile rule (2 cores)
K_BLOCK = 128
#: the fewest columns of a large contraction: with fewer, the register-tile rule measured
#: faster (ResNet-18's last convolutions as gemms: 512 x 4608 x 49 291 GFLOP/s against 66
#: blocked, 256 x 2304 x 196 189 against 130; 128 x 1152 x 784 127 against 197)
MIN_COLUMNS = 256
#: ... except a contraction of at most this many columns whose B (K x N) is larger than
#: the target's L2: the register-tile rule then streams all of B from L3 for every row
#: panel. ResNet-18's 512 x 4608 x 49 (B 903 KB) on a 512 KB-L2 AVX2 host (Zen 3, one
#: thread, interleaved): 6.0-7.5 ms in the register-tile rule, 4.1-5.5 blocked; on a 2 MB
#: L2 it stays in the register-tile rule (291 GFLOP/s against 66 blocked, above). At 196
#: columns (256 x 2304 x 196, B 1.8 MB) the register-tile rule stays faster on both
#: (3.6-4.9 ms against 8.2-8.4 on the Zen 3 host).
FEW_COLUMNS = 64
#: the large-contraction rule's default cache blocks: NC columns by KC of k (the KC x NC
#: panel of B copied to a local buffer; 512 x 64 f32 = 128 KiB, a quarter of a Zen 3 L2:
#: matmul 1024 measured 1.09x NumPy's one-thread time against 1.12x for 128 columns, 1.24x
#: for 256; KC 256: 1.11x)
NC_BLOCK = 64
KC_BLOCK = 512
#: NC on a core with an L2 of at least :data:`LARGE_L2` bytes (the panel of B 256 KiB, an
#: eighth of a 2 MiB L2) when A's block does not stay in L2 (:func:`_a_block_leaves_l2`):
#: each row of A is then read from L3 half as often. Emerald Rapids
#: (2 MiB L2, AVX-512), one thread, interleaved: BERT's 1024 x 768 x 2304 contraction 130
#: -> 154 GFLOP/s (256 columns: 151), 1024 x 3072 x 768 168 / 170 (256: 148); torch 168-173
NC_LARGE_L2 = 128
LARGE_L2 = 1 << 20
#: KC on such a core (the panel of B at most 1024 x 128 f32 = 512 KiB, a quarter of a 2 MiB
#: L2): a reduction of 768 in one block instead of two of 384. AVX-512 Xeon (2 MiB L2), one
#: thread, interleaved: BERT's 1024 x 768 x 3072 138 -> 146 GFLOP/s, 1024 x 768 x 2304 146
#: -> 154, 1024 x 768 x 768 144 -> 153, 1024 x 3072 x 768 153 -> 159 (KC 1024; 768: 161);
#: matmul 1024 the same (148 / 148; two threads 294 / 296)
KC_LARGE_L2 = 1024
#: the large-contraction rule unrolls its k loop by up to this many steps (matmul 1024: by 8,
#: 1.01-1.04x NumPy's one-thread time against 1.03-1.06x by 1, one process, interleaved) on
#: targets of at most :data:`UNROLL_MAX_REGISTERS` vector registers; not at all on more
#: (:func:`k_unroll_cap`)
K_UNROLL = 8
#: the most vector registers of a target whose k loop is unrolled: AVX-512's 14 x 32 tile
#: holds 28 of the 32 registers, and the machine schedulers of LLVM's Skylake-server,
#: Ice Lake and Rocket Lake models hoist every unrolled step's B loads above the FMAs and
#: spill (212 stack accesses in the k loop's code, 28 unrolled by 1): matmul 1024, one
#: thread, on an AVX-512 Xeon that LLVM names ``rocketlake``: 78 GFLOP/s unrolled by 8, 140
#: by 2, 152-160 by 1; 1024 x 3072 x 768 78 / 88 / 147 (the Sapphire Rapids model: 161
#: against 156). AVX2's 6 x 16 tile on the same host by 8 / by 1: 121 / 115 (Skylake
#: model), 118 / 117 (Zen 3), 123 / 118 (Haswell).
UNROLL_MAX_REGISTERS = 16
#: the column block when its full register tiles leave a partial one (peeled): wider, so
#: that the partial tile is a small part of it (1000 columns: 200, 12 full tiles of 16 + 8),
#: and k's block then smaller (a 250 x 200 panel of B): matmul 1000 1.10-1.13x NumPy's
#: one-thread time against 1.24x with KC 500 and 1.44x in 12 x 8 tiles without the peel
NC_PEELED = 256
KC_PEELED = 256
#: with at most :data:`FEW_COLUMNS` columns, k's block is the largest whose panel of B
#: stays within this many bytes (an L1 data cache): each row tile reads A once for few
#: column tiles, so the panel is what the tile re-reads. ResNet-18's 512 x 4608 x 49
#: (3x3 convolution at 7 x 7, one thread, Zen 3, interleaved in one process): KC 128
#: (a 25 KB panel) 3.9-4.2 ms, 256 (50 KB) 4.6-5.6, 64 4.6, 192 4.8
FEW_COLUMNS_PANEL_BYTES = 32 << 10
#: a contraction of at most this many rows whose rows of B are a page or more apart stays in
#: the register-tile rule: its few row tiles re-read B's rows with software prefetch
#: (:mod:`mlc_mlir.compiler.prefetch`) faster than the panel copy streams them once.
#: MobileNet-v2's 1x1 convolution of 144 -> 24 channels at 56 x 56 (24 x 144 x 3136 per image),
#: batch 8, one thread, interleaved in one process: 3.7 / 4.9 ms against 4.3 / 6.3 blocked
#: (at 28 x 28, rows 3 KB apart and no prefetch, blocked stays faster: 2.1 against 3.2)
FEW_ROWS = 24
#: a contraction of fewer than :data:`MIN_COLUMNS` columns but at least this many, whose B
#: comes straight from the kernel's arguments with rows that do not start on cache lines
#: (:func:`_b_rows_unaligned`) and fills more than a third of an L2 of less than
#: :data:`LARGE_L2` (but stays in it), gets cache blocks too: the copied panel of B is
#: contiguous and aligned, where the register-tile rule re-read B's rows from L2 for every
#: row tile, half of its vectors across two cache lines. (On the 2 MB-L2 AVX-512 host the
#: register-tile rule measured the faster with B in L2: :data:`FEW_COLUMNS`.) MobileNet-v2's
#: 1x1 convolutions at batch 8 (per image a gemm of 196 or 49 columns on the input as it
#: is; Zen 3, interleaved in one process), one thread: 576 -> 96 channels at 14 x 14 (with
#: the residual add) 4.2 -> 2.9 ms and 4.6 -> 3.4, 384 -> 96 2.3 -> 2.0, 384 -> 64 1.5-1.6
#: -> 1.3-1.4, 960 -> 320 at 7 x 7 6.0 -> 4.9, 960 -> 160 2.8 -> 2.4 (B 188-451 KB); two
#: threads 4.6 -> 3.4, 1.6 -> 1.3, 1.5 -> 1.3, 3.1 -> 2.8, 1.45 -> 1.33. A smaller B stays
#: in the register-tile rule: 192 -> 64 at 14 x 14 (150 KB) 1.09 -> 0.98 ms on one thread
#: but 0.64 -> 0.69 on two; 160 -> 960 and 320 -> 1280 at 7 x 7 (31 and 63 KB) 1.38 ->
#: 1.51 and 3.1 -> 3.4 on two
PACKED_MIN_COLUMNS = 32
#: ... from this many multiply-adds (MobileNet-v2 at batch 1, one image's gemm under
#: :data:`LARGE_MACS`; the input out of cache, as in a model), one thread: 576 -> 96 at
#: 14 x 14 0.78 -> 0.62 ms, 384 -> 64 0.56 -> 0.41, 384 -> 96 0.63 -> 0.57, 960 -> 320 at
#: 7 x 7 0.91 -> 0.83, 960 -> 160 0.55 -> 0.51; two threads 0.62 -> 0.45, 0.36 -> 0.28, 0.42
#: -> 0.36, 0.60 -> 0.50, 0.35 -> 0.29
PACKED_MIN_MACS = 1 << 22
#: cache line bytes: B's rows start on one when the row's bytes are a multiple of it
LINE_BYTES = 64


def is_large(info: BlockInfo, kind: Contraction, tgt: Target) -> bool:
    """A contraction whose B panel does not stay in cache: it gets cache blocks (batch dims
    stay the outermost loops: a convolution's per-image gemms at batch 8, ResNet-18's 3x3
    at 64 channels 38.8 -> 25.9 ms, its 7x7 stem 38 -> 29 ms), from :data:`LARGE_MACS`
    multiply-adds: :data:`MIN_COLUMNS` columns or more, or at most :data:`FEW_COLUMNS` whose
    B is larger than ``tgt``'s L2; from :data:`PACKED_MIN_MACS`, at least
    :data:`PACKED_MIN_COLUMNS` read from unaligned rows of an argument that fills more than a
    third of an L2 of less than :data:`LARGE_L2` and stays in it; not at most
    :data:`FEW_ROWS` rows whose rows of B are a page apart (prefetched instead)."""
    ext = info.extents
    if not (kind.contiguous and kind.i is not None and len(kind.reduce) == 1 and None not in ext):
        return False
    n_macs = macs(info)
    if not (ext[kind.reduce[0]] >= K_BLOCK and n_macs >= min(LARGE_MACS, PACKED_MIN_MACS)
            and sum(kind.j in m for m in info.maps[:info.n_inputs]) == 1):
        return False
    cols, k = ext[kind.j], ext[kind.reduce[0]]
    if ext[kind.i] <= FEW_ROWS and cols * element_bytes(info) >= PAGE_BYTES:
        return False
    l2 = tgt.l2_bytes
    b_bytes = k * cols * element_bytes(info)
    large = n_macs >= LARGE_MACS and (cols >= MIN_COLUMNS or (cols <= FEW_COLUMNS and l2 is not None
                                                                 and b_bytes > l2))
    return large or (n_macs >= PACKED_MIN_MACS and cols >= PACKED_MIN_COLUMNS and l2 is not None
                     and l2 // 3 < b_bytes <= l2 < LARGE_L2 and _b_rows_unaligned(info, kind))


def _b_rows_unaligned(info: BlockInfo, kind: Contraction) -> bool:
    """Whether B (the operand read at the columns) is a kernel argument, or a reshape of
    one, read at ``[k, j]`` with rows that are not a whole number of cache lines
    (:data:`LINE_BYTES`): a 1x1 convolution's input ``(C, H * W)`` per image."""
    b = next(o for o, m in enumerate(info.maps[:info.n_inputs]) if kind.j in m)
    src, bmap = info.sources[b], info.maps[b]
    from_args = src.kind == "arg" or (src.kind == "value" and src.name in ("tensor.collapse_shape",
                                                                           "tensor.expand_shape"))
    row_bytes = info.extents[kind.j] * element_bytes(info)
    return from_args and bmap[-1] == kind.j and bmap[-2:-1] == (kind.reduce[0],) and row_bytes % LINE_BYTES != 0


@dataclass(frozen=True)
class _Columns:
    """The column structure: the register tile's columns, the column block, the peel."""

    nr: int
    nc: Any         # an int, or the sampled ExprRV
    col_peel: bool
    mr_cap: int


def schedule_blocked(sch: Schedule, fname: str, info: BlockInfo, kind: Contraction, tgt: Target,
                     sm: RuleSampler, blocks: list[BlockInfo], scheduled: set[str]) -> set[str]:
    """A large contraction in the structure of a BLAS kernel (as the hand script
    benchmarks/schedules/matmul1024.mlir): ``j0, ip, k0, it, jt, k1, ir, jr``.

    The columns by NC and k by KC (the KC x NC panel of B, copied once per (NC, KC) block
    into a local buffer at ``k0``: ``cache_read`` + ``compute_at``, hoisted out of both
    register-tile loops); the target's full ``mr x nr`` register tile, rows outer and
    columns inner so that A's ``mr x KC`` micro-panel stays in L1 while the panel of B
    streams; the rows' partial tile peeled (every tile of the main loop full). The cores
    share the NC column blocks (``j0`` outermost, parallel: each panel of B is copied once,
    by the core that uses it; A is read by both) or, when the column blocks do not share
    out evenly, blocks of rows (``ip`` outermost: each core copies its own panels of B).
    Matmul 1024 on a 2-core Zen 3 measured 1.03-1.05x NumPy's one-thread time with column
    blocks against 1.07-1.09x with row blocks (half the copies of B, no 2-row remainder
    per block); k unrolled by 8 inside the tile's rows: 1.02-1.04x on 1 and 2 threads. The
    tile's columns are whole vectors (1000 columns: 12 x 8 tiles, 1.3-1.4x NumPy, against
    4.3x with 10-column tiles), or where no full tile divides the columns, full tiles in
    wider column blocks with the partial one peeled (1000: blocks of 200 = 12 x 16 + 8,
    k by 250: 1.1-1.2x). Returns the names of the blocks scheduled (this one)."""
    ext = info.extents
    (kd,) = kind.reduce
    block = sch.get_block(info.name, fname)
    loops = sch.get_loops(block)
    ei, ej, cores = ext[kind.i], ext[kind.j], tgt.num_cores
    par = bool(int(sm.choose("parallel", parallel_options(tgt), int(cores > 1))))
    cols = _column_blocks(sm, info, kind, tgt)
    col_blocks = ej // int(cols.nc)
    # (serial: the columns outermost, no decision)
    on_cols = int(sm.choose("split_cores", [0, 1] if par else [1],
                            int(not par or col_blocks % cores == 0 or col_blocks >= 4 * cores)))
    row_opts = sorted({ei // p for p in divisors(ei, 4 * cores)})
    rows_rv = sm.choose("row_block", row_opts, ei // (largest_divisor(ei, cores) if par and not on_cols else 1))
    ip, ib = sch.split(loops[kind.i], [None, rows_rv])
    rows = int(rows_rv)
    (it, ir), mr = register_rows(sm, sch, ib, rows, cols.mr_cap)
    j0, jb = sch.split(loops[kind.j], [None, cols.nc])
    jt, jr = sch.split(jb, [None, cols.nr])
    k0, k1, kr, ku = _k_blocks(sch, sm, tgt, loops[kd], ext[kd], cols.col_peel,
                               ej * element_bytes(info) if ej <= FEW_COLUMNS else None)
    outer = [j0, ip] if on_cols else [ip, j0]
    producer = view_producer(info, kind, blocks, scheduled)
    # (an item the producer is computed per -- an image, for a convolution with the pixels
    # as rows, whose B, the weights, has no batch dim -- stays an outer loop: ResNet-18's
    # 256-channel 3x3 convolution at 14 x 14, batch 8, one thread: 41 ms with the images as
    # rows of one gemm after one im2col of them all (14.5 MB), 26 ms per image)
    row_dims = [d for d in _row_dims(info, kind) if producer is None or d != producer[1]]
    # (the batch dims B reads first: a band of a convolution's output rows, (n, f, band, p))
    sch.reorder(*[loops[d] for d in kind.batch if d not in row_dims], *outer, k0, *[loops[d] for d in row_dims],
                it, jt, k1, ir, kr, jr)
    if rows % mr:
        sch.peel(it)
    if cols.col_peel:
        sch.peel(jt)
    sch.vectorize(jr)
    if mr > 1:
        sch.unroll(ir)
    if ku > 1:
        sch.unroll(kr)
    if int(sm.choose("cache_b", [0, 1], 1)):
        _copy_b_panel(sch, block, info, kind, k0)
    items = ext[kind.batch[0]] if producer is not None else 0
    # per item, the cores share the items when they come out even (each its own im2col)
    on_batch = par and producer is not None and (items % cores == 0 or items >= 4 * cores)
    done = per_item(sch, sm, fname, loops[producer[1]] if producer else None, producer,
                    parallel_inside=par and not on_batch)
    if done:  # the epilogue per item too
        done |= view_epilogue(sch, fname, info, blocks, scheduled, loops[kind.batch[0]], kind.batch[0])
    else:
        done |= _panel_epilogue(sch, sm, fname, info, blocks, scheduled, outer[0], int(cols.nc) if on_cols else ej)
    if par:
        sch.parallel(loops[kind.batch[0]] if on_batch and done else outer[0])
    elif tgt.num_cores == 1 and done and producer is None:
        # (one core: the epilogue's panel loop as an scf.forall all the same, which the build
        # runs serially; bufferized so, each panel of the result gets a buffer of its own, where
        # the scf.for carried the whole result: BERT d256's 1024 x 256 x 1024 + bias + ReLU at
        # batch 8, one thread, 5.2 -> 4.1 ms: the 4 MB result no longer written and read back)
        sch.parallel(outer[0])
    return {info.name} | done


def _panel_epilogue(sch: Schedule, sm: RuleSampler, fname: str, info: BlockInfo, blocks: list[BlockInfo],
                    scheduled: set[str], at: LoopRV, cols: int) -> set[str]:
    """Decision ``epilogue_panel`` (1: the elementwise consumers of the result, a linear
    layer's bias add and activation, computed per iteration of the outermost loop ``at``,
    once its block of the result, ``cols`` columns wide, is complete): the block is read
    back from cache (its columns vectorized up to ``MAX_VECTOR_ELEMENTS``), and
    the result lives in one block per core instead of a buffer of its own (BERT's
    1024 x 256 x 1024 feed-forward + bias: a 4 MB buffer written, then read by the add).
    Returns the blocks scheduled."""
    chain = epilogue_chain(info, blocks, scheduled) if None not in info.extents else []
    if not chain or not int(sm.choose("epilogue_panel", [0, 1], 1)):
        return set()
    return fuse_epilogue(sch, fname, chain, at, cols=cols, unroll_rows=False)


def _row_dims(info: BlockInfo, kind: Contraction) -> list[int]:
    """The batch dims B does not read: more rows of the gemm (a linear layer on a permuted
    input, ``(s, b, n) += x[b, s, k] * w[k, n]``), looped inside ``k0`` so that each copied
    panel of B serves all of them (outermost, the panel was copied and the cores forked once
    per row block: BERT's input projection at batch 8, 128 x 8 rows, 3.6 -> 1.45 ms on 2 cores)."""
    b_map = next(m for m in info.maps[:info.n_inputs] if kind.j in m)
    return [d for d in kind.batch if d not in b_map]


def _column_blocks(sm: RuleSampler, info: BlockInfo, kind: Contraction, tgt: Target) -> _Columns:
    """The tile's columns and the column block NC (decisions ``peel_cols``, ``col_block``).

    Whole vectors of columns (1000 columns: 8, not 10); a tile of one vector takes more
    rows (the accumulators fill the registers less 4: AVX2 12 x 8). Columns no full tile
    divides (1000 = 5 x 200, 200 = 12 x 16 + 8): the full tile, its partial last one peeled
    in each column block (``peel_cols``; without it, narrower tiles). NC a multiple of the
    tile's columns up to 512 (default :data:`NC_BLOCK`, or :data:`NC_PEELED` peeled)."""
    mr_cap, nr_cap = register_tile_for(info, tgt)
    ej = info.extents[kind.j]
    lanes = tgt.vector_lanes(info.element_type)
    nr = column_tile(ej, nr_cap, lanes)
    wide = _peeled_blocks(ej, nr_cap, lanes)
    col_peel = bool(nr < nr_cap and nr_cap % lanes == 0 and wide and int(sm.choose("peel_cols", [0, 1], 1)))
    if col_peel:
        nc = sm.choose("col_block", wide, max(d for d in wide if d <= max(NC_PEELED, wide[0])))
        return _Columns(nr_cap, nc, True, mr_cap)
    if nr == lanes and nr_cap > lanes:
        mr_cap = max(mr_cap, tgt.vector_registers - 4)
    nc_opts = [d for d in divisors(ej, 512) if d % nr == 0] or [ej]
    nc_block = NC_LARGE_L2 if _a_block_leaves_l2(info, kind, tgt) else NC_BLOCK
    nc = sm.choose("col_block", nc_opts, max(d for d in nc_opts if d <= max(nc_block, nc_opts[0])))
    return _Columns(nr, nc, False, mr_cap)


def _peeled_blocks(ej: int, nr: int, lanes: int) -> list[int]:
    """The column blocks for full ``nr``-column tiles with the partial last one peeled: the
    divisors of ``ej`` wider than a tile (up to 512) whose partial tile is whole vectors of
    up to 8 lanes (1000 columns in 16-lane tiles of 32: 200 = 6 x 32 + 8, not 250 = 7 x 32 +
    26), else any (257 columns, a prime: one block of 8 x 32 + 1; without it, the tile was
    one column wide and matmul 257 ran at 12 GFLOP/s on AVX-512, 14x NumPy). Blocks of
    whole vectors first: the copied panel's rows then start on vector (cache line)
    boundaries (Emerald Rapids, 1000 x 1008 x 1000: blocks of 144 124-144 GFLOP/s, of 168
    93-97)."""
    wide = [d for d in divisors(ej, 512) if d > nr]
    step = min(lanes, 8)
    whole = [d for d in wide if d % nr % step == 0]
    aligned = [d for d in whole if d % lanes == 0]
    return aligned or whole or wide


def _a_block_leaves_l2(info: BlockInfo, kind: Contraction, tgt: Target) -> bool:
    """Whether the target's L2 holds :data:`LARGE_L2` bytes and A's block of one k step
    (the rows by KC) does not stay in half of it: it is then read from L3 once per column
    block, and wider blocks (:data:`NC_LARGE_L2`) halve that. An A block that stays in L2
    gains nothing from them, and the copied panel of B, per core, doubles (BERT d256 at
    batch 1, 128 rows: a call's planned peak 1.4 -> 1.8 MB)."""
    l2 = tgt.l2_bytes or 0
    rows, k = info.extents[kind.i], info.extents[kind.reduce[0]]
    size = max(1, tgt.vector_bits // 8 // tgt.vector_lanes(info.element_type))
    return l2 >= LARGE_L2 and rows * min(k, KC_BLOCK) * size > l2 // 2


def k_unroll_cap(tgt: Target) -> int:
    """The most k steps the large-contraction rule unrolls on ``tgt`` by default:
    :data:`K_UNROLL`, or 1 on targets of more than :data:`UNROLL_MAX_REGISTERS` vector
    registers (the unrolled loads spill there)."""
    return K_UNROLL if tgt.vector_registers <= UNROLL_MAX_REGISTERS else 1


def _k_blocks(sch: Schedule, sm: RuleSampler, tgt: Target, k: LoopRV, ek: int, col_peel: bool,
              row_bytes: int | None = None) -> tuple[LoopRV, LoopRV, LoopRV, int]:
    """k by KC (decision ``k_block``: 64 to 1024, default :data:`KC_BLOCK` (or
    :data:`KC_LARGE_L2` where the target's L2 holds :data:`LARGE_L2`), or
    :data:`KC_PEELED` with peeled columns, or with few columns -- ``row_bytes``, the bytes
    of one k step of B -- the largest whose panel fits :data:`FEW_COLUMNS_PANEL_BYTES`),
    then KC by the k steps unrolled inside the tile's rows (decision ``k_unroll``: the
    divisors of KC up to :data:`K_UNROLL`, by default the largest up to
    :func:`k_unroll_cap`): fewer loop branches and address updates between the FMAs (unrolled
    outside the rows, each k step's 6 row updates chain from the loop's tile tensor again:
    bufferization then copies the tile at every step, 1 GFLOP/s). Returns ``k0, k1, kr``
    and the unroll."""
    kc_opts = [d for d in divisors(ek, 1024) if d >= 64] or [ek]
    kc_block = KC_PEELED if col_peel else KC_LARGE_L2 if (tgt.l2_bytes or 0) >= LARGE_L2 else KC_BLOCK
    if row_bytes:
        kc_block = min(kc_block, FEW_COLUMNS_PANEL_BYTES // row_bytes)
    kc = sm.choose("k_block", kc_opts, max(d for d in kc_opts if d <= max(kc_block, kc_opts[0])))
    k0, k1 = sch.split(k, [None, kc])
    ku = int(sm.choose("k_unroll", divisors(int(kc), K_UNROLL), largest_divisor(int(kc), k_unroll_cap(tgt))))
    k1, kr = sch.split(k1, [None, ku])
    return k0, k1, kr, ku


def _copy_b_panel(sch: Schedule, block: BlockRV, info: BlockInfo, kind: Contraction, k0: LoopRV) -> None:
    """B's KC x NC panel copied into a local buffer at ``k0`` (decision ``cache_b``), the
    copy vectorized along its columns."""
    b_index = next(o for o, m in enumerate(info.maps[:info.n_inputs]) if kind.j in m)
    local = sch.cache_read(block, b_index, "local")
    sch.compute_at(local, k0)
    sch.vectorize(sch.get_loops(local)[-1])
