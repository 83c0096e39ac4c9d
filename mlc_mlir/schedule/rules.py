"""Default schedule rules: a schedule chosen from the target for any tensor program.

The analogue of TVM's default schedule rules (and the search space of the auto-tuner):
:func:`apply_rules` looks at each block of each tensor program and schedules it with
public :class:`~mlc_mlir.schedule.Schedule` primitives only, so the result is an ordinary
trace (printable, replayable, its decisions mutable by a tuner).

Rules, per block kind (``target`` gives the vector width, the register count, the cores):

contraction (a block with reduction dims whose output has a spatial dim ``j`` last)
    register tile ``mr x nr`` over the last two output dims ``i, j``: ``nr`` is two
    vectors when ``j`` is contiguous in the operand that reads it (B of ``A @ B``), else
    one vector (B read transposed: ``j`` gathered element by element, so fewer columns and
    more rows), capped by the register file (:meth:`Target.register_tile`: AVX2 f32 6 x 16,
    AVX-512 14 x 32); ``nr`` is the largest divisor of the extent under its cap, ``mr`` the
    cap itself, the rows' last partial tile peeled (``peel``: partial tiles are not
    vectorized; with full tiles 6 x 16 fills AVX2's 16 registers: 12 accumulators, 2 B
    vectors, 1 broadcast). With several cores the rows are first split in one block per
    core (parallel; or the column tiles, every core taking all the rows: a decision). Loop order
    ``batch.., [i_par], i0, j0, k.., i1, j1``: the reduction runs over the register tile; ``j1``
    vectorized, ``i1`` unrolled (an ``mr x nr`` block of vector accumulators that the
    build's vector-opt stage keeps in registers over ``k``), the init decomposed to ``k``.
    Elementwise consumers (bias add, relu: the fused epilogue) are computed at ``j0``
    (``reverse_compute_at``) on the register tile, vectorized and unrolled the same way.
    The outermost spatial loop runs in parallel when the target has several cores and the
    block does at least :data:`PARALLEL_MIN_FLOPS` multiply-adds.
contraction read along k by every input (``x @ w.T``: B read transposed, k last and a multiple of the lanes)
    k split by the vector lanes and ``rfactor``-ed: the partial sums ``Y_rf`` over an
    ``mr x nr`` tile of accumulator vectors (at most the registers less 4), loop order
    ``batch.., i0, j0, k0, i1, j1, lanes`` (lanes vectorized, ``i1``/``j1`` unrolled); the
    lanes summed (``Y``) and the epilogue applied at ``j0`` on the tile.
large contraction (:data:`LARGE_MACS` multiply-adds, a reduction of 2 * :data:`K_BLOCK` or more; :mod:`.rule_blocked`)
    the structure of a BLAS kernel: ``j0, ip, k0, it, jt, k1, ir, jr``: columns by
    :data:`NC_BLOCK` (the cores share these blocks: parallel) and k by :data:`KC_BLOCK` (the
    ``KC x NC`` panel of B copied once per block into a local buffer at ``k0``:
    ``cache_read`` + ``compute_at``, hoisted out of both register-tile loops), the target's
    full register tile with the rows' remainder peeled, rows outer and columns inner (A's
    ``mr x KC`` micro-panel stays in L1); when the column blocks do not share out evenly
    over the cores, one block of rows per core (``ip, j0, ...``) instead.
elementwise (only spatial dims)
    the last dim split by the largest divisor up to four vectors, vectorized; the
    outermost loop parallel above :data:`PARALLEL_MIN_ELEMENTS` elements.
other blocks (reductions into the last output dim: softmax rows, sums)
    left as they are (the build lowers them to loops).

``tunable=True`` makes every choice a sampling decision (``sample_perfect_tile`` for
each perfect tile, ``sample_categorical`` for the register tile's rows, parallel-or-not,
the loop the epilogue is computed at, the local copy of B), with the rule's choice as the
decision: the trace replays to the same schedule. ``decide=`` picks the decisions
instead (the auto-tuner's space, :class:`mlc.tune.AutoSchedule`: random samples, and
mutants that re-run the rules with one decision changed, so the structure follows).

    sch = mlc.Schedule(mod)
    apply_rules(sch, "llvm -mcpu=skylake-avx512")
    print(sch.trace)
"""

