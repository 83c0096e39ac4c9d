"""The region of a cached tensor that a thread block reads: ``compute_at`` of a ``"shared"``
cache (TVM's region relaxation for shared scope).

A cache moved under loop ``l`` of its reader normally covers what one iteration of ``l``
reads (the loops inside ``l``). In ``"shared"`` scope the copy is made once for the whole
thread block, so the ``threadIdx``-bound loops around ``l`` are relaxed as well, and the
region covers every read of the cached tensor by the block, window offsets included
(course ch.6, window sum ``B[i] = A[i] + A[i+1] + A[i+2]`` on 128 threads: 130 elements of
``A``; blocked matmul, 8x8 threads with 8x8 tiles, ``k`` by 8: 64x8 of ``A``)::

    sch.compute_at(A_shared, i1)          # i1 bound to threadIdx.x
    sch.get_loops(A_shared)               # [i_0, i_1, ax0]: ax0 iterates the 130 elements

The schedule's state records that region (the copy's own loops, split and bound for
cooperative fetching); the emitted program still fuses the per-thread tile, which the CUDA
build widens to the same region in workgroup memory (:mod:`mlc_mlir.compiler.gpu_shared`).

Accesses are read from the original payload op: its ``indexing_maps`` (affine-linear
results), and the static offsets of a ``tensor.extract_slice`` of a function argument
(te reads a window of an argument through such a slice).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..irutil import symbol_ops
from .state import BlockState, FuncState

__all__ = ["Access", "block_accesses", "shared_footprint"]

#: (coefficient per iteration dim, constant) of one index; None when not affine-linear
Linear = tuple[tuple[int, ...], int] | None


@dataclass(frozen=True)
class Access:
    """One input operand of a block: the tensor it reads (``("arg", n)`` for function
    argument ``n``, else ``("operand", i)``) and its index in each dim of that tensor."""

    tensor: tuple[str, int]
    index: tuple[Linear, ...]


def _linear(expr: ir.AffineExpr, ndims: int) -> Linear:
    expr = expr.maybe_downcast() if hasattr(expr, "maybe_downcast") else expr
    if isinstance(expr, ir.AffineConstantExpr):
        return (0,) * ndims, expr.value
    if isinstance(expr, ir.AffineDimExpr):
        return tuple(int(d == expr.position) for d in range(ndims)), 0
    if isinstance(expr, ir.AffineAddExpr):
        a, b = _linear(expr.lhs, ndims), _linear(expr.rhs, ndims)
        if a is None or b is None:
            return None
        return tuple(x + y for x, y in zip(a[0], b[0])), a[1] + b[1]
    if isinstance(expr, ir.AffineMulExpr):
        a, b = _linear(expr.lhs, ndims), _linear(expr.rhs, ndims)
        if a is None or b is None:
            return None
        if not any(a[0]):
            a, b = b, a
        if any(b[0]):
            return None  # a product of two dims
        return tuple(x * b[1] for x in a[0]), a[1] * b[1]
    return None


def _slice_of_arg(value: ir.Value) -> tuple[int, list[int]] | None:
    """``(argument number, static offsets)`` of a value that is a function argument or a
    unit-stride static ``tensor.extract_slice`` of one."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        if not isinstance(value.type, ir.ShapedType):
            return None
        return ir.BlockArgument(value).arg_number, [0] * ir.ShapedType(value.type).rank
    op = owner.operation
    if op.name != "tensor.extract_slice" or not isinstance(op.operands[0].owner, ir.Block):
        return None
    offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    src_rank = ir.ShapedType(op.operands[0].type).rank
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if dynamic in offsets or any(s != 1 for s in strides) or len(sizes) != src_rank \
            or ir.ShapedType(value.type).rank != src_rank:
        return None
    return ir.BlockArgument(op.operands[0]).arg_number, offsets


