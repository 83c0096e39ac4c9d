"""The ``memory-plan`` build stage: a lowered graph function's intermediates share one buffer.

TVM's static memory planning on the bufferized graph function. After deallocation the
lowered graph function is a straight line of calls; each intermediate tensor is a
``memref.alloc`` before the call that writes it, and all are freed at the end::

    %a = memref.alloc() : memref<1x64x56x56xf32>        // 802816 bytes
    call @conv1(%x, ..., %a)
    %b = memref.alloc() : memref<1x64x56x56xf32>
    call @conv2(%a, ..., %b)                            // %a's last reader
    %c = memref.alloc() : memref<1x64x56x56xf32>
    call @conv3(%b, ..., %c)
    ...
    memref.dealloc %a
    memref.dealloc %b
    ...

A tensor lives from its alloc to its last reader. The stage gives each tensor an offset in
one arena, largest tensors first, each at the lowest offset free of the tensors placed
before it that live at the same time (greedy by size, as TVM's and TFLite's planners): two
tensors share bytes only when one's last reader comes before the other's alloc, so a call
never reads and writes the same bytes. The arena is allocated before the first tensor and
freed after the last tensor's last reader; the tensors are ``memref.view`` s of it::

    %arena = memref.alloc() {alignment = 64 : i64} : memref<1605632xi8>
    %a = memref.view %arena[%c0][] : memref<1605632xi8> to memref<1x64x56x56xf32>
    ...
    %c = memref.view %arena[%c0][] : memref<1605632xi8> to memref<1x64x56x56xf32>

On the models measured the arena is exactly the most the tensors hold at once (MobileNet-v2
at batch 8: 45.9 MB for 204 MB of tensors; whole buffers shared as TVM's storage tokens
took 62.8 MB). Tensors of dynamic size (a symbolic batch), of another memory space or
layout, or whose dealloc is not in the function's block keep their own ``malloc`` (a
dynamic one freed after its last reader too). What the plan gives is recorded
(:class:`~mlc_mlir.runtime.vm.MemoryPlan`, ``ex.memory_plan``): the arena, what the tensors
hold at once and in all, and the largest scratch a called kernel allocates for itself (an
im2col buffer; inside a parallel loop once per core).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref

from ..irutil import MEMREF_VIEW_OPS, has_identity_layout, symbol_ops, walk_ops
from ..runtime.vm import MemoryPlan

__all__ = ["plan_memory", "GRAPH_ATTR", "ALIGNMENT"]

#: the attribute of a lowered graph function (:mod:`mlc_mlir.graph.transform.lower`)
GRAPH_ATTR = "mlc.lowered_graph"
#: each planned buffer's alignment (bytes), as the other allocations of the build
ALIGNMENT = 64


@dataclass
class _Tensor:
    alloc: ir.Operation
    dealloc: ir.Operation
    start: int
    end: int
    size: int


def plan_memory(module: ir.Module, cores: int = 1) -> dict[str, MemoryPlan]:
    """Plan the intermediates of each lowered graph function of ``module`` in place (call
    inside the context); ``cores`` counts a kernel's allocations inside parallel loops.
    Returns each graph function's :class:`MemoryPlan`."""
    funcs = symbol_ops(module, defined=True)
    scratch = {name: _scratch_bytes(fop, cores) for name, fop in funcs.items() if GRAPH_ATTR not in fop.attributes}
    return {name: _plan_function(fop, scratch) for name, fop in funcs.items() if GRAPH_ATTR in fop.attributes}