from __future__ import annotations

import warnings

from mlir import ir

from ..irutil import sym_name
from ..context import mlc_context
from ..errors import MlcError, ScheduleError
from ..ir import Module
from ..target import Target
from .payload import BlockInfo, read_blocks
from .rule_blocked import K_BLOCK, KC_BLOCK, K_UNROLL, LARGE_MACS, NC_BLOCK, _is_large, _schedule_blocked
from .rule_sampler import Decide, RuleSampler as _Sampler
from .rule_util import (_Contraction, _column_tile, _contraction, _divisors, _largest_divisor, _macs, _par_options,
                        _plain, _register_rows, _sample_rows, _try, register_tile_for)
from .schedule import Schedule

__all__ = ["apply_rules", "default_schedule", "graph_default_schedule", "register_tile_for", "PARALLEL_MIN_FLOPS",
           "PARALLEL_MIN_ELEMENTS", "LARGE_MACS", "K_BLOCK", "NC_BLOCK", "KC_BLOCK", "K_UNROLL"]

#: a contraction runs its outer loop in parallel from this many multiply-adds (OpenMP
#: start-up costs about a microsecond with spinning workers: on 2 cores 64 x 128 x 64 took
#: 11.5 us on one, 7.1 on two; 64^3 5.8 and 4.0, too close to a worker's wake-up)
PARALLEL_MIN_FLOPS = 1 << 19
#: an elementwise block runs its outer loop in parallel from this many elements
PARALLEL_MIN_ELEMENTS = 1 << 17


def apply_rules(sch: Schedule, target: Target | str | None = None, *, tunable: bool = False,
                decide: Decide | None = None) -> Schedule:
    """Apply the default rules to every block of every tensor program of ``sch.mod``.

    Functions that already have loops or vector ops (scheduled before, e.g. a tuned kernel
    swapped in with ``update_func``) are left as they are.

    Args:
        sch: a schedule whose blocks are not scheduled yet (a fresh ``mlc.Schedule(mod)``).
        target: the target (``None``: the host CPU).
        tunable: record each choice as a ``sample_perfect_tile`` / ``sample_categorical``
            decision (the rule's choice selected) so that a tuner can mutate and replay.
        decide: ``decide(site, n_options, default_index) -> index`` picks the decision at
            each sampling site in the order the rules reach them (implies ``tunable``):
            the auto-tuner's random samples and mutants (:class:`mlc.tune.AutoSchedule`).

    Returns:
        ``sch`` (scheduled in place).

    Raises:
        ScheduleError: ``sch`` is not a Schedule, or the target is not a CPU target.
    """
    if not isinstance(sch, Schedule):
        raise ScheduleError(f"apply_rules expects an mlc.Schedule, got {type(sch).__name__}")
    tgt = Target.of(target)
    if not tgt.is_cpu:
        raise ScheduleError(f"apply_rules: the default rules are for CPU targets, got {str(tgt)!r}")
    return _apply(sch, tgt, _Sampler(sch, tunable, decide), None)


def _scheduled_funcs(module) -> set[str]:
    """Functions already scheduled (loops or vectors, or marked ``mlc.tuned`` by tune_model): left alone."""
    names: set[str] = set()
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or not op.regions[0].blocks:
            continue
        found = "mlc.tuned" in op.attributes

        def visit(inner) -> object:
            nonlocal found
            if inner.name.startswith(("scf.", "vector.")):
                found = True
                return ir.WalkResult.INTERRUPT
            return ir.WalkResult.ADVANCE

        if not found:
            op.walk(visit)
        if found:
            names.add(sym_name(op))
    return names


def _apply(sch: Schedule, tgt: Target, sm: _Sampler, only: set[str] | None) -> Schedule:
    with mlc_context():
        infos = read_blocks(sch.mod.mlir_module)
        skip = _scheduled_funcs(sch.mod.mlir_module)
    by_func: dict[str, list[BlockInfo]] = {}
    for (fname, _), info in sorted(infos.items(), key=lambda kv: (kv[0][0], kv[1].order)):
        by_func.setdefault(fname, []).append(info)
    with sch.deferred():
        for fname, blocks in by_func.items():
            if (only is None or fname in only) and fname not in skip:
                _schedule_func(sch, fname, blocks, tgt, sm)
    return sch


