"""The ``vector-opt`` build stage: register-level cleanup of vectorized code after bufferization.

A schedule vectorizes tiles on tensors; what makes the vectors fast only works on buffers:
the accumulator of a reduction loop (a ``vector.transfer_read`` / ``transfer_write`` pair
on the same memref slice in every iteration) is hoisted out of the loop so that it stays
in registers, and ``vector.contract`` is lowered to outer products (broadcast + FMA rows)
instead of being unrolled element by element by the generic vector-to-LLVM lowering.

The stage applies one transform sequence (:data:`VECTOR_OPT_SCRIPT`) to every function of
a module that has vector ops (modules without any are left alone), then rewrites the
gathers whose lanes read evenly spaced elements (the clamped reads of padding and strided
windows, a convolution's tiles copied back to NCHW) into a load of the run (and a shuffle)
where their clamps are inactive (:mod:`.gathers`; after the sequence, since the flat view
a run is loaded from would stop the hoisting of accumulators in the same buffer)::

    remaining linalg ops -> scf loops        no memref.subview of an accumulator's buffer is
                                             left (hoisting refuses buffers with views)
    canonicalize + fold-memref-alias-ops     subviews folded into the transfers' indices
    cse, canonicalize                        identical index computations / self copies go
    licm on every scf.for                    loop-invariant indices and reads leave loops
    hoist_redundant_vector_transfers         accumulators read before, written after the loop
    vector.contract -> outer products, transfers with permutation maps -> broadcasts,
      multi_reduction / transfer / shape_cast lowering (1-D transfers -> vector.load/store)
    outer products -> broadcast + vector.fma, canonicalize
    leading unit dims dropped (vector<1x32xf32> -> vector<32xf32>), canonicalize

After the sequence, vector loads that step through the rows of a large buffer (a 1x1
convolution's tile reading every channel of an NCHW image) get a software prefetch of their
row a few column tiles ahead (:mod:`.prefetch`).

Accumulator hoisting does nothing unless the canonicalize/CSE/canonicalize/LICM steps ran
first. Hand-written schedules that already did all of this (``benchmarks/schedules/*.mlir``)
go through the stage unchanged but for loop-invariant code motion.

IR before (one row of a bufferized 8x32 register tile; ``mlc-opt --mlc-vector-opt``, twin
test ``tests/lit/compiler/vector_opt.mlir``)::

    scf.for %k = %c0 to %c64 step %c1 {
      %a = vector.transfer_read %A[%c0, %k], %pad : memref<8x64xf32>, vector<1x1xf32>
      %b = vector.transfer_read %B[%k, %c0], %pad : memref<64x32xf32>, vector<1x32xf32>
      %c = vector.transfer_read %C[%c0, %c0], %pad : memref<8x32xf32>, vector<1x32xf32>
      %r = vector.contract {...} %a, %b, %c : vector<1x1xf32>, vector<1x32xf32> into vector<1x32xf32>
      vector.transfer_write %r, %C[%c0, %c0] : vector<1x32xf32>, memref<8x32xf32>
    }

IR after::

    %0 = vector.load %C[%c0, %c0] : memref<8x32xf32>, vector<32xf32>
    %1 = vector.broadcast %0 : vector<32xf32> to vector<1x32xf32>
    %2 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %1) -> (vector<1x32xf32>) {
      %4 = vector.load %A[%c0, %k] : memref<8x64xf32>, vector<1xf32>
      %5 = vector.load %B[%k, %c0] : memref<64x32xf32>, vector<32xf32>
      %7 = vector.broadcast %(A's element) : f32 to vector<32xf32>
      %9 = vector.fma %7, %5, %(row of %acc) : vector<32xf32>
      scf.yield ...
    }
    vector.store %(row of %2), %C[%c0, %c0] : memref<8x32xf32>, vector<32xf32>
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, memref, vector

from ..irutil import is_row_major, row_major_strides, symbol_ops, walk_ops
from ..errors import LoweringError
from ..irbuild import apply_transform
from .gathers import gathers_to_loads
from .prefetch import prefetch_row_streams

__all__ = ["VECTOR_OPT_SCRIPT", "has_vector_ops", "optimize_vectors", "reshapes_as_casts"]

_RESHAPES = ("memref.expand_shape", "memref.collapse_shape")

VECTOR_OPT_SCRIPT = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %linalg = transform.structured.match interface{LinalgOp} in %root
        : (!transform.any_op) -> !transform.any_op
    %scalar_loops = transform.structured.convert_to_loops %linalg
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %funcs : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %funcs
        : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %loops : !transform.any_op
    %hoisted = transform.structured.hoist_redundant_vector_transfers %funcs
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
"""


def has_vector_ops(module: ir.Module) -> bool:
    """Whether any op of ``module`` is in the ``vector`` dialect."""
    return _op_has_vectors(module.operation)


