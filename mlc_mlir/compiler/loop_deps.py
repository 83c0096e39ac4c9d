"""Dependence facts about ``scf.for`` loops on buffers, for the ``unroll-jam`` stage.

:func:`is_parallel` proves that distinct iterations of a loop touch disjoint parts of every
buffer the loop writes: each such buffer (a function argument or an allocation, reached
through ``memref.subview`` chains) is accessed only through slabs
``[a * iv + c, a * iv + c + size)`` along one dimension with ``0 <= c`` and
``c + size <= a * step``; indices are followed through ``arith.addi`` / ``arith.muli`` and
``affine.apply``; buffers allocated inside an iteration are private; any op this analysis
does not know (a call, a cast of a written buffer) makes the answer "not proven".
The rest are small IR helpers (constants, trip counts, nesting, linalg operands).
"""

from __future__ import annotations

import ctypes

import math
from collections.abc import Iterator

from mlir import ir

from ..errors import LoweringError

__all__ = ["is_parallel", "depends", "trip_count", "inner_bounds_invariant", "const", "walk", "op_key", "induction_var",
           "inside", "inside_value", "enclosing", "linalg_ins", "linalg_outs", "is_static_memref", "numel",
           "dtype_name"]

_READS = ("memref.load", "vector.transfer_read", "vector.load")
_WRITES = ("memref.store", "vector.transfer_write", "vector.store")


# -- legality: iterations touch disjoint slabs of every buffer they write -----------------

def is_parallel(loop: ir.Operation) -> bool:
    """Whether distinct iterations of ``loop`` access disjoint parts of every buffer they write."""
    iv, step = induction_var(loop), const(loop.operands[2])
    if step is None:
        return False
    accesses: dict[int, list[tuple[ir.Value, list, list[int] | None]]] = {}
    written: set[int] = set()
    for op in walk(loop):
        if op is loop or op.name == "memref.subview":
            continue
        for idx, operand in enumerate(op.operands):
            if not isinstance(operand.type, ir.MemRefType):
                continue
            base, offsets, sizes = _resolve(operand, loop)
            if base is None:
                return False
            if inside_value(base, loop):
                continue  # allocated in the iteration: private
            kind = _access_kind(op, idx)
            if kind is None:
                return False
            if kind == "write":
                if isinstance(base, ir.OpResult) and _opname(base.owner) == "memref.get_global":
                    return False  # another get_global of the same global would alias it
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
    ``memref.subview`` chains to a function argument, an allocation or a global; (None, [], None) when
    the view has another origin. A root allocated inside ``loop`` is private to an iteration."""
    shape = ir.MemRefType(value.type).shape
    sizes = [None if s < 0 else s for s in shape]
    if isinstance(value, ir.BlockArgument):
        if _opname(value.owner.owner) != "func.func":
            return None, [], None
        return value, [0] * len(shape), sizes
    owner = value.owner.operation
    if owner.name in ("memref.alloc", "memref.alloca", "memref.get_global"):
        # (a global: the graph's constant weights once a tensor program is inlined into the
        # graph's function; is_parallel refuses a loop that writes one)
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
        n_ins = len(linalg_ins(op))
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
    c = const(value)
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


def depends(value: ir.Value, iv: ir.Value, loop: ir.Operation, seen: set | None = None) -> bool:
    """Whether ``value`` is computed from ``iv`` (inner loops' induction variables do not count)."""
    if value == iv:
        return True
    if not isinstance(value, ir.OpResult) or not inside(value.owner, loop):
        return False
    seen = set() if seen is None else seen
    key = op_key(value.owner)
    if key in seen:
        return False
    seen.add(key)
    return any(depends(v, iv, loop, seen) for v in value.owner.operands)


def const(value) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, ir.OpResult) and _opname(value.owner) == "arith.constant":
        attr = value.owner.attributes["value"]
        if isinstance(attr.type, (ir.IndexType, ir.IntegerType)):
            return ir.IntegerAttr(attr).value
    return None


def trip_count(loop: ir.Operation) -> int | None:
    lb, ub, step = (const(v) for v in loop.operands[:3])
    if lb is None or ub is None or not step or step < 0:
        return None
    return max(0, -(-(ub - lb) // step))


def inner_bounds_invariant(loop: ir.Operation) -> bool:
    for op in walk(loop):
        if op is not loop and op.name in ("scf.for", "scf.forall", "scf.parallel", "scf.while"):
            if op.name != "scf.for" or any(inside_value(v, loop) for v in op.operands[:3]):
                return False
    return True


# -- small IR helpers ----------------------------------------------------------------------

def walk(root: ir.Operation) -> Iterator[ir.Operation]:
    ops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        ops.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return iter(ops)


def _opname(op) -> str:
    """The op's name (an OpView's ``.name`` may be an attribute, e.g. func.func's symbol)."""
    return (op.operation if hasattr(op, "operation") else op).name


_CAPSULE_POINTER = ctypes.pythonapi.PyCapsule_GetPointer
_CAPSULE_POINTER.restype = ctypes.c_void_p
_CAPSULE_POINTER.argtypes = [ctypes.py_object, ctypes.c_char_p]


def op_key(op) -> int:
    """A key unique to the operation while it lives: its C++ address. (``hash(op)`` is not:
    the two copies of a loop that ``transform.loop.peel`` makes hashed equal, so the
    peeled remainder's reduction was taken for the main one's and never jammed.)"""
    op = op.operation if hasattr(op, "operation") else op
    return _CAPSULE_POINTER(op._CAPIPtr, b"mlir.ir.Operation._CAPIPtr")


def _value_key(v: ir.Value) -> int:
    """A key unique to the value (its C API handle), for the same reason as :func:`op_key`."""
    return _CAPSULE_POINTER(v._CAPIPtr, b"mlir.ir.Value._CAPIPtr")


def induction_var(loop: ir.Operation) -> ir.Value:
    return loop.regions[0].blocks[0].arguments[0]


def inside(op, ancestor: ir.Operation) -> bool:
    """Whether ``op`` is ``ancestor`` or nested in it."""
    cur = op.operation if hasattr(op, "operation") else op
    target = ancestor.operation if hasattr(ancestor, "operation") else ancestor
    while cur is not None:
        if cur == target:
            return True
        cur = cur.parent
    return False


def inside_value(value: ir.Value, loop: ir.Operation) -> bool:
    """Whether ``value`` is defined inside ``loop`` (its body's arguments included)."""
    if isinstance(value, ir.OpResult):
        return inside(value.owner, loop) and value.owner != loop
    owner = ir.BlockArgument(value).owner.owner
    return inside(owner, loop)


def enclosing(op: ir.Operation, name: str) -> ir.Operation:
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


def linalg_ins(op: ir.Operation) -> list[ir.Value]:
    n_ins, _ = _segments(op)
    return list(op.operands[:n_ins])


def linalg_outs(op: ir.Operation) -> list[ir.Value]:
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


def is_static_memref(t: ir.Type) -> bool:
    return isinstance(t, ir.MemRefType) and ir.MemRefType(t).has_static_shape


def numel(t: ir.Type) -> int:
    return math.prod(ir.ShapedType(t).shape)


def dtype_name(t: ir.Type) -> str:
    return str(ir.ShapedType(t).element_type)
