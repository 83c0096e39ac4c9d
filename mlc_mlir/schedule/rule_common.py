"""What the default schedule rules share: the one helper module of the rule modules.

The rules are split by the kind of block they schedule, each a module that imports only
from here, :mod:`.rule_sampler` (the named decisions) and the public schedule API:

* :mod:`.rule_small` -- contractions in a register tile, the elementwise epilogue fused;
* :mod:`.rule_blocked` -- large contractions, cache blocks as a BLAS kernel has them;
* :mod:`.rule_rfactor` -- contractions read along k by every input (``x @ w.T``): lane
  partial sums;
* :mod:`.rule_elementwise` -- blocks with only spatial dims;
* :mod:`.gpu_rules` -- GPU kernels (thread binding);

and :mod:`.rules` picks one per block. Here: what a contraction is (:class:`Contraction`,
:func:`contraction_of`), the register tile's caps and sizes, divisors, the rows decision,
the fused epilogue (:func:`epilogue_chain`, :func:`fuse_epilogue`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from ..target import Target, TargetError
from .payload import BlockInfo
from .rule_sampler import RuleSampler
from .schedule import Schedule
from .state import MAX_VECTOR_ELEMENTS
from .trace import BlockRV, LoopRV

__all__ = ["PARALLEL_MIN_FLOPS", "Contraction", "contraction_of", "is_plain", "register_tile_for", "element_bytes",
           "vector_lanes_or_none", "largest_divisor", "divisors", "macs", "column_tile", "parallel_options",
           "outermost_wide", "sample_rows", "register_rows", "epilogue_chain", "fuse_epilogue", "loops_inside",
           "view_producer", "per_item", "view_epilogue"]

log = logging.getLogger("mlc_mlir.schedule.rules")

#: a contraction runs its outer loop in parallel from this many multiply-adds (OpenMP
#: start-up costs about a microsecond with spinning workers: on 2 cores 64 x 128 x 64 took
#: 11.5 us on one, 7.1 on two; 64^3 5.8 and 4.0, too close to a worker's wake-up)
PARALLEL_MIN_FLOPS = 1 << 19


@dataclass(frozen=True)
class Contraction:
    """What the contraction rules need to know about a block.

    Attributes:
        i: the iteration dim of the second-to-last output dim (None for a 1-d output), or
            of the one output dim the A operand (the input without ``j``) reads.
        j: the iteration dim of the last output dim.
        batch: the iteration dims of the other output dims.
        reduce: the reduction dims.
        contiguous: ``j`` is the last index of every input operand that reads it.
    """

    i: int | None
    j: int
    batch: tuple[int, ...]
    reduce: tuple[int, ...]
    contiguous: bool


def is_plain(info: BlockInfo) -> bool:
    """Every operand indexed by plain iteration dims (no reshape arithmetic); an input dim
    of size 1 may be indexed by a constant (a broadcast scalar)."""
    return all(d is not None or (o < info.n_inputs and info.shapes[o][r] == 1)
               for o, m in enumerate(info.maps) for r, d in enumerate(m))


def contraction_of(info: BlockInfo) -> Contraction | None:
    """``info`` as a contraction: a plain block with reduction dims whose output's last dim
    is a static spatial dim; None for any other block."""
    out = info.maps[-1]
    if not is_plain(info) or not any(info.is_reduction(d) for d in range(info.ndims)) or not out or None in out:
        return None
    if all(info.extents[d] == 1 for d in range(info.ndims) if info.is_reduction(d)):
        return None  # a sum over one element is a copy (te's way to keep a block from being inlined)
    if any(None in m for m in info.maps[:info.n_inputs]):
        # an operand read at a constant index (a reshape that dropped unit dims, fused in:
        # x[i, k, 0, 0]) is not a projected permutation, which linalg's vectorizer needs
        return None
    j = out[-1]
    if info.is_reduction(j) or info.extents[j] is None:
        return None
    i = out[-2] if len(out) >= 2 else None
    a_maps = [m for m in info.maps[:info.n_inputs] if j not in m]
    if i is not None and len(a_maps) == 1 and i not in a_maps[0]:
        # the rows are the output dim A reads: a convolution in bands of output rows writes
        # (n, f, band, rows * ow), its kernel read at [f, k]: f the rows, band a batch dim
        rows = [d for d in out[:-1] if d in a_maps[0]]
        i = rows[0] if len(rows) == 1 else i
    reduce = tuple(d for d in range(info.ndims) if info.is_reduction(d))
    batch = tuple(d for d in out[:-1] if d is not None and d != i)
    readers = [m for m in info.maps[:info.n_inputs] if j in m]
    contiguous = all(m[-1] == j for m in readers)
    return Contraction(i, j, batch, reduce, contiguous)


def register_tile_for(info: BlockInfo, target: Target) -> tuple[int, int]:
    """The (rows, columns) register-tile caps of a contraction block on ``target``: the
    target's (:meth:`Target.register_tile`), or with B read transposed one vector of
    columns and half the registers of rows."""
    kind = contraction_of(info)
    dtype = info.element_type
    lanes = target.vector_lanes(dtype)
    if kind is None or kind.contiguous:
        return target.register_tile(dtype)
    return target.vector_registers // 2, lanes


def vector_lanes_or_none(target: Target, info: BlockInfo) -> int | None:
    """The vector lanes of ``info``'s element type on ``target``; None (logged) for a type
    the target has no vector rule for (i1, bf16...): the rules leave that block as it is."""
    try:
        return target.vector_lanes(info.element_type)
    except TargetError as exc:  # the target's table of vector types decides
        log.debug("default rules leave block %r of @%s unscheduled: %s", info.name, info.func, exc)
        return None


def largest_divisor(extent: int | None, cap: int) -> int:
    """The largest divisor of ``extent`` up to ``cap`` (1 for a symbolic extent)."""
    if extent is None:
        return 1
    return max(d for d in range(1, min(extent, max(cap, 1)) + 1) if extent % d == 0)


def divisors(extent: int | None, cap: int) -> list[int]:
    """The divisors of ``extent`` up to ``cap``, ascending (``[1]`` for a symbolic extent)."""
    return [d for d in range(1, min(extent or 1, max(cap, 1)) + 1) if (extent or 1) % d == 0]


def element_bytes(info: BlockInfo) -> int:
    """Bytes of one element of ``info``'s type (f32: 4, f16: 2, i64: 8)."""
    return int("".join(ch for ch in info.element_type if ch.isdigit()) or 32) // 8