def optimize_vectors(module: ir.Module) -> None:
    """Apply :data:`VECTOR_OPT_SCRIPT` to ``module`` (bufferized) in place, if it has vector ops.

    Must be called inside the shared context. Raises LoweringError when the sequence fails.
    """
    if not has_vector_ops(module):
        return
    script = ir.Module.parse(VECTOR_OPT_SCRIPT)
    # one function at a time: hoisting takes exactly one function handle
    funcs = [fn for fn in symbol_ops(module, defined=True).values() if _op_has_vectors(fn)]
    for fn in funcs:
        reshapes_as_casts(fn)
        apply_transform(fn, script, error=LoweringError, message="stage 'vector-opt' failed")
        # (after the hoisting: the flat view a run is loaded from stops the hoisting of any
        # accumulator in the same buffer, a convolution's tiles copied out of its gemm's)
        gathers_to_loads(fn)
        prefetch_row_streams(fn)


def _op_has_vectors(root: ir.Operation) -> bool:
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        if op.name.startswith("vector."):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def reshapes_as_casts(fn: ir.Operation) -> int:
    """Remove each static ``memref.expand_shape`` / ``collapse_shape`` of a contiguous
    buffer (identity layout) from ``fn``; returns how many.

    ``fold_memref_alias_ops`` (the script's second step) never returns on a transfer whose
    vector runs along a dimension of an expanded group (``vector<1x1x1x56xf32>`` read from
    ``expand_shape %y [[0, 1], [2, 3]]``, a convolution's result viewed in NCHW: MLIR 22,
    twin test ``tests/lit/compiler/vector_opt_reshape.mlir``). An ``expand_shape`` read and
    written only by in-bounds transfers of one row (``1x..x1xN``) is removed, the transfers
    moved to its source at linearized indices (a view left in place would stop the hoisting
    of accumulators in that buffer, which refuses buffers that views are taken of: a
    convolution's register tile was stored at every k step, 3 ms instead of 0.8); any other
    becomes the ``memref.reinterpret_cast`` it amounts to, left alone by the folding and
    lowered by ``expand-strided-metadata`` as the view would have been. The row transfers
    are moved so whatever the source's layout (a strided slice of a buffer too).
    """
    count = 0
    for op in walk_ops(fn, ("memref.collapse_shape",)):
        # a view of a view (a convolution's result in bands, expanded then collapsed to NCHW):
        # the collapse's row transfers moved to the expand first, which is then linearized
        inner = op.operands[0].owner
        if not isinstance(inner, ir.Block) and inner.operation.name == "memref.expand_shape" and _delinearize(op):
            count += 1
    for op in walk_ops(fn, _RESHAPES):
        src, res = ir.MemRefType(op.operands[0].type), ir.MemRefType(op.results[0].type)
        if op.name == "memref.expand_shape" and _linearize(op):
            # (any source layout: a group's dims split one source dim, indexed linearly; an
            # epilogue computed per image reads a row of a strided slice of the result so)
            count += 1
            continue
        if not (is_row_major(src) and is_row_major(res)):
            continue
        if not (src.has_static_shape and res.has_static_shape):
            continue  # a dynamic batch: the cast would need its sizes (views read by rows are linearized above)
        count += 1
        sizes = list(res.shape)
        with ir.InsertionPoint(op), op.location:
            cast = memref.ReinterpretCastOp(res, op.operands[0], [], [], [], [0], sizes, row_major_strides(sizes))
        op.results[0].replace_all_uses_with(cast.result)
        op.erase()
    return count


def _row_transfer(user: ir.Operation, view: ir.Value) -> bool:
    """Whether ``user`` is an unmasked in-bounds transfer of one row (``1x..x1xN``, a minor
    identity map) whose buffer is ``view``."""
    return _run_dim(user, view) == ir.MemRefType(view.type).rank - 1


def _run_dim(user: ir.Operation, view: ir.Value) -> int | None:
    """The dim of ``view`` along which ``user``, an unmasked in-bounds transfer of ``view``
    with a minor identity map, runs: its vector is ``1x..xNx..x1`` (one row, ``1x..x1xN``:
    the last dim; a column of a transposing read, ``1x14x1``: dim 1). None for any other user."""
    name = user.name
    if name not in ("vector.transfer_read", "vector.transfer_write"):
        return None
    base = user.operands[0 if name == "vector.transfer_read" else 1]
    vec = ir.VectorType(user.results[0].type if name == "vector.transfer_read" else user.operands[0].type)
    rank = ir.MemRefType(view.type).rank
    bounds = [ir.BoolAttr(b).value for b in ir.ArrayAttr(user.attributes["in_bounds"])]
    sizes = list(vec.shape)
    if not 1 <= len(sizes) <= rank:
        return None
    minor = ir.AffineMapAttr(user.attributes["permutation_map"]).value == ir.AffineMap.get_minor_identity(rank, len(sizes))
    # operands: a read's buffer, indices, padding; a write's value, buffer, indices (a mask after them)
    unmasked = len(user.operands) == 2 + rank
    if base != view or not minor or not all(bounds) or not unmasked:
        return None
    runs = [i for i, d in enumerate(sizes) if d != 1]
    if len(runs) > 1:
        return None
    return rank - len(sizes) + (runs[0] if runs else len(sizes) - 1)