def _bytes(t: ir.Type) -> int | None:
    """The bytes of a static memref of the default layout and memory space, else None."""
    if not isinstance(t, ir.MemRefType):
        return None
    mt = ir.MemRefType(t)
    if not mt.has_static_shape or mt.memory_space is not None or not has_identity_layout(mt):
        return None
    et = mt.element_type
    if isinstance(et, ir.FloatType):
        bits = et.width
    elif isinstance(et, ir.IntegerType):
        bits = et.width
    elif isinstance(et, ir.IndexType):
        bits = 64
    else:
        return None
    return math.prod(mt.shape) * max(1, (bits + 7) // 8)


def _aligned(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def _scratch_bytes(fop: ir.Operation, cores: int) -> int:
    """The static allocations of a kernel (an upper bound of its scratch: all of them at
    once, those inside a parallel loop once per core)."""
    total = 0
    for op in walk_ops(fop, ("memref.alloc",)):
        size = _bytes(op.results[0].type)
        if size is None:
            continue
        parent, per_core = op.parent, 1
        while parent is not None and parent.name != "func.func":
            if parent.name == "scf.forall":
                per_core = cores
            parent = parent.parent
        total += _aligned(size) * per_core
    return total


def _top_level(op: ir.Operation, fop: ir.Operation) -> ir.Operation | None:
    """The ancestor of ``op`` in ``fop``'s block (``op`` itself when it is there)."""
    target = fop.operation
    while op.parent is not None and op.parent.operation != target:
        op = op.parent
    return op if op.parent is not None else None


def _last_use(value: ir.Value, fop: ir.Operation, pos: dict) -> int | None:
    """The position of the last top-level op using ``value`` or a view of it (None: a use
    outside the function's block order, e.g. returned)."""
    last = -1
    for use in value.uses:
        owner = use.owner
        if owner.name == "memref.dealloc":
            continue
        top = _top_level(owner, fop)
        if top is None or top.operation not in pos or top.name == "func.return":
            return None
        last = max(last, pos[top.operation])
        if owner.name in MEMREF_VIEW_OPS:
            for r in owner.results:
                inner = _last_use(r, fop, pos)
                if inner is None:
                    return None
                last = max(last, inner)
    return last


def _tensors(fop: ir.Operation) -> tuple[list[_Tensor], list[_Tensor], int, list[ir.Operation]]:
    """The plannable intermediates of ``fop`` (in program order), those of a dynamic size
    whose dealloc can move to their last use (size 0), the count of the others (dynamic ones
    included), and the function's top-level ops."""
    blocks = list(fop.regions[0].blocks)
    ops = list(blocks[0].operations) if len(blocks) == 1 else []
    pos = {op.operation: i for i, op in enumerate(ops)}
    out, dynamic, other = [], [], 0
    for i, op in enumerate(ops):
        if op.name != "memref.alloc":
            continue
        value = op.results[0]
        size = _bytes(value.type)
        deallocs = [u.owner for u in value.uses if u.owner.name == "memref.dealloc"]
        last = _last_use(value, fop, pos) if len(deallocs) == 1 and deallocs[0].operation in pos else None
        if size is None or last is None or last <= i or last > pos[deallocs[0].operation]:
            other += 1
            if size is None and last is not None and i < last < pos[deallocs[0].operation]:
                dynamic.append(_Tensor(op, deallocs[0], i, last, 0))
            continue
        out.append(_Tensor(op, deallocs[0], i, last, _aligned(size)))
    return out, dynamic, other, ops


def _offsets(tensors: list[_Tensor]) -> tuple[int, list[int]]:
    """Each tensor's offset in the arena (greedy by size: the largest first, each at the
    lowest offset clear of the placed tensors it lives with), and the arena's size."""
    offsets = [0] * len(tensors)
    placed: list[int] = []
    for k in sorted(range(len(tensors)), key=lambda k: (-tensors[k].size, tensors[k].start)):
        t = tensors[k]
        busy = sorted((offsets[j], offsets[j] + tensors[j].size) for j in placed
                      if tensors[j].start <= t.end and t.start <= tensors[j].end)
        at = 0
        for lo, hi in busy:
            if at + t.size <= lo:
                break
            at = max(at, hi)
        offsets[k] = at
        placed.append(k)
    return max((o + t.size for o, t in zip(offsets, tensors)), default=0), offsets


def _peak(intervals: list[tuple[int, int, int]], calls: dict[int, int]) -> tuple[int, int]:
    """The largest total of ``(start, end, bytes)`` intervals live at one position, and
    the same plus the scratch of the kernel called there."""
    points = sorted({s for s, _, _ in intervals} | set(calls))
    live = lambda p: sum(b for s, e, b in intervals if s <= p <= e)  # noqa: E731
    plain = max((live(p) for p in points), default=0)
    with_scratch = max((live(p) + calls.get(p, 0) for p in points), default=0)
    return plain, with_scratch


def _plan_function(fop: ir.Operation, scratch: dict[str, int]) -> MemoryPlan:
    tensors, dynamic, other, ops = _tensors(fop)
    size, offsets = _offsets(tensors)
    calls = {i: scratch.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, 0)
             for i, op in enumerate(ops) if op.name == "func.call"}
    live, _ = _peak([(t.start, t.end, t.size) for t in tensors], {})
    span = (min((t.start for t in tensors), default=0), max((t.end for t in tensors), default=0))
    planned, peak = _peak([(*span, size)] if tensors else [], calls)
    if len(tensors) > 1:
        _rewrite(tensors, offsets, size, ops)
    elif tensors:
        tensors[0].dealloc.move_after(ops[tensors[0].end])
    for t in dynamic:  # freed after its last reader too, by malloc's own reuse
        t.dealloc.move_after(ops[t.end])
    return MemoryPlan(intermediates=len(tensors) + other, buffers=min(len(tensors), 1) + other, dynamic=other,
                      planned_bytes=planned, live_bytes=live, total_bytes=sum(t.size for t in tensors),
                      scratch_bytes=max(calls.values(), default=0), peak_bytes=peak)


def _rewrite(tensors: list[_Tensor], offsets: list[int], size: int, ops: list[ir.Operation]) -> None:
    """The tensors as views of one ``i8`` arena at their offsets, the arena allocated
    before the first one and freed after the last one's last reader."""
    first = min(tensors, key=lambda t: t.start).alloc
    last_use = ops[max(t.end for t in tensors)]
    i8, index = ir.IntegerType.get_signless(8), ir.IndexType.get()
    with ir.InsertionPoint(first), first.location:
        arena = memref.AllocOp(ir.MemRefType.get([size], i8), [], [],
                               alignment=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), ALIGNMENT)).result
    for t, offset in zip(tensors, offsets):
        with ir.InsertionPoint(t.alloc), t.alloc.location:
            at = arith.ConstantOp(index, offset).result
            view = memref.ViewOp(t.alloc.results[0].type, arena, at, []).result
        t.alloc.results[0].replace_all_uses_with(view)
        t.alloc.erase()
        t.dealloc.erase()
    with ir.InsertionPoint(last_use), last_use.location:
        memref.DeallocOp(arena).operation.move_after(last_use)