def macs(info: BlockInfo) -> int:
    """The block's iterations (multiply-adds of a contraction); a symbolic extent counts 64."""
    n = 1
    for e in info.extents:
        n *= e if e is not None else 64
    return n


def column_tile(extent: int | None, cap: int, lanes: int) -> int:
    """The register tile's columns: the largest divisor of ``extent`` up to ``cap`` that is
    whole vectors, else the largest divisor up to one vector. A tile wider than a vector
    that is not whole vectors lowers badly: the course MLP's last layer (64 x 10 outputs,
    k 128) ran 25 us as one ``vector<10xf32>`` per row, 6.5 us in tiles of 5 columns."""
    if extent is None:
        return 1
    whole = [d for d in range(lanes, min(extent, cap) + 1, lanes) if extent % d == 0]
    return whole[-1] if whole else largest_divisor(extent, lanes)


def parallel_options(tgt: Target) -> list[int]:
    """The options of a ``parallel`` decision: one only where the target has one core, so
    that the tuner spends no trial on a one-thread parallel loop."""
    return [0, 1] if tgt.num_cores > 1 else [0]


def outermost_wide(loops: list[LoopRV], extents: list[int | None]) -> LoopRV:
    """The outermost of ``loops`` (extents ``extents``, None: dynamic) with more than one
    iteration, the loop to run in parallel: a batch of one leads most loop nests, and in
    parallel it ran every elementwise, depthwise and pooling block of a batch-1 model on one
    core (MobileNet-v2 at batch 1 on 2 cores: the worker waited 32% of the time)."""
    return next((lp for lp, e in zip(loops, extents) if e is None or e > 1), loops[0])


