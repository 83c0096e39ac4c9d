"""Gathers whose lanes read evenly spaced elements become vector loads (part of ``vector-opt``).

Linalg's vectorizer turns a ``tensor.extract`` whose index is not a plain loop dimension
into a ``vector.gather`` with one linear offset per lane. The project emits such reads for
padding (``padded_pixel``: the index clamped into the input, the pad value selected outside
it) and for the stride phases of a strided depthwise convolution (``x * 2 - 1`` clamped).
LLVM scalarizes a gather on hosts without a fast gather instruction (Zen 3: one
``vinsertps`` per lane), although almost every vector of such a read is a contiguous run
(stride 1) or an evenly spaced one (stride 2): only the vectors at the image's borders are
clamped.

:func:`gathers_to_loads` rewrites each gather whose offset vector it can follow back to
``base + stride * lane`` (``vector.step``, broadcasts, constants, ``addi`` / ``subi`` /
``muli`` by a constant, index casts; ``minsi`` / ``maxsi`` against a lane-uniform bound,
which hold as the identity when the run lies inside the bound; quotients and remainders
as atoms of their own, which must cancel: a convolution's packed tiles read back at ``y[o,
q divsi 16, q - (q divsi 16) * 16]`` are at offset ``(o * T + q divsi 16) * 16 + q - (q
divsi 16) * 16 = o * T * 16 + q``) into a branch on those conditions (a plain load where
there are none)::

    %lin = base offset of lane 0 (scalar arithmetic mirroring the vector's)
    %ok = the clamps inactive for every lane, and for stride > 1 %lin >= stride - 1
    %r = scf.if %ok -> (vector<8xf32>) {
      %run = vector.load %flat[%lin - 1] : memref<Nxf32>, vector<16xf32>  // stride * lanes elements
      %v = vector.shuffle %run, %run [1, 3, 5, 7, 9, 11, 13, 15]          // every stride-th
      scf.yield %v
    } else {
      %g = vector.gather ...                                             // the original, at the borders
      scf.yield %g
    }

A run of stride > 1 ends at the last lane's element, so it stays in the buffer at the
image's last vector; it starts ``stride - 1`` elements before lane 0's, in the buffer off a
row's first vector whatever the outer indices (starting at lane 0 it would pass the
buffer's end there, a check no range proves; masking the extra elements off instead, a
``vector.maskedload``, ran 2x slower on Zen 3 where the mask left no half whole).

Then the loops whose induction variables the lanes' conditions depend on (a window's
column loop) are peeled (:func:`peel_border_iterations`): their first and last iterations
become copies of their own, and integer range analysis (``int-range-optimizations``, then
``canonicalize``) proves the conditions in the middle loop, where the branch, the gather
and the vector index arithmetic it needed disappear::

    vector 0 (the left border):  gather + lane-wise select
    scf.for %x = %c8 to %c41 step %c8 {    // the interior: load + shuffle (+ a scalar select)
    vector 6 (the right border): gather, or the branch where range analysis cannot decide

When the gathered value's one use is the padding's ``arith.select %inside, %value, %pad``
(``te.if_then_else`` around the clamped read), the select moves into both branches: where
the clamps are inactive the mask is the same on every lane (a signed comparison of
lane-linear values whose first and last lanes agree, checked with the clamps), so the
loaded run is selected by one scalar instead of a vector mask built per vector.

Only unmasked gathers (an all-true constant mask) from a row-major buffer (static dims but
the first), of a stride up to :data:`MAX_STRIDE`, are taken; the rest are left as they are.
(A run is ``stride * lanes`` elements: a transposing read, whose lanes are a row apart, would
load whole rows to keep one element of each, e.g. 14 KB per vector for 14 lanes 256
elements apart.) (MobileNet-v2's stride-2 depthwise
convolution of 96 channels at 112x112, one image: the phases' gathers ran 1.7 ms; in place,
a branch per tap, 1.05-1.3 ms; peeled, 0.47-0.61 ms. ResNet-18's max pooling, 0.64-0.69 ->
0.35-0.40 ms; MobileNet-v2's kernels with gathers at batch 8, one thread: 28.8 -> 23.0 ms.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, memref, scf, vector
from mlir.passmanager import PassManager

from ..irutil import is_row_major, walk_ops

__all__ = ["gathers_to_loads", "MAX_STRIDE"]

#: the widest spacing of a gather's lanes loaded as a run (the windows' strides 2 and 3, a
#: stride-4 pooling); wider ones stay gathers
MAX_STRIDE = 4

#: element-wise ops of lane-uniform operands are lane-uniform
_ELEMENTWISE = ("arith.addi", "arith.subi", "arith.muli", "arith.index_cast", "arith.index_castui",
                "arith.extsi", "arith.extui", "arith.trunci", "arith.maxsi", "arith.minsi",
                "arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi")
#: quotients and remainders: of non-uniform operands, opaque atoms (:attr:`_Lin.opaque`)
_QUOTIENTS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi")
#: casts keep a lane-linear vector lane-linear (index values: no wrap-around)
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci")


@dataclass
class _Lin:
    """A 1-D integer vector ``base + stride * lane`` (given ``conds``); ``uniform`` when every
    lane is the same value (stride 0, no conditions)."""

    stride: int
    uniform: bool = False
    #: the value's constant lane-0 element, when known (a multiplier must be one)
    const: int | None = None
    #: terms ``coefficient * atom`` of vectors that are no lane-linear (a quotient ``q divsi
    #: 16``), by atom: the value is lane-linear when they cancel (``(q divsi 16) * 16 + (q -
    #: (q divsi 16) * 16)`` is ``q``), as a gather's offset must
    opaque: dict = field(default_factory=dict)


@dataclass
class _Analysis:
    lanes: int
    memo: dict = field(default_factory=dict)

    def of(self, v: ir.Value) -> _Lin | None:
        if v not in self.memo:  # (an ir.Value hashes and compares by the value it wraps)
            self.memo[v] = None
            self.memo[v] = self._of(v)
        return self.memo[v]

    def _of(self, v: ir.Value) -> _Lin | None:
        if _lanes(v.type) != self.lanes or isinstance(v.owner, ir.Block):
            return None
        op = v.owner.operation
        name = op.name
        if name in ("vector.broadcast", "vector.shape_cast"):
            src = op.operands[0]
            if not isinstance(src.type, ir.VectorType):
                return _Lin(0, uniform=True, const=_scalar_const(src))
            if math.prod(ir.VectorType(src.type).shape) == 1:
                return _Lin(0, uniform=True)
            return self.of(src)
        if name == "vector.step":
            return _Lin(1, const=0)
        if name == "arith.constant":
            values = _dense_ints(op)
            if values is None:
                return None
            steps = {b - a for a, b in zip(values, values[1:])}
            if len(steps) > 1:
                return None
            step = steps.pop() if steps else 0
            return _Lin(step, uniform=step == 0, const=values[0])
        if name not in _ELEMENTWISE or len(op.results) != 1:
            return None
        parts = [self.of(o) for o in op.operands]
        if any(p is None for p in parts):
            return None
        if all(p.uniform for p in parts):
            return _Lin(0, uniform=True, const=_fold(name, [p.const for p in parts]))
        if name in _CASTS:
            return _Lin(parts[0].stride, opaque=parts[0].opaque)
        a, b = parts
        if name == "arith.addi":
            return _Lin(a.stride + b.stride, opaque=_combine(a.opaque, b.opaque, 1))
        if name == "arith.subi":
            return _Lin(a.stride - b.stride, opaque=_combine(a.opaque, b.opaque, -1))
        if name == "arith.muli":
            lin, k = (a, b) if b.uniform else (b, a)
            if not k.uniform or k.const is None:
                return None
            return _Lin(lin.stride * k.const, opaque=_combine({}, lin.opaque, k.const))
        if name in ("arith.maxsi", "arith.minsi"):
            lin, bound = (a, b) if b.uniform else (b, a)
            if not bound.uniform or lin.stride <= 0 or lin.opaque:
                return None
            return _Lin(lin.stride)
        if name in _QUOTIENTS:  # an atom of its own
            return _Lin(0, opaque={v: 1})
        return None


def _combine(a: dict, b: dict, k: int) -> dict:
    """The opaque terms ``a + k * b``, those that cancel dropped."""
    out = dict(a)
    for atom, coef in b.items():
        out[atom] = out.get(atom, 0) + k * coef
    return {atom: coef for atom, coef in out.items() if coef}


def _lanes(t: ir.Type) -> int | None:
    """The lane count of a vector type ``1x..x1xN`` (N), else None."""
    if not isinstance(t, ir.VectorType) or any(d != 1 for d in t.shape[:-1]):
        return None
    return t.shape[-1]


def _scalar_const(v: ir.Value) -> int | None:
    if isinstance(v.owner, ir.Block) or v.owner.operation.name != "arith.constant":
        return None
    attr = v.owner.operation.attributes["value"]
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


def _dense_ints(op: ir.Operation) -> list[int] | None:
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseIntElementsAttr):
        return None
    if attr.is_splat:
        splat = attr.get_splat_value()
        return [splat.value] if isinstance(splat, ir.IntegerAttr) else None
    return [int(x) for x in attr]


def _fold(name: str, consts: list[int | None]) -> int | None:
    if None in consts:
        return None
    if name in _CASTS:
        return consts[0]
    a, b = consts
    folds = {"arith.addi": a + b, "arith.subi": a - b, "arith.muli": a * b,
             "arith.maxsi": max(a, b), "arith.minsi": min(a, b)}
    return folds.get(name)


class _Emitter:
    """Scalar IR (at the current insertion point) for lane 0 of analysed vectors, and the
    conditions under which the vector is ``lane0 + stride * lane``."""

    def __init__(self, analysis: _Analysis) -> None:
        self.an = analysis
        self.conds: list[ir.Value] = []
        self.memo: dict = {}

    def lane0(self, v: ir.Value) -> ir.Value:
        if v not in self.memo:
            self.memo[v] = self._lane0(v)
        return self.memo[v]

    def _lane0(self, v: ir.Value) -> ir.Value:
        lin = self.an.of(v)
        elem = ir.VectorType(v.type).element_type
        if lin.uniform:
            if lin.const is not None:
                return arith.constant(elem, lin.const)
            op = v.owner.operation
            if op.name == "vector.broadcast" and not isinstance(op.operands[0].type, ir.VectorType):
                return op.operands[0]
            return vector.extract(v, [], [0] * ir.VectorType(v.type).rank)
        op = v.owner.operation
        name = op.name
        if name in ("vector.broadcast", "vector.shape_cast"):
            return self.lane0(op.operands[0])
        if name in ("vector.step", "arith.constant"):
            return arith.constant(elem, lin.const)
        args = [self.lane0(o) for o in op.operands]
        if name in _CASTS:
            return ir.Operation.create(name, results=[elem], operands=args).result
        a, b = args
        if name in ("arith.maxsi", "arith.minsi"):
            la, lb = (self.an.of(o) for o in op.operands)
            run, bound = (a, b) if lb.uniform else (b, a)
            stride = (la if lb.uniform else lb).stride
            if name == "arith.maxsi":  # max(run, bound) == run when the first lane is >= bound
                self.conds.append(arith.cmpi(arith.CmpIPredicate.sge, run, bound))
            else:  # min(run, bound) == run when the last lane is <= bound
                last = arith.addi(run, arith.constant(elem, stride * (self.an.lanes - 1)))
                self.conds.append(arith.cmpi(arith.CmpIPredicate.sle, last, bound))
            return run
        return ir.Operation.create(name, results=[elem], operands=[a, b]).result


def _all_true(mask: ir.Value) -> bool:
    if isinstance(mask.owner, ir.Block) or mask.owner.operation.name != "arith.constant":
        return False
    attr = mask.owner.operation.attributes["value"]
    if not isinstance(attr, ir.DenseIntElementsAttr) or not attr.is_splat:
        return False
    splat = attr.get_splat_value()
    return isinstance(splat, (ir.BoolAttr, ir.IntegerAttr)) and bool(splat.value)


def gathers_to_loads(fn: ir.Operation) -> int:
    """Rewrite the lane-linear gathers of ``fn`` (see the module doc); returns how many."""
    count = 0
    for op in walk_ops(fn, ("vector.gather",)):
        if _rewrite(op):
            count += 1
    if count:
        ranges = "int-range-optimizations," if peel_border_iterations(fn) else ""
        PassManager.parse(f"func.func({ranges}canonicalize,cse,loop-invariant-code-motion)").run(fn)
    return count


#: marks the loops :func:`peel_border_iterations` peels (set by :func:`_rewrite`)
_PEEL = "mlc.peel_borders"


def peel_border_iterations(fn: ir.Operation) -> int:
    """Peel the first and the last iteration off every ``scf.for`` (static bounds, at least
    3 iterations) whose induction variable a run's condition depends on, outer loops first,
    inner ones in the middle copy only; returns how many loops were peeled. In the middle
    copies the conditions hold for every iteration (a window's borders are its first and last
    vectors and rows), which integer range analysis then proves."""
    peeled = 0
    while True:
        marked = [op for op in walk_ops(fn, ("scf.for",)) if _PEEL in op.attributes]
        if not marked:
            return peeled
        loop = marked[0]
        del loop.attributes[_PEEL]
        if _peel_ends(loop):
            peeled += 1


def _ivs_in_slice(value: ir.Value) -> list[ir.Operation]:
    """The ``scf.for`` loops whose induction variable ``value`` depends on."""
    loops, seen, todo = [], set(), [value]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v.owner, ir.Block):
            parent = v.owner.owner
            if parent is not None and parent.name == "scf.for" and v.arg_number == 0:
                loops.append(parent)
            continue
        op = v.owner.operation
        if op.name.startswith("scf.") or op.regions:
            continue
        todo.extend(op.operands)
    return loops


def _const_index(v: ir.Value) -> int | None:
    if isinstance(v.owner, ir.Block) or v.owner.operation.name != "arith.constant":
        return None
    attr = v.owner.operation.attributes["value"]
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


def _peel_ends(loop: ir.Operation) -> bool:
    """Split ``scf.for`` ``loop`` into its first iteration, the middle ones and its last (three
    loops, in order, iteration values chained); False when its bounds are not constants or
    it has fewer than three iterations."""
    lb, ub, step = (_const_index(loop.operands[i]) for i in range(3))
    if lb is None or ub is None or not step or step < 0:
        return False
    trips = -(-(ub - lb) // step)
    if trips < 3:
        return False
    index = ir.IndexType.get()
    # (upper bounds one past the last iteration: the induction variable's range, which
    # range analysis takes as [lower, upper - 1], is then exact)
    second, last = lb + step, lb + (trips - 1) * step
    with ir.InsertionPoint(loop), loop.location:
        bounds = [arith.constant(index, v) for v in (lb + 1, second, last - step + 1, last, last + 1)]
        front = loop.clone(ip=ir.InsertionPoint(loop))
        back = loop.clone(ip=ir.InsertionPoint(loop))
    loop.move_before(back)
    for copy in (front, back):
        for inner in walk_ops(copy, ("scf.for",)):
            if _PEEL in inner.attributes:
                del inner.attributes[_PEEL]
    front.operands[1] = bounds[0]
    loop.operands[0], loop.operands[1] = bounds[1], bounds[2]
    back.operands[0], back.operands[1] = bounds[3], bounds[4]
    for i, result in enumerate(loop.results):
        result.replace_all_uses_with(back.results[i])
        back.operands[3 + i] = result
        loop.operands[3 + i] = front.results[i]
    return True


def _rewrite(op: ir.Operation) -> bool:
    base = op.operands[0]
    if not isinstance(base.type, ir.MemRefType):
        return False
    mtype = ir.MemRefType(base.type)
    rank = mtype.rank
    indices = list(op.operands[1:1 + rank])
    offsets, mask = op.operands[1 + rank], op.operands[2 + rank]
    rtype = ir.VectorType(op.results[0].type)
    if not is_row_major(mtype) or not _all_true(mask) or any(d != 1 for d in rtype.shape[:-1]):
        return False
    lanes_v, lanes = offsets, rtype.shape[-1]
    an = _Analysis(lanes)
    lin = an.of(lanes_v)
    if lin is None or lin.opaque or lin.stride < 1 or lin.stride > MAX_STRIDE or lin.uniform:
        return False
    stride = lin.stride
    index = ir.IndexType.get()
    with ir.InsertionPoint(op), op.location:
        em = _Emitter(an)
        first = em.lane0(lanes_v)
        if first.type != index:
            first = arith.index_cast(index, first)
        sizes = [memref.dim(base, arith.constant(index, 0)) if mtype.is_dynamic_dim(0)
                 else arith.constant(index, mtype.shape[0])] + [arith.constant(index, d) for d in mtype.shape[1:]]
        # the base indices' linear offset (row-major), then lane 0's
        start = indices[0]
        for k in range(1, rank):
            start = arith.addi(arith.muli(start, sizes[k]), indices[k])
        start = arith.addi(start, first)
        conds, clamps = list(em.conds), len(em.conds)
        # a run of stride > 1 ends at the last lane's element (in the buffer) and starts
        # stride - 1 elements before lane 0's: in the buffer unless lane 0 is among its first
        # elements (off a row's first vector, range analysis proves it whatever the outer
        # indices; a run starting at lane 0 would end past the buffer at its last vector,
        # which no range proves)
        back = stride - 1
        in_buffer = None
        if back:
            in_buffer = arith.cmpi(arith.CmpIPredicate.sge, start, arith.constant(index, back))
            conds.append(in_buffer)
        flat_t = ir.MemRefType.get([ir.ShapedType.get_dynamic_size() if mtype.is_dynamic_dim(0)
                                    else math.prod(mtype.shape)], mtype.element_type)
        dyn = []
        if mtype.is_dynamic_dim(0):  # (the flat view's size)
            count = sizes[0]
            for s in sizes[1:]:
                count = arith.muli(count, s)
            dyn = [count]
        flat = memref.ReinterpretCastOp(flat_t, base, [], dyn, [], [0], [flat_t.shape[0]], [1]).result

        def load(shape: ir.VectorType = rtype) -> ir.Value:
            run_t = ir.VectorType.get([stride * lanes], rtype.element_type)
            run = vector.load(run_t, flat, [arith.subi(start, arith.constant(index, back)) if back else start])
            if stride > 1:
                run = vector.shuffle(run, run, [stride * i + back for i in range(lanes)])
            return vector.ShapeCastOp(shape, run).result if shape.rank > 1 else run

        if not conds:  # consecutive lanes, nothing clamped: a load
            op.results[0].replace_all_uses_with(load())
            op.erase()
            return True
        # the padding's select on the gathered value: where the clamps are inactive, its mask
        # is the same for every lane (checked too), so the fast path selects by one scalar
        chain = _padding_select(op)
        mask0 = None
        if chain is not None:
            kept = len(conds)
            mask0 = _uniform_mask(chain[-1].operands[0], em, conds)
            if mask0 is None:  # (the scalars emitted for it are left to canonicalization)
                chain, conds = None, conds[:kept]
            else:
                conds += em.conds[clamps:]  # (clamps the mask's lanes went through)
        # the loops whose borders the lanes' conditions depend on (not the run's start in the
        # buffer: off a row's first vector it holds whatever the outer indices)
        for c in conds:
            if in_buffer is not None and c == in_buffer:
                continue
            for loop in _ivs_in_slice(c):
                loop.attributes[_PEEL] = ir.UnitAttr.get()
        cond = conds[0]
        for c in conds[1:]:
            cond = arith.andi(cond, c)
        if chain is None:
            if_op = scf.IfOp(cond, [rtype], has_else=True)
            with ir.InsertionPoint(if_op.then_block):
                scf.YieldOp([load()])
            moved = [op]
        else:
            select = chain[-1]
            stype = ir.VectorType(select.results[0].type)
            if_op = scf.IfOp(cond, [stype], has_else=True)
            with ir.InsertionPoint(if_op.then_block):
                scf.YieldOp([arith.select(mask0, load(stype), select.operands[2])])
            moved = [op, *chain]
    last = moved[-1]
    last.results[0].replace_all_uses_with(if_op.results[0])
    with ir.InsertionPoint(if_op.else_block), op.location:
        yld = scf.YieldOp([last.results[0]])
    for m in moved:
        m.move_before(yld)
    return True


def _padding_select(gather: ir.Operation) -> list[ir.Operation] | None:
    """``[extract?, select]`` when the gather's one use is ``arith.select %mask, %gathered,
    %pad`` (through a ``vector.extract`` of its leading unit dims) whose mask and pad value
    are defined before the gather, else None."""
    chain: list[ir.Operation] = []
    value = gather.results[0]
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return None
        user = uses[0].owner.operation
        if user.block != gather.block:
            return None
        if user.name == "vector.extract" and not chain and len(user.operands) == 1:
            chain.append(user)
            value = user.results[0]
            continue
        if user.name != "arith.select" or user.operands[1] != value or user.operands[0] == value:
            return None
        chain.append(user)
        break
    mask, pad = user.operands[0], user.operands[2]
    if not all(_defined_before(v, gather) for v in (mask, pad)):
        return None
    return chain


def _defined_before(value: ir.Value, op: ir.Operation) -> bool:
    """Whether ``value`` is defined before ``op`` in its block or in a block around it."""
    if isinstance(value.owner, ir.Block):
        return _in_block(op, value.owner)
    owner = value.owner.operation
    if owner.block == op.block:
        return owner.is_before_in_block(op)
    return _in_block(op, owner.block)


def _in_block(op: ir.Operation, block: ir.Block) -> bool:
    """Whether ``op`` is nested in ``block`` (at any depth)."""
    op = op.operation
    while op.parent is not None:  # (the top module has no block)
        if op.block == block:
            return True
        op = op.parent
    return False


_ORDERED = {"sge", "sgt", "sle", "slt"}


def _uniform_mask(mask: ir.Value, em: _Emitter, conds: list[ir.Value]) -> ir.Value | None:
    """Lane 0 of the i1 vector ``mask`` as a scalar, appending to ``conds`` what makes every
    lane equal to it (a signed comparison of lane-linear values has its first and last lane
    equal), or None when ``mask`` is not built of such comparisons, ``andi`` / ``ori``,
    broadcasts and constants."""
    if _lanes(mask.type) != em.an.lanes or isinstance(mask.owner, ir.Block):
        return None
    op = mask.owner.operation
    name = op.name
    if name == "vector.broadcast":
        src = op.operands[0]
        if not isinstance(src.type, ir.VectorType):
            return src
        if math.prod(ir.VectorType(src.type).shape) == 1:
            return vector.extract(src, [], [0] * ir.VectorType(src.type).rank)
        return _uniform_mask(src, em, conds)
    if name == "arith.constant":
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseIntElementsAttr) and attr.is_splat:
            return arith.constant(ir.IntegerType.get_signless(1), int(bool(attr.get_splat_value().value)))
        return None
    if name in ("arith.andi", "arith.ori"):
        a, b = (_uniform_mask(o, em, conds) for o in op.operands)
        if a is None or b is None:
            return None
        return arith.andi(a, b) if name == "arith.andi" else arith.ori(a, b)
    if name != "arith.cmpi":
        return None
    la, lb = (em.an.of(o) for o in op.operands)
    if la is None or lb is None or la.opaque or lb.opaque:
        return None
    pred = arith.CmpIPredicate(ir.IntegerAttr(op.attributes["predicate"]).value)
    a0, b0 = (em.lane0(o) for o in op.operands)
    first = arith.cmpi(pred, a0, b0)
    if la.uniform and lb.uniform:
        return first
    if str(pred).split(".")[-1] not in _ORDERED:
        return None
    n = em.an.lanes - 1
    elem = a0.type
    a1 = arith.addi(a0, arith.constant(elem, la.stride * n)) if la.stride else a0
    b1 = arith.addi(b0, arith.constant(elem, lb.stride * n)) if lb.stride else b0
    # lanes change monotonically: the comparison is the same on every lane when it is on both ends
    conds.append(arith.cmpi(arith.CmpIPredicate.eq, first, arith.cmpi(pred, a1, b1)))
    return first
