"""Emit one planned compute as a ``linalg.generic`` (after a ``linalg.fill`` for reductions).

For ``Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")``::

    %cst = arith.constant 0.000000e+00 : f32
    %0 = linalg.fill {mlc.block_init = "Y"} ins(%cst : f32) outs(%dest : tensor<128x128xf32>)
    %1 = linalg.generic {indexing_maps = [(d0, d1, d2) -> (d0, d2), (d0, d1, d2) -> (d2, d1),
                                          (d0, d1, d2) -> (d0, d1)],
                         iterator_types = ["parallel", "parallel", "reduction"], mlc.block = "Y"}
        ins(%A, %B : ...) outs(%0 : tensor<128x128xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %2 = arith.mulf %a, %b : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    } -> tensor<128x128xf32>
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from ..tensor_types import BOOL, element_type, tensor_type
from .dtypes import reduce_identity, storage_dtype
from .expr import Var, walk
from .index import to_affine_expr
from .plan import ComputePlan, Operand
from .scalar import ScalarEmitter, combine, constant
from .tensor import Dim

__all__ = ["Sizes", "emit_compute", "BLOCK_ATTR", "BLOCK_INIT_ATTR"]

BLOCK_ATTR = "mlc.block"
BLOCK_INIT_ATTR = "mlc.block_init"


class Sizes:
    """The ``index`` value of each symbolic size: ``tensor.dim`` of an argument having it.

    Values are made on first use at the current insertion point (the function body), so
    they dominate every later use.

    Args:
        dims: symbol name -> (tensor value, dimension).
    """

    def __init__(self, dims: dict[str, tuple[ir.Value, int]]):
        self._dims = dims
        self._values: dict[object, ir.Value] = {}

    def value(self, name: str) -> ir.Value:
        """The runtime value of the symbolic size ``name``."""
        if name not in self._values:
            source, dim = self._dims[name]
            self._values[name] = tensor.dim(source, self.index(dim))
        return self._values[name]

    def index(self, value: int) -> ir.Value:
        """An ``index`` constant."""
        key = ("const", value)
        if key not in self._values:
            self._values[key] = arith.constant(ir.IndexType.get(), value)
        return self._values[key]

    def mixed(self, shape: tuple[Dim, ...]) -> list[int | ir.Value]:
        """Static sizes as ints, symbolic ones as values (``tensor.empty`` operands)."""
        return [d if isinstance(d, int) else self.value(d.name) for d in shape]


def emit_compute(plan: ComputePlan, block: str, dest: ir.Value, values: dict[int, ir.Value],
                 sizes: Sizes) -> ir.Value:
    """Emit ``plan`` writing into ``dest``; return the computed tensor value.

    Args:
        plan: the compute's plan.
        block: its block name (the ``mlc.block`` attribute).
        dest: the destination tensor (an output argument or a ``tensor.empty``).
        values: id of each tensor emitted so far (and of each argument) -> its value.
        sizes: the values of symbolic sizes.
    """
    positions = {id(ax): p for p, ax in enumerate(plan.axes)}
    n = len(plan.axes)
    inputs = [_operand_value(op, values, sizes) for op in plan.operands]
    maps = [_operand_map(op, n, positions) for op in plan.operands]
    maps.append(ir.AffineMap.get(n, 0, [ir.AffineDimExpr.get(p) for p in range(plan.n_spatial)]))
    init = dest
    dtype = plan.tensor.dtype
    if plan.combiner is not None:
        init = linalg.fill(constant(reduce_identity(plan.combiner, dtype), dtype), outs=[dest])
        init.owner.attributes[BLOCK_INIT_ATTR] = ir.StringAttr.get(block)
    symbols = {v.name: sizes.value(v.name) for v in walk(plan.source) if isinstance(v, Var)}
    extracts = {rid: (values[id(ex.read.tensor)], _extents(ex.read.tensor.shape, ex.clamp, sizes))
                for rid, ex in plan.extracts.items()}
    iterators = ([linalg.IteratorType.parallel] * plan.n_spatial
                 + [linalg.IteratorType.reduction] * (n - plan.n_spatial))
    op = linalg.GenericOp_(inputs, [init], maps, iterators)
    op.attributes[BLOCK_ATTR] = ir.StringAttr.get(block)
    body = op.regions[0].blocks[0]
    with ir.InsertionPoint(body):
        args = list(body.arguments)
        reads = {rid: args[k] for rid, k in plan.read_operand.items()}
        result = ScalarEmitter(reads, positions, symbols, extracts).emit(plan.source)
        if plan.combiner is not None:
            result = combine(plan.combiner, args[-1], result, dtype)
        if dtype == BOOL:  # i1 in registers, one byte in the tensor
            result = arith.extui(element_type(storage_dtype(BOOL)), result)
        linalg.YieldOp([result])
    return op.result


def _operand_value(op: Operand, values: dict[int, ir.Value], sizes: Sizes) -> ir.Value:
    if op.tensor is None:
        extents = tuple(ax.extent for ax in op.shape_axes)
        return tensor.empty(sizes.mixed(extents), ir.IntegerType.get_signless(8))
    value = values[id(op.tensor)]
    if op.slice_sizes is None:
        return value
    rank = op.tensor.ndim
    static = [d if isinstance(d, int) else ir.ShapedType.get_dynamic_size() for d in op.slice_sizes]
    dynamic = [sizes.value(d.name) for d in op.slice_sizes if not isinstance(d, int)]
    return tensor.extract_slice(tensor_type(op.slice_sizes, storage_dtype(op.tensor.dtype)), value, [], dynamic,
                                [], [0] * rank, static, [1] * rank)


def _extents(shape: tuple[Dim, ...], clamp: tuple[bool, ...], sizes: Sizes) -> list[ir.Value | None]:
    """The ``index`` value of each dimension to clamp to (made here, outside the generic's
    body); None where the index needs no clamp."""
    return [None if not c else sizes.index(d) if isinstance(d, int) else sizes.value(d.name)
            for d, c in zip(shape, clamp)]


def _operand_map(op: Operand, n: int, positions: dict[int, int]) -> ir.AffineMap:
    if op.tensor is None:
        exprs = [ir.AffineDimExpr.get(positions[id(ax)]) for ax in op.shape_axes]
    else:
        exprs = [to_affine_expr(a, positions) for a in op.indices]
    return ir.AffineMap.get(n, 0, exprs)