def sample_rows(sm: RuleSampler, extent: int, cap: int, *, divide: bool = False) -> Any:
    """Decision ``rows``: the register tile's rows ``mr``, 1 up to ``cap`` (by default the
    target's, or with ``divide`` the largest divisor of ``extent``); an ExprRV when sampled."""
    default = largest_divisor(extent, cap) if divide else min(cap, extent)
    return sm.choose("rows", list(range(1, min(cap, extent) + 1)), default)


def register_rows(sm: RuleSampler, sch: Schedule, loop: LoopRV, extent: int, cap: int) -> tuple[list[LoopRV], int]:
    """Split ``loop`` by the register tile's rows (decision ``rows``); returns the loops and
    ``mr``. The caller peels the outer loop when ``mr`` does not divide ``extent``."""
    mr = sample_rows(sm, extent, cap)
    return sch.split(loop, [None, mr]), int(mr)


def epilogue_chain(info: BlockInfo, blocks: list[BlockInfo], scheduled: set[str]) -> list[BlockInfo]:
    """The elementwise blocks that consume ``info``'s result (then theirs), over its output
    shape, each the only reader of the one before, reading it with plain indices; the chain
    stops at a block that another rule has scheduled already (two sums read by one block:
    it follows the first) and after a block whose result the function also returns (that
    result is needed whole; fused per tile, the transform interpreter aborted)."""
    chain, last = [], info
    while True:
        users = [b for b in blocks if b.order > last.order and any(
            s.kind == "block" and s.name == last.name for s in b.sources[:b.n_inputs])]
        if len(users) != 1 or last.returned:  # (a result also returned is needed whole: not computed per tile)
            return chain
        user = users[0]
        if (not all(it == "parallel" for it in user.iters) or user.shapes[-1] != last.shapes[-1]
                or not is_plain(user) or user.name in scheduled or not _reads_plainly(user, last)):
            return chain
        chain.append(user)
        last = user


def _reads_plainly(user: BlockInfo, producer: BlockInfo) -> bool:
    """``user`` reads ``producer``'s result (its first operand that does) with one distinct
    dim per index, as ``reverse_compute_at`` needs (no constant index of a size-1 dim: a
    batch-1 row read as ``Y[0, j]`` is not computed on Y's tile)."""
    read = next(o for o, s in enumerate(user.sources[:user.n_inputs]) if s.kind == "block" and s.name == producer.name)
    return all(None not in m and len(set(m)) == len(m) for m in (producer.maps[-1], user.maps[read]))


def loops_inside(sch: Schedule, block: BlockRV, loop: LoopRV) -> list[LoopRV]:
    """The loops of ``block`` inside ``loop`` (one of its loops): after
    ``reverse_compute_at(block, loop)``, the loops of its own tile."""
    loops = sch.get_loops(block)
    depth = next(k for k, lp in enumerate(loops) if lp.uid == loop.uid)
    return loops[depth + 1:]


def fuse_epilogue(sch: Schedule, fname: str, chain: list[BlockInfo], at: LoopRV, *, cols: int,
                  unroll_rows: bool) -> set[str]:
    """Compute the blocks of ``chain`` at ``at`` on the producer's tile (``cols`` columns):
    the tile's columns vectorized (up to ``MAX_VECTOR_ELEMENTS``), its rows unrolled with
    ``unroll_rows``; a 1 x 1 tile has no loop of its own. Returns the names scheduled."""
    done = set()
    for cons in chain:
        cblock = sch.get_block(cons.name, fname)
        sch.reverse_compute_at(cblock, at)
        own = loops_inside(sch, cblock, at)
        if own and cols <= MAX_VECTOR_ELEMENTS:
            sch.vectorize(own[-1])
        if unroll_rows and len(own) >= 2:
            sch.unroll(own[-2])
        done.add(cons.name)
    return done


def _readers(blocks: list[BlockInfo], name: str) -> list[BlockInfo]:
    """The blocks that read block ``name``'s result, directly or through a reshape view."""
    return [b for b in blocks if any(s.kind in ("block", "view") and s.name == name for s in b.sources[:b.n_inputs])]


