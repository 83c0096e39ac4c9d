"""Default schedule rules: a schedule chosen from the target for any tensor program.

The analogue of TVM's default schedule rules (and the search space of the auto-tuner):
:func:`apply_rules` looks at each block of each tensor program and schedules it with
public :class:`~mlc_mlir.schedule.Schedule` primitives only, so the result is an ordinary
trace (printable, replayable, its decisions mutable by a tuner).

Rules, per block kind (``target`` gives the vector width, the register count, the cores),
one module each, sharing :mod:`.rule_common`:

contraction (a block with reduction dims whose output has a spatial dim ``j`` last; :mod:`.rule_small`)
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
contraction read along k by every input (``x @ w.T``: B read transposed, k last and a multiple of the lanes; :mod:`.rule_rfactor`)
    k split by the vector lanes and ``rfactor``-ed: the partial sums ``Y_rf`` over an
    ``mr x nr`` tile of accumulator vectors (at most the registers less 4), loop order
    ``batch.., i0, j0, k0, i1, j1, lanes`` (lanes vectorized, ``i1``/``j1`` unrolled); the
    lanes summed (``Y``) and the epilogue applied at ``j0`` on the tile.
large contraction (:data:`LARGE_MACS` multiply-adds, a reduction of :data:`K_BLOCK` or more, :data:`MIN_COLUMNS` columns; :mod:`.rule_blocked`)
    the structure of a BLAS kernel: ``j0, ip, k0, it, jt, k1, ir, jr``: columns by
    :data:`NC_BLOCK` (the cores share these blocks: parallel) and k by :data:`KC_BLOCK` (the
    ``KC x NC`` panel of B copied once per block into a local buffer at ``k0``:
    ``cache_read`` + ``compute_at``, hoisted out of both register-tile loops), the target's
    full register tile with the rows' remainder peeled, rows outer and columns inner (A's
    ``mr x KC`` micro-panel stays in L1); when the column blocks do not share out evenly
    over the cores, one block of rows per core (``ip, j0, ...``) instead.
elementwise (only spatial dims; :mod:`.rule_elementwise`)
    the last dim split by the largest divisor up to four vectors, vectorized; the
    outermost loop parallel above :data:`PARALLEL_MIN_ELEMENTS` elements; elementwise
    blocks reading its result over the same shape (a depthwise convolution's epilogue)
    computed on each of its row tiles.
row chains (a function of reductions along the last dim and elementwise blocks, ending in an elementwise block: softmax, layer_norm; :mod:`.rule_rows`)
    every block computed at the result's rows, a few rows at a time (decision ``rows``), the
    reductions rfactor-ed by the vector lanes, the elementwise blocks vectorized along the row;
    checked before the per-block rules.
other blocks (reductions into the last output dim outside a row chain: sums)
    left as they are (the build lowers them to loops).

Each choice is a named decision of its block (:data:`DECISIONS`: ``parallel``, ``cols``,
``peel_cols``, ``rows``, ``split_cores``, ``epilogue_at``; for large contractions
``col_block``, ``row_block``, ``k_block``, ``k_unroll``, ``cache_b``; for elementwise
blocks ``vector`` and ``fuse_epilogue``). ``tunable=True`` records each as a ``sample_perfect_tile`` /
``sample_categorical`` labelled ``"<block>.<name>"`` (``label="Y.rows"``), with the rule's
choice as the decision: the trace replays to the same schedule. ``decide=`` picks the
decisions instead, by name (:mod:`.rule_sampler`; the auto-tuner's space,
:class:`mlc.tune.AutoSchedule`: random samples, and mutants that re-run the rules with one
decision changed, so the structure follows).

    sch = mlc.Schedule(mod)
    apply_rules(sch, "llvm -mcpu=skylake-avx512", decide={"Y.rows": 4})
    print(sch.trace)
"""

from __future__ import annotations

import warnings

from mlir import ir

from ..irutil import sym_name, symbol_ops
from ..context import mlc_context
from ..errors import MlcError, ScheduleError
from ..ir import Module
from ..target import Target
from .conv_gemm import convs_to_gemm
from .rewrite_named import copy_pads
from .index_maps import linear_reads_as_extracts, simplify_index_maps
from .windows import windows_to_taps
from .view_epilogues import collapse_view_epilogues
from .payload import BlockInfo, read_blocks
from .rule_gemv import schedule_row_stream, takes_row_stream
from .rule_blocked import K_BLOCK, KC_BLOCK, K_UNROLL, LARGE_MACS, MIN_COLUMNS, NC_BLOCK, is_large, schedule_blocked
from .rule_common import PARALLEL_MIN_FLOPS, contraction_of, epilogue_chain, register_tile_for, vector_lanes_or_none
from .rule_elementwise import PARALLEL_MIN_ELEMENTS, is_copy, is_elementwise, is_gather, schedule_copy, schedule_elementwise
from .rule_rfactor import lanes_along_k, schedule_rfactor
from .rule_rows import schedule_row_chain, takes_row_chain
from .rule_sampler import Decide, Decision, RuleSampler
from .rule_small import schedule_small
from .schedule import Schedule

