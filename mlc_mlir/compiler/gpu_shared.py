"""``cache_read(..., "shared")`` copies -> workgroup (shared) memory, fetched by the whole
thread block, with the barriers they need.

As in TVM, a cache in ``"shared"`` scope covers the region that *all threads of a block*
read: the thread-bound loops around the copy are relaxed. The schedule places the copy
at a loop inside the thread loops (``compute_at(A_shared, k0)``), so after bufferization
each thread copies its own tile::

    scf.forall (%ty, %tx) in (8, 8) {                       // threads
      scf.for %k0 ... {
        %a = memref.subview %A[%by * 64 + %ty * 8, %k0] [8, 8] [1, 1]
        %t = memref.alloc() : memref<8x8xf32>
        linalg.copy {mlc.scope = "shared"} ins(%a) outs(%t)
        ... reads %t ...

This stage computes the union of those tiles over the thread indices (``ty * 8`` for ty
in [0, 8) gives rows [0, 64)), allocates it once per block in workgroup memory
(``memref.global`` in ``#gpu.address_space<workgroup>``, PTX ``.shared``), and rewrites
the copy into a cooperative fetch followed by the per-thread view::

        gpu.barrier                                          // readers of the last tile are done
        scf.for %e = %tid to %c512 step %nthreads {          // all threads share the copy
          memref.store (memref.load %A[%by * 64 + %e / 8, %k0 + %e mod 8]), %S[%e / 8, %e mod 8]
        }
        gpu.barrier                                          // the tile is complete
        %t = memref.subview %S[%ty * 8, 0] [8, 8] [1, 1]     // this thread's part
        ... reads %t ...

The threads of the block must all reach the copy (barriers in divergent code are
undefined behaviour). A partial thread tile (1000 elements on 128 threads) guards its
body by ``scf.if`` (:mod:`.gpu_mapping`); as in TVM the compute stays guarded and the copy
is lifted out of the guard (pushed into the loops between them), and its fetch loads only
the elements that lie inside the source (the idle threads past the tile widen the region
beyond it)::

        gpu.barrier
        scf.for %e = %tid to %c130 step %c128 {
          scf.if (%base + %e < 1002) { memref.store (memref.load %A[%base + %e]), %S[%e] }
        }
        gpu.barrier
        scf.if (%tid < %valid) { ... reads %S ... }      // the partial tile's guard

Offsets must be sums of a part that depends on the thread indices only and a part that
does not.
"""

from __future__ import annotations

import itertools
import math

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf
from mlir.dialects import vector as vector_dialect

from ..irutil import sym_name, symbol_ops
from ..errors import BuildError
from .gpu_guards import is_thread_forall, lift_out_of_guards
from .gpu_mapping import GUARD_ATTR

__all__ = ["promote_shared_copies", "emulate_shared_copies", "drop_host_shared_globals", "SHARED_SPACE"]

SHARED_SPACE = "#gpu.address_space<workgroup>"
_MAX_ENUMERATION = 1 << 16


def _collect_shared_copies(root: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if (op.name == "linalg.copy" and "mlc.scope" in op.attributes
                and ir.StringAttr(op.attributes["mlc.scope"]).value == "shared"):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _block_name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["mlc.block"]).value if "mlc.block" in op.attributes else "<copy>"


def _thread_ivs(copy: ir.Operation, root: ir.Operation, counts_of) -> tuple[dict[ir.Value, int], bool]:
    """The induction variables of the thread foralls around ``copy`` -> trip counts (a
    partial tile's full count), and whether a thread tile around it is partial (a forall
    with a dynamic bound, or a guard of the GPU mapping: the fetch must check its bounds)."""
    ivs: dict = {}
    partial = False
    parent = copy.parent
    while parent is not None and parent.operation != root:
        op = parent.operation
        if op.name == "scf.if" and GUARD_ATTR not in op.attributes:
            raise BuildError(f"shared copy {_block_name(copy)!r} sits under a condition (a partial loop tile "
                             "or a guarded read): every thread of the block must reach its barriers; use tile "
                             "sizes that divide the extents")
        if is_thread_forall(op):
            lbs = list(ir.DenseI64ArrayAttr(op.attributes["staticLowerBound"]))
            steps = list(ir.DenseI64ArrayAttr(op.attributes["staticStep"]))
            if any(lb != 0 for lb in lbs) or any(st != 1 for st in steps):
                raise BuildError(f"shared copy {_block_name(copy)!r}: its thread loop is not normalized")
            ubs = list(ir.DenseI64ArrayAttr(op.attributes["staticUpperBound"]))
            partial |= ir.ShapedType.get_dynamic_size() in ubs
            for arg, count in zip(op.regions[0].blocks[0].arguments, counts_of(op)):
                ivs[arg] = count
        parent = parent.parent
    return ivs, partial