def view_producer(info: BlockInfo, kind: Contraction, blocks: list[BlockInfo],
                  scheduled: set[str]) -> tuple[BlockInfo, int] | None:
    """The block that contraction ``info`` reads through a reshape keeping its outer batch
    dims (a convolution's im2col ``(n, k, oh, ow)`` read as ``(n, k, oh * ow)``; in bands of
    output rows, ``(n, band, k, rows, ow)`` read as ``(n, band, k, rows * ow)``), when it
    can be computed per item of them: all its dims spatial, ``info`` its only reader, not
    scheduled yet; with the innermost batch dim of the leading ones the reshape keeps (the
    item: an image, or a band of one). None otherwise."""
    if not kind.batch or None in [info.extents[b] for b in kind.batch]:
        return None
    for o, src in enumerate(info.sources[:info.n_inputs]):
        prod = next((p for p in blocks if p.name == src.name), None) if src.kind == "view" else None
        if prod is None or prod.name in scheduled or any(it != "parallel" for it in prod.iters):
            continue
        readers = [x.name for x in _readers(blocks, prod.name)]
        kept = {odims[0] for odims, pdims in src.groups if len(odims) == 1 and len(pdims) == 1}
        lead = []
        for b in kind.batch:
            if b not in info.maps[o] or info.maps[o].index(b) not in kept:
                break
            lead.append(b)
        items = math.prod(info.extents[b] for b in lead) if lead else 0
        if readers == [info.name] and lead and items >= 2:
            return prod, lead[-1]
    return None


def per_item(sch: Schedule, sm: RuleSampler, fname: str, batch_loop: LoopRV | None,
             producer: tuple[BlockInfo, int] | None, *, parallel_inside: bool) -> set[str]:
    """Decision ``im2col_at`` (1: at the batch loop): ``producer`` (:func:`view_producer`)
    computed at the contraction's batch loop ``batch_loop`` (its item dim: an image, or a
    band of output rows), one item at a time, so that its result is read while it is in cache (ResNet-18's 3x3 convolutions at 64 channels, batch
    8 on 2 cores: an im2col of 58 MB written, then read by the gemm, 32 ms; per image 9-10,
    the 7x7 stem 34 -> 12-14 ms). ``parallel_inside``: the batch loop is serial, the
    producer's own outer loop runs in parallel. Returns the blocks scheduled."""
    if producer is None or batch_loop is None or not int(sm.choose("im2col_at", [0, 1], 1)):
        return set()
    pblock = sch.get_block(producer[0].name, fname)
    sch.compute_at(pblock, batch_loop)
    loops = sch.get_loops(pblock)
    own = loops[1 + next((i for i, lp in enumerate(loops) if lp.uid == batch_loop.uid), 0):]
    if parallel_inside and own:
        sch.parallel(own[0])
    return {producer[0].name}


def view_epilogue(sch: Schedule, fname: str, info: BlockInfo, blocks: list[BlockInfo], scheduled: set[str],
                  batch_loop: LoopRV, batch_dim: int) -> set[str]:
    """The elementwise block that reads contraction ``info``'s result through a reshape (a
    convolution's bias, residual add and ReLU on its NCHW view), and the elementwise
    blocks after it (:func:`epilogue_chain`), computed per item at
    ``batch_loop`` once the im2col is (:func:`per_item`): the item's result is still in
    cache. Returns the blocks scheduled (none when there is no such block, or when the view
    does not keep the loop's dim ``batch_dim``: one image's convolution in bands)."""
    users = _readers(blocks, info.name)
    if len(users) != 1:
        return set()
    user = users[0]
    via = next(s for s in user.sources[:user.n_inputs] if s.name == info.name)
    read = next(o for o, s in enumerate(user.sources[:user.n_inputs]) if s.name == info.name)
    if (via.kind != "view" or user.name in scheduled or not all(it == "parallel" for it in user.iters)
            or not is_plain(user) or None in user.extents
            or any(None in m or len(set(m)) != len(m) for m in (user.maps[read], user.maps[-1]))
            or not any(pdims == (info.maps[-1].index(batch_dim),) for odims, pdims in via.groups if len(odims) == 1)):
        return set()  # (other inputs may be broadcast: a bias read at b[0, f, 0, 0])
    chain = [user] + epilogue_chain(user, blocks, scheduled)  # (then the blocks after it: bias, then ReLU)
    return fuse_epilogue(sch, fname, chain, batch_loop, cols=user.extents[user.maps[-1][-1]], unroll_rows=False)