__all__ = ["apply_rules", "default_schedule", "window_strategies", "graph_default_schedule", "register_tile_for", "Decision",
           "DECISIONS", "PARALLEL_MIN_FLOPS", "PARALLEL_MIN_ELEMENTS", "LARGE_MACS", "K_BLOCK", "MIN_COLUMNS", "NC_BLOCK",
           "KC_BLOCK", "K_UNROLL"]

#: the decisions of the rules by name (``<block>.<name>`` labels them in a trace)
DECISIONS: dict[str, str] = {
    "parallel": "1: the outer loop runs in parallel (a decision only on several cores)",
    "cols": "the register tile's columns (rfactor: accumulator vectors per row)",
    "peel_cols": "1: whole-vector column tiles, the partial last one peeled (no divisor fills the tile)",
    "rows": "the register tile's rows (the rows' partial tile peeled); row chains: the rows computed together",
    "split_cores": "how the cores share the work: 0 a block of rows each, 1 a block of column tiles each",
    "epilogue_at": "where the elementwise consumers are computed: 0 on the register tile, 1 on the row panel",
    "col_block": "large contractions: the columns per cache block (NC)",
    "row_block": "large contractions: the rows per block",
    "k_block": "large contractions: k's cache block (KC)",
    "k_unroll": "large contractions: the k steps unrolled inside the tile's rows",
    "cache_b": "large contractions: 1: B's KC x NC panel copied into a local buffer",
    "vector": "elementwise blocks: the vectorized inner factor of the last dim",
    "fuse_epilogue": "elementwise blocks: 1: the elementwise blocks reading the result over the same shape "
                     "computed on each of its row tiles",
    "im2col_at": "contractions reading a block through a reshape (a convolution's im2col): 1: it is computed per "
                 "item of the outer batch loop",
    "epilogue_panel": "large contractions: 1: the elementwise consumers computed per iteration of the outermost "
                      "loop, once that block of the result is complete",
    "row_stream": "one-row contractions with a large B: 1: k outside the row of columns, B read by rows "
                  "(0: a register tile)",
}


def apply_rules(sch: Schedule, target: Target | str | None = None, *, tunable: bool = False,
                decide: Decide | None = None) -> Schedule:
    """Apply the default rules to every block of every tensor program of ``sch.mod``.

    Functions that already have loops or vector ops (scheduled before, e.g. a tuned kernel
    swapped in with ``update_func``) are left as they are.

    Every choice of a rule is a named decision of its block (:data:`DECISIONS`): recorded
    with ``tunable`` as a sampling instruction labelled ``"<block>.<name>"``, e.g.
    ``sch.sample_categorical(candidates=[1, 2, 3, 4, 5, 6], ..., label="Y.rows", decision=5)``.

    Args:
        sch: a schedule whose blocks are not scheduled yet (a fresh ``mlc.Schedule(mod)``).
        target: the target (``None``: the host CPU).
        tunable: record each choice as a labelled ``sample_perfect_tile`` /
            ``sample_categorical`` decision (the rule's choice selected) so that a tuner can
            mutate and replay.
        decide: picks the decisions instead (implies ``tunable``): a function of a
            :class:`Decision` (its ``name``, ``block``, ``func``, ``options``, ``default``)
            returning an index into ``decision.options`` or None for the rule's own (the
            auto-tuner's random samples and mutants, :class:`mlc.tune.AutoSchedule`), or a
            mapping from a decision's name (``"rows"``), label (``"Y.rows"``) or
            ``"<func>/<label>"`` to one of its options (``{"Y.rows": 4, "parallel": 0}``).

    Returns:
        ``sch`` (scheduled in place).

    Raises:
        ScheduleError: ``sch`` is not a Schedule, the target is not a CPU target, ``decide``
            picks something that is not one of a decision's options, or a key of a
            ``decide`` mapping matches no decision.
    """
    if not isinstance(sch, Schedule):
        raise ScheduleError(f"apply_rules expects an mlc.Schedule, got {type(sch).__name__}")
    tgt = Target.of(target)
    if not tgt.is_cpu:
        raise ScheduleError(f"apply_rules: the default rules are for CPU targets, got {str(tgt)!r}")
    sampler = RuleSampler(sch, tunable, decide)
    _apply(sch, tgt, sampler, None)
    sampler.check_mapping_used()
    return sch


def _scheduled_funcs(module) -> set[str]:
    """Functions already scheduled (loops or vectors, or marked ``mlc.tuned`` by tune_model): left alone."""
    names: set[str] = set()
    for op in symbol_ops(module, defined=True).values():
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


