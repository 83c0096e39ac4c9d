"""The ``unroll-jam`` build stage: register tiles for reduction loops whose accumulator is small.

A schedule such as the course's ch.2 one (``split j by 32; reorder(j0, k, j1);
reverse_compute_at``) leaves a reduction loop ``k`` whose accumulator is one row of 32
floats: 4 AVX2 registers. Each ``k`` step then issues 4 dependent FMAs and reloads the
whole B row for a single row of A, so the kernel is bound by FMA latency and by streaming B
from L2. This stage unrolls a data-parallel loop around such a reduction by ``f`` and
*jams* the copies into the inner loops (``transform.loop.unroll_and_jam``): the reduction
then updates ``f`` accumulators, the loads the copies share (B's row) are issued once, and
the accumulators fill the target's register budget (:meth:`Target.register_tile`,
AVX2 f32: 6 x 16 = 12 vector registers). It is the register tiling that the course leaves
to the compiler, applied only where it is provably legal:

* the reduction: an ``scf.for`` whose body runs a ``linalg`` op (or a
  ``vector.transfer_write``) on an output buffer defined outside the loop, with a static
  shape of at least one vector, at most half of the budget;
* the loop to jam: an enclosing ``scf.for`` with constant bounds, no results, bounds of its
  inner loops defined outside it, whose iterations are independent: every buffer written
  in its body is accessed only through slabs ``[a * iv + c, a * iv + c + size)`` along one
  dimension with ``c + size <= a * step`` (distinct iterations touch disjoint slabs; views
  are followed through ``memref.subview`` chains, indices through ``arith`` and
  ``affine.apply``); buffers only read are free;
* of those loops, the one whose iterations share the most input elements of the reduction
  (loads issued once after the jam; ties: the innermost); ``f`` the largest factor with
  ``f * accumulator registers <= budget`` (at most 8, at most the trip count). When ``f``
  does not divide the trip count, the loop is split first: the jammed part runs a
  multiple of ``f`` iterations, a copy of the original loop the rest.

IR before (the ch.2 schedule of mm_relu 128 after bufferization; twin lit test
``tests/lit/build/unroll_jam.mlir``, ``mlc-opt --mlc-unroll-jam``)::

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

IR after: ``%i`` steps by 2, the ``k`` loop holds two matmuls (rows ``%i``, ``%i + 1``)
sharing B's row: 8 accumulators, 8 independent FMA chains.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from mlir import ir
from mlir.dialects import arith
from mlir.dialects.transform import interpreter

from ..errors import LoweringError
from ..irutil import diagnostics_text
from ..target import Target

__all__ = ["JAM_ATTR", "JAM_OP_ATTR", "MAX_JAM", "jam_plan", "unroll_and_jam"]

#: attribute naming the factor on the loops this stage jams (removed by the jam)
JAM_ATTR = "mlc.unroll_jam"
#: unit attribute on the linalg ops of the loops to jam (vectorized after the jam, then removed)
JAM_OP_ATTR = "mlc.unroll_jam_op"
#: the largest unroll-and-jam factor the stage uses
MAX_JAM = 8

_READS = ("memref.load", "vector.transfer_read", "vector.load")
_WRITES = ("memref.store", "vector.transfer_write", "vector.store")

_VECTORIZE_JAMMED = """
    %linalg = transform.structured.match interface{{LinalgOp}} attributes {{{attr}}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %linalg : !transform.any_op {{
    ^bb0(%op: !transform.any_op):
      // an op the vectorizer does not handle stays as it is (LLVM may still vectorize it)
      transform.sequence %op : !transform.any_op failures(suppress) {{
      ^bb1(%one: !transform.any_op):
        transform.structured.vectorize %one : !transform.any_op
      }}
    }}
"""

_JAM_SCRIPT = """
module attributes {{transform.with_named_sequence}} {{
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}}) {{
    %loop = transform.structured.match ops{{["scf.for"]}} attributes {{{attr} = {factor} : i64}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %loop : !transform.any_op {{
    ^bb0(%one_loop: !transform.any_op):
      transform.loop.unroll_and_jam %one_loop {{factor = {factor} : i64}} : !transform.any_op
    }}
{vectorize}    transform.apply_patterns to %root {{
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    transform.apply_cse to %root : !transform.any_op
    transform.yield
  }}
}}
"""


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
    plan = [(_peel(loop, factor), factor) for loop, factor in jam_plan(module, target)]
    for loop, factor in plan:
        loop.attributes[JAM_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), factor)
        for op in _walk(loop):  # its linalg ops (and their copies after the jam) get vectorized
            if op.name.startswith("linalg.") and "operandSegmentSizes" in op.attributes:
                op.attributes[JAM_OP_ATTR] = ir.UnitAttr.get()
    done: set[tuple[int, int]] = set()
    for loop, factor in plan:  # one script per function and factor: it jams all loops tagged so
        func = _enclosing(loop, "func.func")
        if (_op_key(func), factor) in done:
            continue
        done.add((_op_key(func), factor))
        vec = _VECTORIZE_JAMMED.format(attr=JAM_OP_ATTR) if vectorize else ""
        script = ir.Module.parse(_JAM_SCRIPT.format(attr=JAM_ATTR, factor=factor, vectorize=vec))
        entry = next(op.operation for op in script.body.operations
                     if op.operation.name == "transform.named_sequence")
        try:
            interpreter.apply_named_sequence(func, entry, script)
        except (ValueError, ir.MLIRError) as exc:
            detail = diagnostics_text(exc) if isinstance(exc, ir.MLIRError) else str(exc)
            raise LoweringError(f"stage 'unroll-jam' failed (factor {factor}):\n{detail}") from None
    for op in _walk(module.operation):
        for attr in (JAM_ATTR, JAM_OP_ATTR):
            if attr in op.attributes:
                del op.attributes[attr]


def _peel(loop: ir.Operation, factor: int) -> ir.Operation:
    """The part of ``loop`` whose trip count is a multiple of ``factor`` (a clone placed
    before ``loop``, which keeps the remaining iterations), or ``loop`` itself."""
    trip = _trip_count(loop)
    if trip % factor == 0:
        return loop
    lb, step = _const(loop.operands[0]), _const(loop.operands[2])
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
    for red, acc in _reductions(module.operation):
        lanes = tgt.vector_lanes(_dtype_name(acc.type))
        acc_regs = math.ceil(_numel(acc.type) / lanes)
        if _numel(acc.type) < lanes or 2 * acc_regs + 1 > tgt.vector_registers:
            continue
        best = _best_loop(red, acc)
        if best is None:
            continue
        loop, trip, shared = best
        # registers: f accumulators, the shared loads once, one broadcast (Target.register_tile's model)
        free = tgt.vector_registers - math.ceil(shared / lanes) - 1
        factor = max(f for f in range(1, min(MAX_JAM, trip) + 1) if f == 1 or f * acc_regs <= free)
        if factor < 2:
            continue
        key = _op_key(loop)
        if key in chosen:
            factor = min(factor, chosen[key][1])
        chosen[key] = (loop, factor)
    loops = list(chosen.values())
    return [(lp, f) for lp, f in loops if not any(o is not lp and _inside(lp, o) for o, _ in loops)]


# -- the reductions and their candidate loops ---------------------------------------------

def _reductions(root: ir.Operation) -> Iterator[tuple[ir.Operation, ir.Value]]:
    """(reduction scf.for, accumulator memref) for each accumulating op directly in an scf.for."""
    for op in _walk(root):
        parent = op.parent
        if parent is None or parent.name != "scf.for":
            continue
        if op.name.startswith("linalg."):
            outs = _linalg_outs(op)
        elif op.name == "vector.transfer_write":
            outs = [op.operands[1]]
        else:
            continue
        for out in outs:
            if _is_static_memref(out.type) and not _inside_value(out, parent):
                yield parent, out


def _best_loop(red: ir.Operation, acc: ir.Value) -> tuple[ir.Operation, int, int] | None:
    """The enclosing parallel loop sharing most input elements of ``red``'s body, its trip count, those elements."""
    best, best_key = None, None
    depth = 0
    loop = red.parent
    while loop is not None and loop.name != "func.func":
        if loop.name == "scf.for":
            depth += 1
            trip = _trip_count(loop)
            if trip and trip > 1 and not loop.results and _inner_bounds_invariant(loop) \
                    and _is_parallel(loop):
                shared = _shared_elements(red, acc, loop)
                key = (shared, depth == 1)
                if shared > 0 and (best_key is None or key > best_key):
                    best, best_key = (loop, trip, shared), key
        loop = loop.parent
    return best


def _shared_elements(red: ir.Operation, acc: ir.Value, loop: ir.Operation) -> int:
    """Elements read in ``red``'s body from views that do not depend on ``loop``'s induction variable."""
    iv = _iv(loop)
    total = 0
    for op in _walk(red):
        if op is red:
            continue
        views = []
        if op.name.startswith("linalg."):
            views = [v for v in _linalg_ins(op) if isinstance(v.type, ir.MemRefType)]
        elif op.name in _READS:
            views = [op.operands[0]]
            shape = ir.VectorType(op.results[0].type).shape if op.name != "memref.load" else []
            if not _depends(op.operands[0], iv, loop) and not any(_depends(x, iv, loop) for x in op.operands[1:]):
                total += math.prod(shape)
            continue
        for v in views:
            if v != acc and _is_static_memref(v.type) and not _depends(v, iv, loop):
                total += _numel(v.type)
    return total


# -- legality: iterations touch disjoint slabs of every buffer they write -----------------

def _is_parallel(loop: ir.Operation) -> bool:
    """Whether distinct iterations of ``loop`` access disjoint parts of every buffer they write."""
    iv, step = _iv(loop), _const(loop.operands[2])
    if step is None:
        return False
    accesses: dict[int, list[tuple[ir.Value, list, list[int] | None]]] = {}
    written: set[int] = set()
    for op in _walk(loop):
        if op is loop or op.name == "memref.subview":
            continue
        for idx, operand in enumerate(op.operands):
            if not isinstance(operand.type, ir.MemRefType):
                continue
            base, offsets, sizes = _resolve(operand, loop)
            if base is None:
                return False
            if _inside_value(base, loop):
                continue  # allocated in the iteration: private
            kind = _access_kind(op, idx)
            if kind is None:
                return False
            if kind == "write":
                written.add(_value_key(base))
            offs, szs = _access_region(op, offsets, sizes)
            accesses.setdefault(_value_key(base), []).append((base, offs, szs))
    for key in written:
        if not _disjoint_slabs(accesses[key], iv, step, loop):
            return False
    return True


def _disjoint_slabs(accesses: list, iv: ir.Value, step: int, loop: ir.Operation) -> bool:
    rank = len(accesses[0][1])
    for dim in range(rank):
        forms = [_linear(offs[dim], iv, loop) for _, offs, _ in accesses]
        if any(f is None for f in forms):
            continue
        coefs = {f[0] for f in forms}
        if len(coefs) != 1 or next(iter(coefs)) < 1:
            continue
        a = next(iter(coefs))
        if all(szs is not None and 0 <= f[1] and f[1] + szs[dim] <= a * step
               for f, (_, _, szs) in zip(forms, accesses)):
            return True
    return False


def _resolve(value: ir.Value, loop: ir.Operation) -> tuple[ir.Value | None, list, list[int] | None]:
    """(root buffer, offsets per dim (ints, Values, sums), static sizes) of a view, through
    ``memref.subview`` chains to a function argument or an allocation; (None, [], None) when
    the view has another origin. A root allocated inside ``loop`` is private to an iteration."""
    shape = ir.MemRefType(value.type).shape
    sizes = [None if s < 0 else s for s in shape]
    if isinstance(value, ir.BlockArgument):
        if _opname(value.owner.owner) != "func.func":
            return None, [], None
        return value, [0] * len(shape), sizes
    owner = value.owner.operation
    if owner.name in ("memref.alloc", "memref.alloca"):
        return value, [0] * len(shape), sizes
    if owner.name != "memref.subview":
        return None, [], None
    src_base, src_offs, _ = _resolve(owner.operands[0], loop)
    if src_base is None or ir.MemRefType(owner.operands[0].type).rank != len(shape):
        return None, [], None
    n_off, n_size = _ndyn(owner, "static_offsets"), _ndyn(owner, "static_sizes")
    if any(s != 1 for s in _mixed(owner, "static_strides", 1 + n_off + n_size)):
        return None, [], None
    offs = _mixed(owner, "static_offsets", 1)
    return src_base, [_Sum(a, b) for a, b in zip(src_offs, offs)], sizes


class _Sum:
    """Two offsets added (subview chains)."""

    def __init__(self, a, b):
        self.a, self.b = a, b


def _access_region(op: ir.Operation, offsets: list, sizes: list[int] | None) -> tuple[list, list[int] | None]:
    """Offsets and sizes an op touches in its view: the whole view, or an indexed element/vector."""
    if op.name in ("memref.load", "memref.store", "vector.load", "vector.store",
                   "vector.transfer_read", "vector.transfer_write"):
        first = {"memref.load": 1, "memref.store": 2, "vector.load": 1, "vector.store": 2,
                 "vector.transfer_read": 1, "vector.transfer_write": 2}[op.name]
        rank = len(offsets)
        idx = list(op.operands[first:first + rank])
        if op.name.startswith("vector."):
            if "permutation_map" in op.attributes and not _minor_identity(op):
                return offsets, None
            vtype = op.results[0].type if op.name in ("vector.load", "vector.transfer_read") else op.operands[0].type
            vshape = list(ir.VectorType(vtype).shape)
        else:
            vshape = []
        ext = [1] * (rank - len(vshape)) + vshape
        return [_Sum(o, i) for o, i in zip(offsets, idx)], ext
    return offsets, sizes


def _minor_identity(op: ir.Operation) -> bool:
    amap = ir.AffineMapAttr(op.attributes["permutation_map"]).value
    results = list(amap.results)
    first = amap.n_dims - len(results)
    return all(isinstance(e, ir.AffineDimExpr) and e.position == first + i
               for i, e in enumerate(results))


def _access_kind(op: ir.Operation, idx: int) -> str | None:
    """``"read"`` / ``"write"`` for a memref operand; None for an op this analysis does not know."""
    if op.name.startswith("linalg."):
        n_ins = len(_linalg_ins(op))
        return "read" if idx < n_ins else "write"
    if op.name in _READS:
        return "read"
    if op.name in _WRITES:
        return "write"
    if op.name in ("memref.dealloc",):
        return "write"
    return None


# -- values: constants, linear forms in the induction variable, dependence ---------------

def _linear(value, iv: ir.Value, loop: ir.Operation) -> tuple[int, int] | None:
    """``value == a * iv + c`` with ints (a, c), or None."""
    if isinstance(value, int):
        return 0, value
    if isinstance(value, _Sum):
        x, y = _linear(value.a, iv, loop), _linear(value.b, iv, loop)
        return None if x is None or y is None else (x[0] + y[0], x[1] + y[1])
    if value == iv:
        return 1, 0
    c = _const(value)
    if c is not None:
        return 0, c
    if not isinstance(value, ir.OpResult):
        return None
    op = value.owner.operation
    if op.name in ("arith.addi", "arith.muli"):
        x, y = _linear(op.operands[0], iv, loop), _linear(op.operands[1], iv, loop)
        if x is None or y is None:
            return None
        if op.name == "arith.addi":
            return x[0] + y[0], x[1] + y[1]
        if x[0] and y[0]:
            return None
        return (x[0] * y[1] + y[0] * x[1], x[1] * y[1])
    if op.name == "affine.apply":
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        forms = [_linear(v, iv, loop) for v in op.operands]
        if any(f is None for f in forms) or len(amap.results) != 1:
            return None
        return _affine_linear(amap.results[0], forms, amap.n_dims)
    return None


def _affine_linear(expr, forms: list[tuple[int, int]], n_dims: int) -> tuple[int, int] | None:
    if isinstance(expr, ir.AffineConstantExpr):
        return 0, expr.value
    if isinstance(expr, ir.AffineDimExpr):
        return forms[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return forms[n_dims + expr.position]
    if isinstance(expr, ir.AffineAddExpr):
        e = expr
        x, y = _affine_linear(e.lhs, forms, n_dims), _affine_linear(e.rhs, forms, n_dims)
        return None if x is None or y is None else (x[0] + y[0], x[1] + y[1])
    if isinstance(expr, ir.AffineMulExpr):
        e = expr
        x, y = _affine_linear(e.lhs, forms, n_dims), _affine_linear(e.rhs, forms, n_dims)
        if x is None or y is None or (x[0] and y[0]):
            return None
        return x[0] * y[1] + y[0] * x[1], x[1] * y[1]
    return None


def _depends(value: ir.Value, iv: ir.Value, loop: ir.Operation, seen: set | None = None) -> bool:
    """Whether ``value`` is computed from ``iv`` (inner loops' induction variables do not count)."""
    if value == iv:
        return True
    if not isinstance(value, ir.OpResult) or not _inside(value.owner, loop):
        return False
    seen = set() if seen is None else seen
    key = _op_key(value.owner)
    if key in seen:
        return False
    seen.add(key)
    return any(_depends(v, iv, loop, seen) for v in value.owner.operands)


def _const(value) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, ir.OpResult) and _opname(value.owner) == "arith.constant":
        attr = value.owner.attributes["value"]
        if isinstance(attr.type, (ir.IndexType, ir.IntegerType)):
            return ir.IntegerAttr(attr).value
    return None


def _trip_count(loop: ir.Operation) -> int | None:
    lb, ub, step = (_const(v) for v in loop.operands[:3])
    if lb is None or ub is None or not step or step < 0:
        return None
    return max(0, -(-(ub - lb) // step))


def _inner_bounds_invariant(loop: ir.Operation) -> bool:
    for op in _walk(loop):
        if op is not loop and op.name in ("scf.for", "scf.forall", "scf.parallel", "scf.while"):
            if op.name != "scf.for" or any(_inside_value(v, loop) for v in op.operands[:3]):
                return False
    return True


# -- small IR helpers ----------------------------------------------------------------------

def _walk(root: ir.Operation) -> Iterator[ir.Operation]:
    ops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        ops.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return iter(ops)


def _opname(op) -> str:
    """The op's name (an OpView's ``.name`` may be an attribute, e.g. func.func's symbol)."""
    return (op.operation if hasattr(op, "operation") else op).name


def _op_key(op) -> int:
    return hash(op.operation if hasattr(op, "operation") else op)


def _value_key(v: ir.Value) -> int:
    return hash(v)


def _iv(loop: ir.Operation) -> ir.Value:
    return loop.regions[0].blocks[0].arguments[0]


def _inside(op, ancestor: ir.Operation) -> bool:
    """Whether ``op`` is ``ancestor`` or nested in it."""
    cur = op.operation if hasattr(op, "operation") else op
    target = ancestor.operation if hasattr(ancestor, "operation") else ancestor
    while cur is not None:
        if cur == target:
            return True
        cur = cur.parent
    return False


def _inside_value(value: ir.Value, loop: ir.Operation) -> bool:
    """Whether ``value`` is defined inside ``loop`` (its body's arguments included)."""
    if isinstance(value, ir.OpResult):
        return _inside(value.owner, loop) and value.owner != loop
    owner = ir.BlockArgument(value).owner.owner
    return _inside(owner, loop)


def _enclosing(op: ir.Operation, name: str) -> ir.Operation:
    cur = op
    while cur is not None and cur.name != name:
        cur = cur.parent
    if cur is None:
        raise LoweringError(f"stage 'unroll-jam': loop outside any {name}")
    return cur


def _segments(op: ir.Operation) -> tuple[int, int]:
    if "operandSegmentSizes" not in op.attributes:  # linalg.yield, linalg.index
        return len(op.operands), 0
    seg = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
    return seg[0], seg[1]


def _linalg_ins(op: ir.Operation) -> list[ir.Value]:
    n_ins, _ = _segments(op)
    return list(op.operands[:n_ins])


def _linalg_outs(op: ir.Operation) -> list[ir.Value]:
    n_ins, n_outs = _segments(op)
    return list(op.operands[n_ins:n_ins + n_outs])


def _ndyn(op: ir.Operation, attr: str) -> int:
    return sum(1 for s in ir.DenseI64ArrayAttr(op.attributes[attr]) if s == ir.ShapedType.get_dynamic_size())


def _mixed(op: ir.Operation, attr: str, first_dyn: int) -> list:
    """A subview's static/dynamic list (ints and Values) for ``static_offsets`` etc."""
    dyn = first_dyn
    out: list = []
    for s in ir.DenseI64ArrayAttr(op.attributes[attr]):
        if s == ir.ShapedType.get_dynamic_size():
            out.append(op.operands[dyn])
            dyn += 1
        else:
            out.append(s)
    return out


def _is_static_memref(t: ir.Type) -> bool:
    return isinstance(t, ir.MemRefType) and ir.MemRefType(t).has_static_shape


def _numel(t: ir.Type) -> int:
    return math.prod(ir.ShapedType(t).shape)


def _dtype_name(t: ir.Type) -> str:
    return str(ir.ShapedType(t).element_type)