def _terms(expr: ir.AffineExpr) -> list[ir.AffineExpr]:
    expr = expr.maybe_downcast()
    if isinstance(expr, ir.AffineAddExpr):
        return _terms(expr.lhs) + _terms(expr.rhs)
    return [expr]


def _positions(expr: ir.AffineExpr, n_dims: int) -> set[int]:
    """Operand positions (dims, then symbols after ``n_dims``) that ``expr`` uses."""
    expr = expr.maybe_downcast()
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position}
    if isinstance(expr, ir.AffineSymbolExpr):
        return {n_dims + expr.position}
    if isinstance(expr, ir.AffineBinaryExpr):
        return _positions(expr.lhs, n_dims) | _positions(expr.rhs, n_dims)
    return set()


def _evaluate(expr: ir.AffineExpr, values: list[int], n_dims: int) -> int:
    expr = expr.maybe_downcast()
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value
    if isinstance(expr, ir.AffineDimExpr):
        return values[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return values[n_dims + expr.position]
    a, b = _evaluate(expr.lhs, values, n_dims), _evaluate(expr.rhs, values, n_dims)
    if isinstance(expr, ir.AffineAddExpr):
        return a + b
    if isinstance(expr, ir.AffineMulExpr):
        return a * b
    if isinstance(expr, ir.AffineModExpr):
        return a % b
    if isinstance(expr, ir.AffineFloorDivExpr):
        return a // b
    return -(-a // b)  # ceildiv


class _Offset:
    """One offset of a per-thread tile: ``rest + const + thread_part``, the thread part in
    ``[lo, hi]``; ``key`` identifies ``rest`` (its terms and operands) to compare tiles."""

    def __init__(self, lo: int, hi: int, const: int, key: tuple, build_rest):
        self.lo, self.hi, self.const, self.key, self.build_rest = lo, hi, const, key, build_rest

    def shifted(self, const: int) -> _Offset:
        return _Offset(self.lo, self.hi, self.const + const, self.key, self.build_rest)


def _same_key(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and len(a[1]) == len(b[1]) and all(x == y for x, y in zip(a[1], b[1]))


def _split_offset(value: ir.Value | int, ivs: dict, name: str) -> _Offset:
    if isinstance(value, int):
        return _Offset(0, 0, value, ((), ()), lambda: None)
    if value in ivs:
        return _Offset(0, ivs[value] - 1, 0, ((), ()), lambda: None)
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "affine.apply":
        return _Offset(0, 0, 0, (("value",), (value,)), lambda: value)
    op = owner.operation
    amap = ir.AffineMapAttr(op.attributes["map"]).value
    operands = list(op.operands)
    thread_pos = {i for i, v in enumerate(operands) if v in ivs}
    n_dims = amap.n_dims
    thread_terms, rest_terms, const = [], [], 0
    for term in _terms(amap.results[0]):
        used = _positions(term, n_dims)
        if isinstance(term, ir.AffineConstantExpr):
            const += term.value
        elif used and used <= thread_pos:
            thread_terms.append(term)
        elif used & thread_pos:
            raise BuildError(f"shared copy {name!r}: offset {amap} mixes thread indices with other "
                             "values in one term; its region over the thread block cannot be computed")
        else:
            rest_terms.append(term)
    order = sorted(thread_pos)
    ranges = [range(ivs[operands[i]]) for i in order]
    if math.prod(len(r) for r in ranges) > _MAX_ENUMERATION:
        raise BuildError(f"shared copy {name!r}: too many thread indices to relax its region")
    values = [0] * len(operands)
    seen = []
    for combo in itertools.product(*ranges):
        for i, v in zip(order, combo):
            values[i] = v
        seen.append(sum(_evaluate(t, values, n_dims) for t in thread_terms))

    def build_rest() -> ir.Value | None:
        if not rest_terms:
            return None
        expr = rest_terms[0]
        for t in rest_terms[1:]:
            expr = expr + t
        from mlir.dialects import affine

        return affine.AffineApplyOp(ir.AffineMap.get(n_dims, amap.n_symbols, [expr]), operands).result

    key = (tuple(str(t) for t in rest_terms), tuple(operands) if rest_terms else ())
    return _Offset(min(seen), max(seen), const, key, build_rest)


def _index(v: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), v).result


def _as_value(v: ir.Value | int) -> ir.Value:
    return _index(v) if isinstance(v, int) else v


def _unit_subview(value: ir.Value) -> ir.Operation | None:
    """The rank-preserving, unit-stride, static-size ``memref.subview`` defining ``value``."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "memref.subview":
        return None
    op = owner.operation
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    if (any(st != 1 for st in strides) or ir.ShapedType.get_dynamic_size() in sizes
            or len(sizes) != ir.MemRefType(op.operands[0].type).rank):
        return None
    return op


def _root_tile(src: ir.Value, name: str) -> tuple[ir.Value, list[tuple], list[int]]:
    """``(base, [(offset, extra constant)], sizes)`` of a copy's source tile: a unit-stride
    subview (of subviews with static offsets, folded into the constants), or a whole buffer."""
    mtype = ir.MemRefType(src.type)
    op = _unit_subview(src)
    if op is None:
        if not isinstance(src.owner, ir.Block) and src.owner.operation.name == "memref.subview":
            raise BuildError(f"shared copy {name!r}: its source must be a static, unit-stride tile")
        return src, [(0, 0)] * mtype.rank, list(mtype.shape)
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    static = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    dyn = iter(list(op.operands)[1:])
    offsets = [next(dyn) if o == dynamic else o for o in static]
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    extra = [0] * len(offsets)
    base = op.operands[0]
    while (outer := _unit_subview(base)) is not None:
        outer_offsets = list(ir.DenseI64ArrayAttr(outer.attributes["static_offsets"]))
        if dynamic in outer_offsets:
            break
        extra = [e + o for e, o in zip(extra, outer_offsets)]
        base = outer.operands[0]
    return base, list(zip(offsets, extra)), sizes


def _rooted(value: ir.Value, base: ir.Value) -> bool:
    while True:
        if value == base:
            return True
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.operation.name != "memref.subview":
            return False
        value = owner.operation.operands[0]


def _read_only(base: ir.Value, kernel: ir.Operation) -> bool:
    """No op of ``kernel`` writes into ``base`` (or a view of it)."""
    written = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        targets = []
        if op.name.startswith("linalg.") and "operandSegmentSizes" in op.attributes:
            n_in = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]
            targets = list(op.operands)[n_in:]
        elif op.name in ("memref.store", "vector.store", "vector.transfer_write"):
            targets = [op.operands[1]]
        elif op.name == "memref.copy":
            targets = [op.operands[1]]
        if any(_rooted(t, base) for t in targets):
            written.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    kernel.walk(visit, ir.WalkOrder.PRE_ORDER)
    return not written


def _readers(tile: ir.Value) -> list[ir.Operation]:
    """The linalg ops reading ``tile`` (through views)."""
    found = []
    for use in tile.uses:
        user = use.owner
        if user.name == "memref.subview":
            found += _readers(user.results[0])
        elif user.name.startswith("linalg.") and "mlc.block" in user.attributes:
            found.append(user)
    return found


def _follows(first: ir.Operation, second: ir.Operation) -> bool:
    """``second`` comes after ``first``: later in its block, or inside an op that is (a read
    that a partial tile's guard holds, after the copy was lifted out of it)."""
    op = second
    while True:
        if op.block == first.block:
            return first.is_before_in_block(op)
        parent = op.parent
        if parent is None or parent.name in ("func.func", "builtin.module"):
            return False
        op = parent.operation


def _retype_views(value: ir.Value, space: ir.Attribute) -> None:
    """Subviews of a buffer that moved to shared memory: strided layout, same space."""
    for use in list(value.uses):
        user = use.owner
        if user.name != "memref.subview" or use.operand_number != 0:
            continue
        old = ir.MemRefType(user.results[0].type)
        src = ir.MemRefType(value.type)
        strides, _ = src.get_strides_and_offset()
        sub_strides = list(ir.DenseI64ArrayAttr(user.attributes["static_strides"]))
        if len(sub_strides) != len(strides) or old.rank != src.rank:
            raise BuildError("a rank-reducing view of a shared-memory tile is not supported")
        layout = ir.StridedLayoutAttr.get(ir.ShapedType.get_dynamic_stride_or_offset(),
                                          [a * b for a, b in zip(strides, sub_strides)])
        user.results[0].set_type(ir.MemRefType.get(old.shape, old.element_type, layout, space))
        _retype_views(user.results[0], space)


def _global(module: ir.Module, shape: list[int], elem: ir.Type, space: ir.Attribute, index: int) -> str:
    name = f"__mlc_shared_{index}"
    with ir.InsertionPoint.at_block_begin(module.body):
        memref.GlobalOp(sym_name=name, type_=ir.MemRefType.get(shape, elem, None, space),
                        sym_visibility="private", initial_value=ir.UnitAttr.get(), alignment=16)
    return name


def _linear_thread_id(block: tuple[int, int, int]) -> ir.Value:
    dims = [gpu.ThreadIdOp(gpu.Dimension.x).result, gpu.ThreadIdOp(gpu.Dimension.y).result,
            gpu.ThreadIdOp(gpu.Dimension.z).result]
    tid = dims[0]
    if block[1] > 1 or block[2] > 1:
        tid = arith.AddIOp(tid, arith.MulIOp(dims[1], _index(block[0])).result).result
    if block[2] > 1:
        tid = arith.AddIOp(tid, arith.MulIOp(dims[2], _index(block[0] * block[1])).result).result
    return tid


def _fetch(base: ir.Value, src_idx: list, shared: ir.Value, idx: list, vector: int, elem: ir.Type) -> None:
    if vector > 1:
        vtype = ir.VectorType.get([vector], elem)
        vector_dialect.StoreOp(vector_dialect.LoadOp(vtype, base, src_idx).result, shared, idx)
    else:
        memref.StoreOp(memref.LoadOp(base, src_idx).result, shared, idx)


def _inside(src_idx: list, bounds: list, last: int = 0) -> ir.Value:
    """``src_idx`` (its last index plus ``last``) lies inside ``bounds``."""
    inside = None
    for d, (i, n) in enumerate(zip(src_idx, bounds)):
        if d == len(src_idx) - 1 and last:
            i = arith.AddIOp(i, _index(last)).result
        lt = arith.CmpIOp(arith.CmpIPredicate.ult, i, n).result
        inside = lt if inside is None else arith.AndIOp(inside, lt).result
    return inside


def _guarded_fetch(base: ir.Value, src_idx: list, shared: ir.Value, idx: list, vector: int, elem: ir.Type,
                   bounds: list) -> None:
    """A chunk wholly inside ``base`` as one vector; else each of its elements that is inside."""
    if vector == 1:
        fetch = scf.IfOp(_inside(src_idx, bounds))
        with ir.InsertionPoint(fetch.then_block):
            _fetch(base, src_idx, shared, idx, 1, elem)
            scf.YieldOp([])
        return
    whole = scf.IfOp(_inside(src_idx, bounds, vector - 1), has_else=True)
    with ir.InsertionPoint(whole.then_block):
        _fetch(base, src_idx, shared, idx, vector, elem)
        scf.YieldOp([])
    with ir.InsertionPoint(whole.else_block):
        for lane in range(vector):
            lane_src = src_idx[:-1] + [arith.AddIOp(src_idx[-1], _index(lane)).result]
            lane_dst = idx[:-1] + [arith.AddIOp(idx[-1], _index(lane)).result]
            one = scf.IfOp(_inside(lane_src, bounds))
            with ir.InsertionPoint(one.then_block):
                _fetch(base, lane_src, shared, lane_dst, 1, elem)
                scf.YieldOp([])
        scf.YieldOp([])


def _cooperative_copy(base: ir.Value, offsets: list[ir.Value], shared: ir.Value, shape: list[int],
                      block: tuple[int, int, int] | None, vector: int, guarded: bool = False) -> None:
    """All threads of the block copy ``base[offsets + idx]`` into ``shared[idx]``: chunk ``c``
    (``vector`` consecutive elements of the innermost dim) by thread ``c mod nthreads``;
    barriers before and after. ``block=None``: one thread copies everything, no barriers
    (the CPU emulation). ``guarded``: the region may run past ``base`` (the threads past a
    partial tile widen it), so each chunk is fetched only where it lies inside ``base``
    (a chunk across the end of a row element by element)."""
    bounds = None
    if guarded:
        btype = ir.MemRefType(base.type)
        bounds = [_index(n) if n != ir.ShapedType.get_dynamic_size() else memref.DimOp(base, _index(d)).result
                  for d, n in enumerate(btype.shape)]
    if block is not None:
        gpu.BarrierOp()
    total = math.prod(shape) // vector
    start, step = (_linear_thread_id(block), math.prod(block)) if block is not None else (_index(0), 1)
    loop = scf.ForOp(start, _index(total), _index(step))
    with ir.InsertionPoint(loop.body):
        rest, idx = loop.induction_variable, []
        for d, size in reversed(list(enumerate(shape))):
            size = size // vector if d == len(shape) - 1 else size
            idx.insert(0, arith.RemUIOp(rest, _index(size)).result)
            rest = arith.DivUIOp(rest, _index(size)).result
        if vector > 1:
            idx[-1] = arith.MulIOp(idx[-1], _index(vector)).result
        src_idx = [arith.AddIOp(o, i).result for o, i in zip(offsets, idx)]
        elem = ir.MemRefType(shared.type).element_type
        if bounds is None:
            _fetch(base, src_idx, shared, idx, vector, elem)
        else:
            _guarded_fetch(base, src_idx, shared, idx, vector, elem, bounds)
        scf.YieldOp([])
    if block is not None:
        gpu.BarrierOp()


def _members(copy: ir.Operation, dst: ir.Value, base: ir.Value, parts: list[_Offset], ivs: dict,
             kernel: ir.Operation, name: str) -> list[tuple[ir.Operation, list[_Offset], list[int]]]:
    """Other reads of the cached tensor by the copy's readers (TVM's ``cache_read`` caches a
    tensor, not one operand: the window sum reads ``A[i]``, ``A[i+1]``, ``A[i+2]``): per-thread
    views of ``base`` whose offsets differ from the copy's by constants and thread terms only."""
    if isinstance(base.owner, ir.Block) is False or not _read_only(base, kernel):
        return []
    members = []
    for reader in _readers(dst):
        n_in = list(ir.DenseI32ArrayAttr(reader.attributes["operandSegmentSizes"]))[0]
        for value in list(reader.operands)[:n_in]:
            op = _unit_subview(value)
            if op is None or not _rooted(value, base) or not _follows(copy, op):
                continue
            root, offsets, sizes = _root_tile(value, name)
            if root != base:
                continue
            mparts = [_split_offset(o, ivs, name).shifted(extra) for o, extra in offsets]
            if all(_same_key(m.key, p.key) for m, p in zip(mparts, parts)):
                members.append((op, mparts, sizes))
    return members


def _view(shared: ir.Value, offsets: list[ir.Value], sizes: list[int], shape: list[int],
          space: ir.Attribute | None) -> ir.Value:
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    elem = ir.MemRefType(shared.type).element_type
    layout = ir.StridedLayoutAttr.get(dynamic, [math.prod(shape[d + 1:]) for d in range(len(shape))])
    return memref.SubViewOp(ir.MemRefType.get(sizes, elem, layout, space), shared, offsets, [], [],
                            ir.DenseI64ArrayAttr.get([dynamic] * len(sizes)), ir.DenseI64ArrayAttr.get(sizes),
                            ir.DenseI64ArrayAttr.get([1] * len(sizes))).result


def _absolute(offset: ir.Value | int, extra: int) -> ir.Value:
    value = _as_value(offset)
    return value if extra == 0 else arith.AddIOp(value, _index(extra)).result


def _promote(module: ir.Module, copy: ir.Operation, root: ir.Operation, block: tuple[int, int, int] | None,
             counts_of, index: int) -> None:
    """Rewrite one shared copy; ``block=None`` is the sequential CPU emulation (one buffer
    of the block-wide region, filled by each thread alone before it reads its part)."""
    name = _block_name(copy)
    src, dst = copy.operands[0], copy.operands[1]
    alloc = dst.owner
    if isinstance(alloc, ir.Block) or alloc.operation.name not in ("memref.alloc", "memref.alloca"):
        raise BuildError(f"shared copy {name!r} does not write a buffer of its own")
    dtype = ir.MemRefType(dst.type)
    if not dtype.has_static_shape:
        raise BuildError(f"shared copy {name!r}: its tile {dtype} has a dynamic shape; shared memory needs "
                         "static tiles (split by factors that divide the extents)")
    base, offsets, sizes = _root_tile(src, name)
    ivs, partial = _thread_ivs(copy, root, counts_of)
    partial = lift_out_of_guards(copy, ivs, _block_name(copy)) or partial
    parts = [_split_offset(o, ivs, name).shifted(extra) for o, extra in offsets]
    members = _members(copy, dst, base, parts, ivs, root, name)
    tiles = [(parts, sizes)] + [(mp, ms) for _, mp, ms in members]
    start = [min(p[d].const + p[d].lo for p, _ in tiles) for d in range(len(sizes))]
    end = [max(p[d].const + p[d].hi + sz[d] for p, sz in tiles) for d in range(len(sizes))]
    shape = [e - b for b, e in zip(start, end)]
    space = ir.Attribute.parse(SHARED_SPACE) if block is not None else None
    with ir.InsertionPoint(copy), copy.location:
        if block is not None:
            sym = _global(module, shape, dtype.element_type, space, index)
            shared = memref.GetGlobalOp(ir.MemRefType.get(shape, dtype.element_type, None, space), sym).result
        else:  # one buffer for the whole (sequential) emulation, at the function's entry
            with ir.InsertionPoint.at_block_begin(root.regions[0].blocks[0]):
                shared = memref.AllocaOp(ir.MemRefType.get(shape, dtype.element_type), [], []).result
        region = []
        for p, first in zip(parts, start):
            rest = p.build_rest()
            region.append(_index(first) if rest is None else arith.AddIOp(rest, _index(first)).result)
        vector = ir.IntegerAttr(copy.attributes["mlc.vector"]).value if "mlc.vector" in copy.attributes else 1
        if shape[-1] % vector:
            vector = 1  # the tile's rows are not whole vectors: scalar fetch
        _cooperative_copy(base, region, shared, shape, block, vector, guarded=partial)
        local = [arith.SubIOp(_absolute(o, extra), r).result for (o, extra), r in zip(offsets, region)]
        view = _view(shared, local, sizes, shape, space)
    copy.erase()
    for use in list(dst.uses):
        if use.owner.name == "memref.dealloc":
            use.owner.erase()
    dst.replace_all_uses_with(view)
    alloc.operation.erase()
    _retype_views(view, space)
    for op, _, msizes in members:
        _, moffsets, _ = _root_tile(op.results[0], name)
        with ir.InsertionPoint(op), op.location:
            mlocal = [arith.SubIOp(_absolute(o, extra), r).result for (o, extra), r in zip(moffsets, region)]
            mview = _view(shared, mlocal, msizes, shape, space)
        op.results[0].replace_all_uses_with(mview)
        op.erase()
        _retype_views(mview, space)


def promote_shared_copies(module: ir.Module, kernels: list, counts_of) -> int:
    """Rewrite every ``"shared"`` cache copy of ``kernels`` (see the module docstring).

    ``counts_of(forall)`` gives a thread forall's trip counts. Returns how many copies
    were promoted.

    Raises:
        BuildError: a shared copy whose block-wide region cannot be computed, under a
            condition, or with a dynamic tile.
    """
    count = 0
    for kernel in kernels:
        for copy in _collect_shared_copies(kernel.forall):
            _promote(module, copy, kernel.forall, kernel.block, counts_of, count)
            count += 1
    return count


def emulate_shared_copies(module: ir.Module, counts_of) -> int:
    """The CPU emulation of :func:`promote_shared_copies` (tests without a GPU): the same
    region relaxation and views, but each thread copies the whole block-wide region into
    one buffer before using it (no barriers, no distribution): valid for a sequential
    build only. Returns how many copies were rewritten."""
    count = 0
    for fn in symbol_ops(module).values():
        for copy in _collect_shared_copies(fn):
            _promote(module, copy, fn, None, counts_of, count)
            count += 1
    return count


def drop_host_shared_globals(module: ir.Module) -> None:
    """Erase the host module's copies of the shared-memory globals (after outlining, the
    kernels' ``gpu.module`` has its own; the host cannot lower workgroup memory)."""
    for op in list(module.body.operations):
        op = op.operation
        if op.name == "memref.global" and sym_name(op).startswith("__mlc_shared_"):
            op.erase()