def _apply(sch: Schedule, tgt: Target, sm: RuleSampler, only: set[str] | None) -> Schedule:
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
    mod = window_strategies(mod, tgt)
    try:
        sch = Schedule(mod)
        return _apply(sch, tgt, RuleSampler(sch, False, None), None).mod
    except MlcError:  # one function failed: each is scheduled alone below, the failures warned
        pass
    # Each function in a module of its own, then swapped into a copy of ``mod``: a schedule of
    # the whole module per function made this fallback quadratic (ResNet-18 with one failing
    # kernel: 42 s).
    with mlc_context():
        funcs = sorted({f for f, _ in read_blocks(mod.mlir_module)})
        ops = symbol_ops(mod.mlir_module, defined=True)
        texts = {f: ops[f].get_asm(large_elements_limit=None) for f in funcs}
    out = mod.clone()
    for fname in funcs:
        try:
            single = Module.parse("module {\n" + texts[fname] + "\n}")
            sch = Schedule(single)
            _apply(sch, tgt, RuleSampler(sch, False, None), None)
            out.update_func(fname, sch.mod)
        except MlcError as exc:
            warnings.warn(f"default schedule rules skipped @{fname}: {exc}", RuntimeWarning, stacklevel=2)
    return out


# -- per function ------------------------------------------------------------------------
def _schedule_func(sch: Schedule, fname: str, blocks: list[BlockInfo], tgt: Target, sm: RuleSampler) -> None:
    """The contractions first (each with its fused epilogue), then the elementwise blocks
    left; blocks of an element type without vector lanes (i1, bf16...) are left as they are."""
    lanes = {info.name: vector_lanes_or_none(tgt, info) for info in blocks}
    done = {name for name, n in lanes.items() if n is None}
    if not done and takes_row_chain(blocks, tgt):  # softmax, layer_norm: a row at a time
        with sm.block(fname, blocks[-1].name):
            schedule_row_chain(sch, fname, blocks, tgt, sm)
        return
    for info in blocks:
        kind = contraction_of(info)
        if info.name not in done and kind is not None:
            with sm.block(fname, info.name):
                done |= _schedule_contraction(sch, fname, info, kind, blocks, tgt, sm, done)
    for info in blocks:
        if info.name not in done and is_elementwise(info):
            with sm.block(fname, info.name):
                chain = epilogue_chain(info, blocks, done)
                cut = next((k for k, b in enumerate(chain) if lanes[b.name] is None), len(chain))
                chain = chain[:cut]  # (up to a block without vector lanes: the ones after it read that one)
                done |= schedule_elementwise(sch, fname, info, tgt, sm, lanes[info.name], chain)
        elif info.name not in done and (is_copy(info) or is_gather(info)):
            with sm.block(fname, info.name):
                schedule_copy(sch, fname, info, tgt, sm)


def _schedule_contraction(sch: Schedule, fname: str, info: BlockInfo, kind, blocks: list[BlockInfo], tgt: Target,
                          sm: RuleSampler, done: set[str]) -> set[str]:
    """The rule of a contraction: cache blocks (large), lane partial sums (``x @ w.T``) or a
    register tile; returns the names of the blocks it scheduled."""
    if takes_row_stream(info, kind, tgt):  # one row: B streamed by rows, unless decided otherwise
        streamed = schedule_row_stream(sch, fname, info, kind, tgt, sm)
        if streamed is not None:
            return streamed
    if is_large(info, kind, tgt):
        return schedule_blocked(sch, fname, info, kind, tgt, sm, blocks, done)
    lanes = lanes_along_k(info, kind, tgt)
    if lanes is not None:
        return schedule_rfactor(sch, fname, info, kind, blocks, tgt, sm, lanes, done)
    return schedule_small(sch, fname, info, kind, blocks, tgt, sm, done)


def window_strategies(mod: Module, target: Target | str | None = None) -> Module:
    """The rewrites for ops the rules cannot tile as they are, applied before the rules:
    named convolutions -> im2col + contraction (:func:`.conv_gemm.convs_to_gemm`, packed tiles
    as wide as ``target``'s register tile; AVX2's where none is named), pooling
    and depthwise convolutions -> unrolled taps (:func:`.windows.windows_to_taps`), their
    padded copies of narrow rows as a fill and a row copy (:func:`.rewrite_named.copy_pads`),
    then index maps simplified with the loops' ranges (:func:`.index_maps.simplify_index_maps`;
    the contraction reads the convolution's im2col through a view), a contraction's result
    read at the digits of a linear index read by ``tensor.extract``
    (:func:`.index_maps.linear_reads_as_extracts`: packed tiles copied back to NCHW as
    vectors), and elementwise blocks
    reading a result through an expand reshape run in its collapsed shape
    (:func:`.view_epilogues.collapse_view_epilogues`: a convolution's epilogue on the
    contraction's tile)."""
    mod = linear_reads_as_extracts(simplify_index_maps(copy_pads(windows_to_taps(convs_to_gemm(mod, target)))))
    return collapse_view_epilogues(mod)


def graph_default_schedule(mod: Module, target: Target | str | None, opt_level: int) -> Module:
    """The hook of ``mlc.graph.build``: the default rules at ``opt_level >= 1``.

    ``opt_level=0`` (no graph optimization, for debugging) keeps the kernels unscheduled.
    """
    if opt_level < 1:
        return mod
    return default_schedule(mod, target)