def _dim_of(user: ir.Operation, groups: list[list[int]]) -> int | None:
    """For ``memref.dim %view, %c<i>``: the source dim of the same size (view dim ``i``
    alone in its group), else None."""
    index = user.operands[1]
    if isinstance(index.owner, ir.Block) or index.owner.operation.name != "arith.constant":
        return None
    i = ir.IntegerAttr(index.owner.operation.attributes["value"]).value
    return next((g for g, group in enumerate(groups) if group == [i]), None)


def _linearize(op: ir.Operation) -> bool:
    """``op`` (an expand_shape) removed, its transfers of one row or column moved to its
    source; False (and nothing changed) when some user is not such a transfer. A column (the
    vector along a view dim other than the last) is taken when that dim is the last of its
    group: one step along it is one along its source dim. (A convolution written as a
    (pixels, channels) gemm whose NCHW output reads it viewed (OH, OW, C) by columns of OW
    pixels, ResNet-18's 256-channel 3x3 layer at 14 x 14, one thread: the view left in
    place, the gemm's accumulators were stored at every k step, 6.1-6.5 ms; moved, 4.1.)"""
    view, src = op.results[0], op.operands[0]
    users = [use.owner for use in view.uses]
    groups = [[ir.IntegerAttr(d).value for d in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
    dims = [u for u in users if u.name == "memref.dim"]
    sizes_of = {u: _dim_of(u, groups) for u in dims}
    last_of = {g[-1]: src_dim for src_dim, g in enumerate(groups)}
    runs = {u: last_of.get(_run_dim(u, view)) for u in users if u.name != "memref.dim"}
    if not users or not all(runs.get(u) is not None or sizes_of.get(u) is not None for u in users):
        return False
    sizes = list(ir.MemRefType(view.type).shape)
    index = ir.IndexType.get()
    transfers = [u for u in users if u.name != "memref.dim"]
    for user in dims:  # the size of a dynamic dim of the view: the source's (its group is that one dim)
        with ir.InsertionPoint(user), user.location:
            user.results[0].replace_all_uses_with(memref.dim(src, arith.constant(index, sizes_of[user])))
        user.erase()

    def linear(idx: list[ir.Value]) -> list[ir.Value]:
        lin = []
        for group in groups:
            value = idx[group[0]]
            for d in group[1:]:
                value = arith.addi(arith.muli(value, arith.constant(index, sizes[d])), idx[d])
            lin.append(value)
        return lin

    for user in transfers:
        _move_row(user, src, len(sizes), linear, runs[user])
    op.erase()
    return True


def _delinearize(op: ir.Operation) -> bool:
    """``op`` (a collapse_shape of a static source whose last group is one dim) removed, its
    row transfers moved to its source at delinearized indices (``oh`` of a collapsed group
    ``(band, rows)``: ``oh / rows``, ``oh % rows``); False (and nothing changed) when some
    user is not such a transfer."""
    view, src = op.results[0], op.operands[0]
    users = [use.owner for use in view.uses]
    groups = [[ir.IntegerAttr(d).value for d in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
    src_type = ir.MemRefType(src.type)
    if (not users or not src_type.has_static_shape or len(groups[-1]) != 1
            or not all(_row_transfer(u, view) for u in users)):
        return False
    sizes = list(src_type.shape)
    index = ir.IndexType.get()

    def split(idx: list[ir.Value]) -> list[ir.Value]:
        out = []
        for value, group in zip(idx, groups):
            parts = []
            for d in reversed(group[1:]):  # innermost first: value % size, then value / size
                size = arith.constant(index, sizes[d])
                parts.append(arith.remui(value, size))
                value = arith.divui(value, size)
            out += [value] + parts[::-1]
        return out

    for user in users:
        _move_row(user, src, len(groups), split)
    op.erase()
    return True


def _move_row(user: ir.Operation, src: ir.Value, view_rank: int,
              indices: Callable[[list[ir.Value]], list[ir.Value]], run: int | None = None) -> None:
    """Replace row transfer ``user`` of a view of rank ``view_rank`` by one of ``src`` at
    ``indices(view indices)`` (inserted before ``user``), its vector ``1x..x1xN`` of
    ``src``'s rank (``N`` at ``src`` dim ``run``, the last by default), shape-cast to the old one."""
    read = user.name == "vector.transfer_read"
    first = 1 if read else 2
    rank = ir.MemRefType(src.type).rank
    old_vec = ir.VectorType(user.results[0].type if read else user.operands[0].type)
    shape = [1] * rank
    shape[rank - 1 if run is None else run] = max(old_vec.shape)
    new_vec = ir.VectorType.get(shape, old_vec.element_type)
    with ir.InsertionPoint(user), user.location:
        idx = indices(list(user.operands[first:first + view_rank]))
        perm = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
        bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)] * rank)
        if read:
            row = vector.TransferReadOp(new_vec, src, idx, perm, user.operands[first + view_rank], bounds).result
            user.results[0].replace_all_uses_with(vector.ShapeCastOp(old_vec, row).result)
        else:
            vector.TransferWriteOp(None, vector.ShapeCastOp(new_vec, user.operands[0]).result, src, idx, perm, bounds)
    user.erase()
