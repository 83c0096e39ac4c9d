"""Partial thread tiles and barriers: lift a cooperative copy out of the guard of its tile.

A bound loop whose tile does not divide the extent (1000 elements on 128 threads) runs the
full count of threads with its body under ``scf.if %t < %n {mlc.guard}``
(:func:`mlc_mlir.compiler.gpu_mapping.merge_bound_loops`). A shared-memory copy in that body
becomes a cooperative fetch between barriers that every thread of the block must reach, so
(as TVM does: the compute guarded, the copy not) :func:`lift_out_of_guards` moves it out::

    scf.if %g { %v = subview ...; copy; compute }   ->   %v = subview ...; copy
                                                          scf.if %g { compute }
    scf.if %g { for k0 { copy; compute } }          ->   for k0 { copy; scf.if %g { compute } }
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import scf

from ..errors import BuildError
from .gpu_mapping import GUARD_ATTR

__all__ = ["is_thread_forall", "lift_out_of_guards"]


def is_thread_forall(op: ir.Operation) -> bool:
    """A forall bound to ``threadIdx`` axes."""
    return op.name == "scf.forall" and "mapping" in op.attributes and "thread" in str(op.attributes["mapping"])


# Ops that compute addresses or allocate: run by every thread, also one past a partial tile
# (they read and write no memory), when a copy is lifted out of its tile's guard.
_HOISTABLE = ("memref.subview", "memref.alloc", "memref.alloca", "memref.get_global", "memref.cast",
              "memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast",
              "memref.extract_strided_metadata", "memref.dim", "affine.apply", "affine.min", "affine.max")


def _hoistable(op: ir.Operation) -> bool:
    return not op.regions and (op.name in _HOISTABLE or op.name.startswith(("arith.", "index.")))


def _uses_any(op: ir.Operation, values: set) -> bool:
    found = []

    def visit(o: ir.Operation) -> ir.WalkResult:
        if any(v in values for v in o.operands):
            found.append(o)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return bool(found)


def _depends_on(value: ir.Value, ivs: dict, seen: set | None = None) -> bool:
    """``value`` is computed from one of ``ivs`` (through the ops that define it)."""
    seen = set() if seen is None else seen
    if value in ivs:
        return True
    if value in seen or isinstance(value.owner, ir.Block):
        return False
    seen.add(value)
    return any(_depends_on(v, ivs, seen) for v in value.owner.operation.operands)


def _innermost_guard(copy: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """``(guard, child)``: the innermost partial-tile guard of the GPU mapping between
    ``copy`` and its thread loop (guards outside it are the same for all threads of a
    block), and the op of the guard's body that holds ``copy`` (or ``copy``)."""
    child = copy
    parent = copy.parent
    while parent is not None:
        op = parent.operation
        if is_thread_forall(op) or op.name == "func.func":
            return None
        if op.name == "scf.if" and GUARD_ATTR in op.attributes:
            return op, child
        child = op
        parent = op.parent
    return None


def _new_guard(cond: ir.Value) -> ir.Operation:
    guard = scf.IfOp(cond)
    guard.operation.attributes[GUARD_ATTR] = ir.UnitAttr.get()
    with ir.InsertionPoint(guard.then_block):
        scf.YieldOp([])
    return guard.operation


def lift_out_of_guards(copy: ir.Operation, ivs: dict, name: str) -> bool:
    """Move ``copy`` out of the guards of partial thread tiles (TVM guards the compute and
    keeps the cooperative copy unconditional): every thread then reaches its barriers.

    A guard ``if (t < n) { before; X; after }``, ``X`` holding the copy, becomes
    ``if (t < n) { before }; X; if (t < n) { after }`` (address computations and buffers of
    ``before`` run unconditionally); when ``X`` is a loop (a reduction loop ``k0`` around the
    copy), its body is guarded instead: ``for k0 { if (t < n) { ... copy ... } }``, until the
    copy itself is reached.

    Args:
        copy: the shared ``linalg.copy`` (after bufferization).
        ivs: the induction variables of the thread loops around it (a loop whose bounds
            depend on them would run a different number of barriers per thread).
        name: the copy's block name, for errors.

    Returns:
        Whether a guard was lifted (the fetch must then check its bounds).

    Raises:
        BuildError: a loop between the guard and the copy whose trip count differs between
            threads, or that carries values; the copy's operands computed under the guard.
    """
    lifted = False
    while (found := _innermost_guard(copy)) is not None:
        guard, child = found
        lifted = True
        cond = guard.operands[0]
        if len(guard.results) or len(guard.regions[1].blocks):
            raise BuildError(f"shared copy {name!r}: the guard of its partial thread tile has results or an "
                             "else branch")
        body = [o.operation for o in guard.regions[0].blocks[0].operations][:-1]
        at = next(i for i, o in enumerate(body) if o == child)
        kept: set = set()
        for op in body[:at]:
            if _hoistable(op) and not _uses_any(op, kept):
                op.move_before(guard)
            else:
                kept.update(op.results)
        after = body[at + 1:]
        if _uses_any(child, kept) or any(_uses_any(op, kept) for op in after):
            raise BuildError(f"shared copy {name!r} sits in a partial thread tile after work whose results it "
                             "(or what follows it) uses; it cannot be fetched by all threads of the block")
        if child != copy:
            if child.name != "scf.for" or len(child.results):
                raise BuildError(f"shared copy {name!r} sits in a partial thread tile under {child.name} (with "
                                 "results); every thread of the block must reach its barriers")
            if any(_depends_on(v, ivs) for v in list(child.operands)[:3]):
                raise BuildError(f"shared copy {name!r}: a loop around it has a trip count that differs between "
                                 "threads; every thread of the block must reach its barriers")
        with ir.InsertionPoint(guard):
            rest = _new_guard(cond)
        rest.move_after(guard)
        child.move_after(guard)
        rest_yield = [o.operation for o in rest.regions[0].blocks[0].operations][-1]
        for op in after:
            op.move_before(rest_yield)
        if not after:
            rest.erase()
        if len(list(guard.regions[0].blocks[0].operations)) == 1:
            guard.erase()
        if child != copy:  # guard the loop's body instead
            loop_body = child.regions[0].blocks[0]
            ops = [o.operation for o in loop_body.operations][:-1]
            with ir.InsertionPoint.at_block_begin(loop_body):
                inner = _new_guard(cond)
            inner_yield = [o.operation for o in inner.regions[0].blocks[0].operations][-1]
            for op in ops:
                op.move_before(inner_yield)
    return lifted
