"""The ``memory-plan`` build stage: a lowered graph function's intermediates share buffers.

TVM's static memory planning (the graph executor's storage tokens) on the bufferized graph
function. After deallocation the lowered graph function is a straight line of calls; each
intermediate tensor is a ``memref.alloc`` before the call that writes it and a
``memref.dealloc`` after its last reader::

    %a = memref.alloc() : memref<1x64x56x56xf32>        // 802816 bytes
    call @conv1(%x, ..., %a)
    %b = memref.alloc() : memref<1x64x56x56xf32>
    call @conv2(%a, ..., %b)
    memref.dealloc %a
    %c = memref.alloc() : memref<1x64x56x56xf32>         // %a's buffer is free again
    call @conv3(%b, ..., %c)
    memref.dealloc %b
    ...

In program order, each alloc takes a free buffer ("token") released by an earlier dealloc
(the smallest one large enough; else the largest free one of at least half its size,
grown) or a new one; each buffer is allocated once, at its first tensor's alloc, with the
largest size of its tensors, and freed after its last tensor's last reader; the tensors
are ``memref.view`` s of it::

    %t0 = memref.alloc() {alignment = 64 : i64} : memref<802816xi8>
    %a = memref.view %t0[%c0][] : memref<802816xi8> to memref<1x64x56x56xf32>
    ...
    %c = memref.view %t0[%c0][] : memref<802816xi8> to memref<1x64x56x56xf32>

Two tensors share a buffer only when one's dealloc comes before the other's alloc, so a
call never reads and writes one buffer. Tensors of dynamic size (a symbolic batch), of
another memory space or layout, or whose dealloc is not in the function's block keep their
own ``malloc`` (a dynamic one freed after its last reader too). What the plan gives is recorded (:class:`~mlc_mlir.runtime.vm.MemoryPlan`,
``ex.memory_plan``): the planned peak (the buffers live at once), what one buffer per tensor
would hold live at once and allocate in all, and the largest scratch a called kernel
allocates for itself (an im2col buffer; inside a parallel loop once per core).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, memref

from ..irutil import symbol_ops, walk_ops
from ..runtime.vm import MemoryPlan

__all__ = ["plan_memory", "GRAPH_ATTR", "ALIGNMENT"]

#: the attribute of a lowered graph function (:mod:`mlc_mlir.graph.transform.lower`)
GRAPH_ATTR = "mlc.lowered_graph"
#: each planned buffer's alignment (bytes), as the other allocations of the build
ALIGNMENT = 64
#: ops whose memref result is a view of their first operand (its lifetime the buffer's)
_VIEWS = frozenset({"memref.subview", "memref.expand_shape", "memref.collapse_shape", "memref.cast",
                    "memref.reinterpret_cast", "memref.view", "memref.transpose"})


@dataclass
class _Tensor:
    alloc: ir.Operation
    dealloc: ir.Operation
    start: int
    end: int
    size: int


@dataclass
class _Token:
    size: int
    members: list[_Tensor] = field(default_factory=list)

    @property
    def span(self) -> tuple[int, int]:
        return self.members[0].start, self.members[-1].end


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
    if not mt.has_static_shape or mt.memory_space is not None or not _identity(mt):
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


def _identity(mt: ir.MemRefType) -> bool:
    layout = mt.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(mt.rank)


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
        if owner.name in _VIEWS:
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


def _assign(tensors: list[_Tensor]) -> list[_Token]:
    """Tokens in program order: a free one of the best fit, a grown one, or a new one."""
    events = sorted([(t.start, 1, k) for k, t in enumerate(tensors)] + [(t.end, 0, k) for k, t in enumerate(tensors)])
    tokens: list[_Token] = []
    free: list[int] = []
    owner: dict[int, int] = {}
    for _, is_alloc, k in events:
        t = tensors[k]
        if not is_alloc:
            free.append(owner[k])
            continue
        fits = [j for j in free if tokens[j].size >= t.size]
        grow = [j for j in free if 2 * tokens[j].size >= t.size]
        if fits:
            j = min(fits, key=lambda j: tokens[j].size)
        elif grow:
            j = max(grow, key=lambda j: tokens[j].size)
            tokens[j].size = t.size
        else:
            tokens.append(_Token(t.size))
            j = len(tokens) - 1
        if j in free:
            free.remove(j)
        tokens[j].members.append(t)
        owner[k] = j
    return tokens


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
    tokens = _assign(tensors)
    calls = {i: scratch.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, 0)
             for i, op in enumerate(ops) if op.name == "func.call"}
    live, _ = _peak([(t.start, t.end, t.size) for t in tensors], {})
    planned, peak = _peak([(*tok.span, tok.size) for tok in tokens], calls)
    for tok in tokens:
        _rewrite(tok, ops)
    for t in dynamic:  # freed after its last reader too, by malloc's own reuse
        t.dealloc.move_after(ops[t.end])
    return MemoryPlan(intermediates=len(tensors) + other, buffers=len(tokens) + other, dynamic=other,
                      planned_bytes=planned, live_bytes=live, total_bytes=sum(t.size for t in tensors),
                      scratch_bytes=max(calls.values(), default=0), peak_bytes=peak)


def _rewrite(tok: _Token, ops: list[ir.Operation]) -> None:
    """One ``i8`` buffer for the token's tensors, each a view of it, freed after the last
    one's last use (a tensor alone keeps its alloc, its dealloc moved there too)."""
    last_use = ops[tok.members[-1].end]
    if len(tok.members) == 1:
        tok.members[0].dealloc.move_after(last_use)
        return
    first = tok.members[0]
    i8, index = ir.IntegerType.get_signless(8), ir.IndexType.get()
    with ir.InsertionPoint(first.alloc), first.alloc.location:
        buf = memref.AllocOp(ir.MemRefType.get([tok.size], i8), [], [],
                             alignment=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), ALIGNMENT)).result
    for t in tok.members:
        with ir.InsertionPoint(t.alloc), t.alloc.location:
            zero = arith.ConstantOp(index, 0).result
            view = memref.ViewOp(t.alloc.results[0].type, buf, zero, []).result
        t.alloc.results[0].replace_all_uses_with(view)
        t.alloc.erase()
    for t in tok.members[:-1]:
        t.dealloc.erase()
    with ir.InsertionPoint(last_use), last_use.location:
        memref.DeallocOp(buf).operation.move_after(last_use)
    tok.members[-1].dealloc.erase()