def default_schedule(mod: Module, target: Target | str | None = None) -> Module:
    """``mod`` with the default rules applied to its tensor programs (graph.build's default).

    A tensor program the rules cannot schedule (the transform script fails on it) is
    left unscheduled, with a warning naming it and why.
    """
    tgt = Target.of(target)
    try:
        sch = Schedule(mod)
        return _apply(sch, tgt, _Sampler(sch, False, None), None).mod
    except MlcError:
        pass
    good: set[str] = set()
    with mlc_context():
        funcs = sorted({f for f, _ in read_blocks(mod.mlir_module)})
    for fname in funcs:
        try:
            sch = Schedule(mod)
            _apply(sch, tgt, _Sampler(sch, False, None), {fname}).mod
            good.add(fname)
        except MlcError as exc:
            warnings.warn(f"default schedule rules skipped @{fname}: {exc}", RuntimeWarning, stacklevel=2)
    try:
        sch = Schedule(mod)
        return _apply(sch, tgt, _Sampler(sch, False, None), good).mod
    except MlcError as exc:  # pragma: no cover - each part applied alone
        warnings.warn(f"default schedule rules skipped: {exc}", RuntimeWarning, stacklevel=2)
        return mod


# -- per function ------------------------------------------------------------------------
def _schedule_func(sch: Schedule, fname: str, blocks: list[BlockInfo], tgt: Target, sm: "_Sampler") -> None:
    done: set[str] = set()
    for info in blocks:
        try:
            tgt.vector_lanes(info.element_type)
        except MlcError:  # an element type without a vector rule (i1, bf16...): left as it is
            done.add(info.name)
        if info.name in done:
            continue
        kind = _contraction(info)
        if kind is not None:
            done |= _schedule_contraction(sch, fname, info, kind, blocks, tgt, sm)
    for info in blocks:
        if info.name not in done and all(it == "parallel" for it in info.iters) and _plain(info):
            _schedule_elementwise(sch, fname, info, tgt, sm)


def _lanes_along_k(info: BlockInfo, kind: _Contraction, tgt: Target) -> int | None:
    """The vector lanes when every input reads the (single, last) reduction dim contiguously
    but B is read transposed (``x @ w.T``): partial sums in lanes (rfactor) then."""
    kd = info.ndims - 1
    if kind.contiguous or kind.reduce != (kd,) or None in info.extents or not info.has_init:
        return None
    lanes = tgt.vector_lanes(info.element_type)
    if info.extents[kd] % lanes or any(m[-1] != kd for m in info.maps[:info.n_inputs]):
        return None
    return lanes


