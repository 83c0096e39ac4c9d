"""The ``unroll-jam`` build stage: register tiles for reduction loops whose accumulator is small.

A schedule such as the course's ch.2 one (``split j by 32; reorder(j0, k, j1);
reverse_compute_at``) leaves a reduction loop ``k`` whose accumulator is one row of 32
floats: 4 AVX2 registers. Each ``k`` step then issues 4 dependent FMAs and reloads the
whole B row for a single row of A, so the kernel is bound by FMA latency and by streaming B
from L2. This stage unrolls a data-parallel loop around such a reduction by ``f`` and
*jams* the copies into the inner loops (``transform.loop.unroll_and_jam``): the reduction
then updates ``f`` accumulators, the loads the copies share (B's row) are issued once, and
the accumulators fill the vector registers the way :meth:`Target.register_tile` does
(``f`` x accumulators + the shared loads + 1 broadcast <= registers). It is the register
tiling that the course leaves to the compiler, applied only where it is provably legal:

* the reduction: an ``scf.for`` whose body runs ``linalg`` ops (or ``vector.transfer_write``)
  on output buffers defined outside the loop, of static shape, at least one vector in all;
* the loop to jam: an enclosing ``scf.for`` with constant bounds, no results, bounds of its
  inner loops defined outside it, whose iterations touch disjoint parts of every buffer
  they write (:func:`mlc_mlir.compiler.loop_deps.is_parallel`);
* of those loops, the one whose iterations share the most input elements of the reduction
  (loads issued once after the jam; ties: the innermost); ``f`` the largest factor whose
  accumulators fit (at most 8, at most the trip count). When ``f`` does not divide the
  trip count, the loop is split first: the jammed part runs a multiple of ``f``
  iterations, a copy of the original loop the rest;
* the jammed loop's linalg ops are vectorized (``vector-opt`` then keeps the accumulators
  in registers and forms FMAs) when the build's ``fastmath`` allows contraction.

IR before (the ch.2 schedule of mm_relu 128 after bufferization; twin lit test
``tests/lit/compiler/unroll_jam.py``, ``mlc-opt --mlc-unroll-jam``)::

    scf.for %i = %c0 to %c128 step %c1 {
      scf.for %j0 = %c0 to %c128 step %c32 {
        %y = memref.subview %Y[%i, %j0] [1, 32] [1, 1]
        linalg.fill ins(%zero) outs(%y)
        scf.for %k = %c0 to %c128 step %c1 {
          linalg.matmul ins(%A[%i, %k] 1x1, %B[%k, %j0] 1x32) outs(%y)
        }
        relu(%y) -> C[%i, %j0] 1x32
      }
    }

IR after (AVX2): ``%i`` steps by 2, the ``k`` loop holds two contractions (rows ``%i``,
``%i + 1``) sharing B's row: 8 accumulators, 8 independent FMA chains (1.2-1.4x NumPy's
time instead of 2.2x on a Zen 3).
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, transform
from mlir.dialects.transform import loop as tloop, structured, vector as tvector

from ..errors import LoweringError
from ..irbuild import apply_transform, foreach, match, transform_script
from ..target import Target
from .loop_deps import (const, depends, dtype_name, enclosing, induction_var, inner_bounds_invariant, inside,
                        inside_value, is_parallel, is_static_memref, linalg_ins, linalg_outs, numel, op_key,
                        trip_count, walk)

__all__ = ["JAM_ATTR", "JAM_OP_ATTR", "MAX_JAM", "jam_plan", "jam_script", "unroll_and_jam"]

#: attribute naming the factor on the loops this stage jams (removed by the jam)
JAM_ATTR = "mlc.unroll_jam"
#: unit attribute on the linalg ops of the loops to jam (vectorized after the jam, then removed)
JAM_OP_ATTR = "mlc.unroll_jam_op"
#: the largest unroll-and-jam factor the stage uses
MAX_JAM = 8

_READS = ("memref.load", "vector.transfer_read", "vector.load")


def jam_script(factor: int, *, vectorize: bool) -> ir.Module:
    """The transform script of one jam: every ``scf.for`` tagged ``mlc.unroll_jam = factor``
    unrolled and jammed by ``factor``; with ``vectorize``, each op tagged ``mlc.unroll_jam_op``
    vectorized where the vectorizer handles it (failures suppressed: LLVM may still vectorize
    the op); then reductions -> ``vector.contract``, canonicalization and CSE. Built as (twin
    lit test ``tests/lit/compiler/transform_scripts.py``)::

        %loop = transform.structured.match ops{["scf.for"]} attributes {mlc.unroll_jam = F : i64} in %root
        transform.foreach %loop { transform.loop.unroll_and_jam %one_loop {factor = F : i64} }
        %linalg = transform.structured.match interface{LinalgOp} attributes {mlc.unroll_jam_op} in %root
        transform.foreach %linalg {
          transform.sequence %op failures(suppress) { transform.structured.vectorize %one }
        }
        transform.apply_patterns to %root {
          vector.reduction_to_contract, vector.transfer_permutation_patterns, canonicalization }
        transform.apply_cse to %root
    """
    i64 = ir.IntegerType.get_signless(64)

    def vectorize_one(op: ir.Value) -> None:
        seq = transform.SequenceOp(transform.FailurePropagationMode.Suppress, [], op)
        with ir.InsertionPoint(seq.body):
            structured.VectorizeOp(seq.bodyTarget)
            transform.YieldOp([])

    def body(root: ir.Value) -> None:
        loops = match(root, ops=["scf.for"], attrs={JAM_ATTR: ir.IntegerAttr.get(i64, factor)})
        foreach(loops, lambda loop: tloop.LoopUnrollAndJamOp(loop, factor=factor))
        if vectorize:
            foreach(match(root, interface=structured.MatchInterfaceEnum.LinalgOp,
                          attrs={JAM_OP_ATTR: ir.UnitAttr.get()}), vectorize_one)
        with ir.InsertionPoint(transform.ApplyPatternsOp(root).patterns):
            tvector.ApplyVectorReductionToContractPatternsOp()
            tvector.ApplyTransferPermutationPatternsOp()
            transform.ApplyCanonicalizationPatternsOp()
        transform.ApplyCommonSubexpressionEliminationOp(root)

    return transform_script(body, loc=ir.Location.name("unroll-jam"))  # diagnostics name the stage


def unroll_and_jam(module: ir.Module, target: Target | str | None = None, fastmath: str = "contract") -> None:
    """Unroll-and-jam the loops :func:`jam_plan` picks, in place (bufferized module).

    The jammed loops' linalg ops are vectorized (the ``vector-opt`` stage then keeps the
    accumulators in registers and lowers the contractions to FMAs) when ``fastmath``
    allows contraction (``contract`` or ``fast``); with IEEE flags they stay scalar, each
    element computed exactly as before. Must be called inside the shared context. Raises
    LoweringError when a jam fails.
    """
    flags = set(fastmath.split(","))
    vectorize = bool(flags & {"contract", "fast"})
    # the functions and factors first: a jam (with its canonicalization) may erase other loops
    work: dict[int, tuple[ir.Operation, set[int]]] = {}
    for loop, factor in jam_plan(module, target):
        loop = _peel(loop, factor)
        loop.attributes[JAM_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), factor)
        for op in walk(loop):  # its linalg ops (and their copies after the jam) get vectorized
            if op.name.startswith("linalg.") and "operandSegmentSizes" in op.attributes:
                op.attributes[JAM_OP_ATTR] = ir.UnitAttr.get()
        func = enclosing(loop, "func.func")
        work.setdefault(op_key(func), (func, set()))[1].add(factor)
    for func, factors in work.values():
        for factor in sorted(factors):  # one script per function and factor: it jams all loops tagged so
            _apply_jam(func, factor, vectorize)
    for op in walk(module.operation):
        for attr in (JAM_ATTR, JAM_OP_ATTR):
            if attr in op.attributes:
                del op.attributes[attr]


def _apply_jam(func: ir.Operation, factor: int, vectorize: bool) -> None:
    apply_transform(func, jam_script(factor, vectorize=vectorize), error=LoweringError,
                    message=f"stage 'unroll-jam' failed (factor {factor})")


def _peel(loop: ir.Operation, factor: int) -> ir.Operation:
    """The part of ``loop`` whose trip count is a multiple of ``factor`` (a clone placed
    before ``loop``, which keeps the remaining iterations), or ``loop`` itself."""
    trip = trip_count(loop)
    if trip % factor == 0:
        return loop
    lb, step = const(loop.operands[0]), const(loop.operands[2])
    with ir.InsertionPoint(loop), loop.location:
        split = arith.ConstantOp(ir.IndexType.get(), lb + (trip - trip % factor) * step).result
        main = loop.clone()
    main.operands[1] = split
    loop.operands[0] = split
    return main


def jam_plan(module: ir.Module, target: Target | str | None = None) -> list[tuple[ir.Operation, int]]:
    """(loop, factor) for each loop to unroll-and-jam, outermost choices only (see module doc)."""
    tgt = Target.of(target)
    chosen: dict[int, tuple[ir.Operation, int]] = {}
    reductions = [(red, accs, _acc_registers(accs, tgt)) for red, accs in _reductions(module.operation)]
    # the most copies of each reduction a jam may make: a loop holding several reductions
    # copies them all (each jammed with its own copies, one reduction's registers at a time)
    caps = [(red, max([f for f in range(1, MAX_JAM + 1) if f * regs + 1 <= tgt.vector_registers] or [1]))
            for red, _, regs in reductions]
    for red, accs, acc_regs in reductions:
        if sum(numel(a.type) for a in accs) < tgt.vector_lanes(dtype_name(accs[0].type)) \
                or 2 * acc_regs + 1 > tgt.vector_registers:
            continue
        best = _best_loop(red, accs, [(o, cap) for o, cap in caps if o is not red])
        if best is None:
            continue
        loop, trip, shared, limit = best
        # registers: f accumulators, the shared loads once, one broadcast (Target.register_tile's model)
        free = tgt.vector_registers - math.ceil(shared / tgt.vector_lanes(dtype_name(accs[0].type))) - 1
        factor = max(f for f in range(1, min(MAX_JAM, trip, limit) + 1) if f == 1 or f * acc_regs <= free)
        if factor < 2:
            continue
        key = op_key(loop)
        if key in chosen:
            factor = min(factor, chosen[key][1])
        chosen[key] = (loop, factor)
    loops = list(chosen.values())
    return [(lp, f) for lp, f in loops if not any(o is not lp and inside(lp, o) for o, _ in loops)]


def _acc_registers(accs: list[ir.Value], tgt: Target) -> int:
    """The vector registers of all accumulators of one reduction loop (a register tile may
    write one row per op)."""
    lanes = tgt.vector_lanes(dtype_name(accs[0].type))
    return sum(math.ceil(numel(a.type) / lanes) for a in accs)


# -- the reductions and their candidate loops ---------------------------------------------

def _reductions(root: ir.Operation) -> list[tuple[ir.Operation, list[ir.Value]]]:
    """(reduction scf.for, its accumulator memrefs) for each scf.for with accumulating ops
    (linalg ops, ``vector.transfer_write``) directly in its body."""
    found: dict[int, tuple[ir.Operation, list[ir.Value]]] = {}
    for op in walk(root):
        parent = op.parent
        if parent is None or parent.name != "scf.for":
            continue
        if op.name.startswith("linalg."):
            outs = linalg_outs(op)
        elif op.name == "vector.transfer_write":
            outs = [op.operands[1]]
        else:
            continue
        for out in outs:
            if is_static_memref(out.type) and not inside_value(out, parent):
                accs = found.setdefault(op_key(parent), (parent, []))[1]
                if all(out != a for a in accs):
                    accs.append(out)
    return list(found.values())


def _best_loop(red: ir.Operation, accs: list[ir.Value],
               others: list[tuple[ir.Operation, int]]) -> tuple[ir.Operation, int, int, int] | None:
    """The enclosing parallel loop sharing most input elements of ``red``'s body, its trip
    count, those elements and the largest factor the other reductions it holds allow.

    ``others``: the other reductions with the most copies of each a jam may make (1: none,
    its tile fills the registers). A loop holding one of those is jammed by at most that
    many; none further out when it is 1. A batched contraction's peeled 2-row tile (4
    accumulators) had jammed its batch loop by 7, which held the full 14 x 32 tiles too:
    BERT's 8 x 128 x 768 @ 768 x 2304 on AVX-512, one thread, 112 ms (spilled tiles), 26 ms
    without that jam."""
    best, best_key = None, None
    depth = 0
    loop = red.parent
    while loop is not None and loop.name != "func.func":
        if loop.name == "scf.for":
            depth += 1
            limit = min([cap for o, cap in others if inside(o, loop)] or [MAX_JAM])
            if limit < 2:
                break
            trip = trip_count(loop)
            if trip and trip > 1 and not loop.results and inner_bounds_invariant(loop) \
                    and is_parallel(loop):
                shared = _shared_elements(red, accs, loop)
                key = (shared, depth == 1)
                if shared > 0 and (best_key is None or key > best_key):
                    best, best_key = (loop, trip, shared, limit), key
        loop = loop.parent
    return best


def _shared_elements(red: ir.Operation, accs: list[ir.Value], loop: ir.Operation) -> int:
    """Elements read in ``red``'s body from views that do not depend on ``loop``'s induction variable."""
    iv = induction_var(loop)
    total = 0
    for op in walk(red):
        if op is red:
            continue
        views = []
        if op.name.startswith("linalg."):
            views = [v for v in linalg_ins(op) if isinstance(v.type, ir.MemRefType)]
        elif op.name in _READS:
            views = [op.operands[0]]
            shape = ir.VectorType(op.results[0].type).shape if op.name != "memref.load" else []
            if not depends(op.operands[0], iv, loop) and not any(depends(x, iv, loop) for x in op.operands[1:]):
                total += math.prod(shape)
            continue
        for v in views:
            if all(v != a for a in accs) and is_static_memref(v.type) and not depends(v, iv, loop):
                total += numel(v.type)
    return total