def block_accesses(module: ir.Module, func: str, block: str) -> list[Access] | None:
    """The accesses of the input operands of block ``block`` of ``@func`` in ``module``
    (call inside the context); None when the op has no ``indexing_maps`` attribute (a
    named op: its reads are plain) or is not found."""
    fn = symbol_ops(module, defined=True).get(func)
    if fn is None:
        return None
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if "mlc.block" in op.attributes and ir.StringAttr(op.attributes["mlc.block"]).value == block:
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    fn.walk(visit, ir.WalkOrder.PRE_ORDER)
    if not found or "indexing_maps" not in found[0].attributes:
        return None
    op = found[0]
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    n_in = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]
    out = []
    for i, (value, amap) in enumerate(zip(list(op.operands)[:n_in], maps)):
        ndims = amap.n_dims
        index = [_linear(e, ndims) for e in amap.results]
        arg = _slice_of_arg(value)
        if arg is None or len(arg[1]) != len(index):
            out.append(Access(("operand", i), tuple(index)))
            continue
        shifted = tuple(None if x is None else (x[0], x[1] + off) for x, off in zip(index, arg[1]))
        out.append(Access(("arg", arg[0]), shifted))
    return out


def _relaxed_extent(fstate: FuncState, cons: BlockState, index: int, dim: int) -> tuple[int | None, bool]:
    """``(extent, exact)`` of consumer dim ``dim`` over the loops inside ``cons.path[index]``
    and the ``threadIdx``-bound loops at or above it (their bounding box)."""
    ext, exact = fstate.tile_extent(cons, index + 1, dim)
    if ext is None:
        return None, False
    for i, uid in enumerate(cons.path[:index + 1]):
        lp = fstate.loops[uid]
        if lp.kind != "bound" or not (lp.thread or "").startswith("threadIdx"):
            continue
        for d, e in lp.parts.get(cons.name, ()):
            if d == dim:
                step = fstate.step(cons, i, d)
                if e is None or step is None:
                    return None, False
                ext += (e - 1) * step
                exact = exact and fstate.tile_extent(cons, i, d)[1]
    full = cons.base[dim][0]
    return (ext if full is None else min(ext, full)), exact


def shared_footprint(fstate: FuncState, prod: BlockState, cons: BlockState, oper: int, index: int,
                     accesses: list[Access] | None) -> list[tuple[int | None, bool]] | None:
    """The base (``(extent, exact)`` per dim) of ``"shared"`` copy ``prod`` computed at
    ``cons.path[index]``, where ``cons`` reads it through operand ``oper``: the region of the
    cached tensor that ``cons`` reads there, over the loops inside and the ``threadIdx``
    loops around, through that operand and every other read of the same function argument
    (window offsets). None when an extent is dynamic."""
    cmap = cons.info.maps[oper]
    relaxed = [_relaxed_extent(fstate, cons, index, d) for d in range(cons.info.ndims)]
    reads: list[tuple[Linear, ...]] = []
    origin: tuple[Linear, ...] = tuple(
        (tuple(int(d == dc) for d in range(cons.info.ndims)), 0) for dc in cmap)
    if accesses is not None and oper < len(accesses) and len(accesses) == cons.info.n_inputs:
        mine = accesses[oper]
        if mine.tensor[0] == "arg" and all(x is not None for x in mine.index):
            origin = mine.index
            for o, acc in enumerate(accesses):
                src = cons.info.sources[o]
                if acc.tensor == mine.tensor and (o == oper or src.kind == "arg") and len(acc.index) == len(cmap):
                    reads.append(acc.index)
    reads = reads or [origin]
    base: list[tuple[int | None, bool]] = []
    for r, dc in enumerate(cmap):
        lo = hi = None
        exact = True
        for read in reads:
            term = read[r]
            if term is None:
                continue
            coeffs, const = term
            const -= origin[r][1]
            low = high = const
            for d, c in enumerate(coeffs):
                if c == 0:
                    continue
                ext, ex = relaxed[d]
                if ext is None:
                    return None
                exact = exact and ex
                low += min(0, c * (ext - 1))
                high += max(0, c * (ext - 1))
            lo = low if lo is None else min(lo, low)
            hi = high if hi is None else max(hi, high)
        base.append((hi - lo + 1, exact))
    return base