def _schedule_rfactor(sch: Schedule, fname: str, info: BlockInfo, kind: _Contraction, blocks: list[BlockInfo],
                      tgt: Target, sm: _Sampler, lanes: int) -> set[str]:
    """``x @ w.T``: k split by the lanes, the partial sums (``rfactor``) over an mr x nr tile
    of accumulator vectors, the lanes summed and the epilogue applied on the tile."""
    ext, kd = info.extents, info.ndims - 1
    par = bool(int(sm.choose(_par_options(tgt), int(tgt.num_cores > 1 and _macs(info) >= PARALLEL_MIN_FLOPS))))
    block = sch.get_block(info.name, fname)
    k0, k1 = sch.split(sch.get_loops(block)[kd], [None, lanes])
    rf = sch.rfactor(k1)
    loops = sch.get_loops(rf)
    accs = max(1, tgt.vector_registers - 4)
    nr = int(sm.choose(_divisors(ext[kind.j], accs), _largest_divisor(ext[kind.j], 4 if kind.i is not None else accs)))
    j0, j1 = sch.split(loops[kind.j], [None, nr])
    outer, inner, mr = [j0], [j1], 1
    if kind.i is not None:
        mr = int(sm.choose(_divisors(ext[kind.i], accs // nr), _largest_divisor(ext[kind.i], accs // nr)))
        i0, i1 = sch.split(loops[kind.i], [None, mr])
        outer, inner = [i0, j0], [i1, j1]
    sch.reorder(*[loops[d] for d in kind.batch], *outer, loops[kd], *inner, loops[-1])
    sch.vectorize(loops[-1])
    for lp, f in zip(reversed(inner), (nr, mr)):
        if f > 1:
            sch.unroll(lp)
    sch.decompose_reduction(rf, loops[kd])
    done = {info.name}
    if _try(sch.reverse_compute_at, block, j0):
        for cons in _epilogue(info, blocks):
            cblock = sch.get_block(cons.name, fname)
            if not _try(sch.reverse_compute_at, cblock, j0):
                break
            _try(sch.vectorize, sch.get_loops(cblock)[-1])
            done.add(cons.name)
    if par:
        _try(sch.parallel, ([loops[d] for d in kind.batch] + outer)[0])
    return done


def _schedule_contraction(sch: Schedule, fname: str, info: BlockInfo, kind: _Contraction,
                          blocks: list[BlockInfo], tgt: Target, sm: _Sampler) -> set[str]:
    if _is_large(info, kind):
        return _schedule_blocked(sch, fname, info, kind, tgt, sm)
    lanes = _lanes_along_k(info, kind, tgt)
    if lanes is not None:
        return _schedule_rfactor(sch, fname, info, kind, blocks, tgt, sm, lanes)
    mr_cap, nr_cap = register_tile_for(info, tgt)
    ext = info.extents
    block = sch.get_block(info.name, fname)
    by_dim = dict(enumerate(sch.get_loops(block)))
    ei = ext[kind.i] if kind.i is not None else None
    cores = tgt.num_cores
    top_trips = ext[kind.batch[0]] if kind.batch else (ei if kind.i is not None else ext[kind.j] // 8)
    want = cores > 1 and _macs(info) >= PARALLEL_MIN_FLOPS and (top_trips or 0) >= 2
    par = bool(int(sm.choose(_par_options(tgt), int(want))))
    nr_cap = _columns_cap(ei if kind.i is not None else 1, mr_cap, nr_cap, tgt, info)
    lanes = tgt.vector_lanes(info.element_type)
    ej = ext[kind.j]
    # columns whose divisors cannot fill the tile (127, 100, 1000 = 62 x 16 + 8): whole-vector
    # tiles and the partial last one peeled (127 x 127: 9 GFLOP/s in 1-column tiles, 86 so)
    # (a decision: without it, divisor tiles, which the cores may share as column blocks)
    peelable = (ej is not None and ej > nr_cap and nr_cap % lanes == 0
                and _column_tile(ej, nr_cap, lanes) < nr_cap)
    col_peel = peelable and bool(int(sm.choose([0, 1], 1)))
    if col_peel:
        widths = list(range(lanes, nr_cap + 1, lanes))
        nr_rv = sm.choose(widths, widths[-1])
        j0, j1 = sch.split(by_dim[kind.j], [None, nr_rv])
        nr = int(nr_rv)
    else:
        (j0, j1), nr = sm.split(by_dim[kind.j], ej, _column_tile(ej, nr_cap, lanes), nr_cap)
    outer, inner, peel, mr = [j0], [j1], None, 1
    if kind.i is not None:
        rows, lead = by_dim[kind.i], []
        if ei is None:  # a dynamic extent (symbolic batch) is split by 1: the tile keeps static sizes
            i0, i1 = sch.split(rows, [None, 1])
        else:
            # one block per core: of rows, or of column tiles (every core gets all the rows: one
            # partial row tile in all, not one per block)
            rows_ok = par and not kind.batch and ei % cores == 0 and ei // cores >= 2
            cols_ok = par and not kind.batch and not col_peel and (ext[kind.j] // nr) % cores == 0
            if cols_ok and (not rows_ok or int(sm.choose([0, 1], 0))):
                jp, j0 = sch.split(j0, [cores, None])
                lead = [jp]
            elif rows_ok:
                ip, rows = sch.split(rows, [cores, None])
                lead, ei = [ip], ei // cores
            if par and not kind.batch and not lead and ei >= 2 * mr_cap:
                # rows that do not split evenly over the cores (127): the rows of the full
                # tiles first, their tiles shared by the cores, then the partial tile (the
                # outer loop peeled: a peeled loop cannot run in parallel, nor sit inside
                # a parallel one whose blocks differ)
                mr_rv = _sample_rows(sm, ei, mr_cap)
                mr = int(mr_rv)
                full = mr * (ei // mr)
                if full < ei:
                    head, rows = sch.split(rows, [None, full])
                    lead = [head]
                i0, i1 = sch.split(rows, [None, mr_rv])
                peel = lead[0] if lead else None
            else:
                (i0, i1), mr = _register_rows(sm, sch, rows, ei, mr_cap)
                peel = i0 if ei % mr else None
        outer, inner = [*lead, i0, j0], [i1, j1]
    sch.reorder(*[by_dim[d] for d in kind.batch], *outer, *[by_dim[d] for d in kind.reduce], *inner)
    if peel is not None:
        sch.peel(peel)
    if col_peel:
        sch.peel(j0)
    sch.vectorize(j1)
    if kind.i is not None and mr > 1:
        sch.unroll(inner[0])
    done = {info.name}
    # (with a symbolic extent the fused epilogue tile does not vectorize: it gets the
    # elementwise rule instead); the consumers are computed on the register tile (j0) or on
    # the row panel (i0)
    at = j0 if kind.i is None or ei is None or not int(sm.choose([0, 1], 0)) else outer[-2]
    for cons in (_epilogue(info, blocks) if None not in ext else []):
        cblock = sch.get_block(cons.name, fname)
        if not _try(sch.reverse_compute_at, cblock, at):
            break
        cl = sch.get_loops(cblock)
        _try(sch.vectorize, cl[-1])
        if mr > 1:
            _try(sch.unroll, cl[-2])
        done.add(cons.name)
    if info.has_init and None not in ext:  # (a symbolic extent's init tile does not vectorize)
        sch.decompose_reduction(block, by_dim[kind.reduce[0]])
    if par:  # (a peeled loop stays serial: then the next one out runs in parallel)
        top = next((lp for lp in [by_dim[d] for d in kind.batch] + outer
                    if lp is not peel and not (col_peel and lp is j0)), None)
        if top is not None:
            _try(sch.parallel, top)
    return done


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


def _epilogue(info: BlockInfo, blocks: list[BlockInfo]) -> list[BlockInfo]:
    """Elementwise blocks that consume ``info``'s result (then theirs), over its output shape."""
    chain, last = [], info
    names = {b.name: b for b in blocks}
    while True:
        users = [b for b in blocks if b.order > last.order and any(
            s.kind == "block" and s.name == last.name for s in b.sources[:b.n_inputs])]
        if len(users) != 1:
            return chain
        user = names[users[0].name]
        if (not all(it == "parallel" for it in user.iters) or user.shapes[-1] != last.shapes[-1]
                or not _plain(user)):
            return chain
        chain.append(user)
        last = user


def _schedule_elementwise(sch: Schedule, fname: str, info: BlockInfo, tgt: Target, sm: _Sampler) -> None:
    out = info.maps[-1]
    if not out or out[-1] is None or info.extents[out[-1]] is None:
        return
    block = sch.get_block(info.name, fname)
    loops = sch.get_loops(block)
    last = out[-1]
    try:
        lanes = tgt.vector_lanes(info.element_type)
    except MlcError:
        return
    v = _largest_divisor(info.extents[last], 4 * lanes)
    if v < 2 or last != info.ndims - 1:
        return
    (_, inner), _ = sm.split(loops[last], info.extents[last], v, 4 * lanes)
    _try(sch.vectorize, inner)
    elements = 1
    for e in info.extents:
        elements *= e if e is not None else 64
    top = sch.get_loops(block)[0]
    want = tgt.num_cores > 1 and elements >= PARALLEL_MIN_ELEMENTS and len(info.extents) > 1
    if int(sm.choose(_par_options(tgt), int(want))):
        _try(sch.parallel, top)


def graph_default_schedule(mod: Module, target: Target | str | None, opt_level: int) -> Module:
    """The hook of ``mlc.graph.build``: the default rules at ``opt_level >= 1``.

    ``opt_level=0`` (no graph optimization, for debugging) keeps the kernels unscheduled.
    """
    if opt_level < 1:
        return mod
    return default_schedule(mod, target)
