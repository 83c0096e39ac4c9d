"""The lowering plan of one compute: its loops, operands and indexing, checked in Python.

Everything a compute needs to become one ``linalg.generic`` is decided and validated
here, before any MLIR object exists (this MLIR build aborts on some invalid IR):

- loop dimensions: the compute's spatial axes, then the reduce axes in ``axis=`` order;
- operands: one per distinct (tensor, indexing) pair read by the body. linalg infers a
  loop's range from the first operand dimension indexed by that loop alone, so such a
  dimension must have the loop's extent: when it is not provably equal, the operand is a
  ``tensor.extract_slice`` of the tensor to the loop's extent;
- a reduce axis that indexes no dimension alone gets a shape-only operand
  (``tensor.empty`` of its extent, never read), as linalg pooling ops do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import TEError
from ..tensor_types import BOOL
from .expr import Expr, IterVar, Reduce, TensorRead, Var, walk
from .index import Affine, affine_key, interval, pure_axis, to_affine
from .tensor import Dim, Tensor, dim_name

__all__ = ["Operand", "ComputePlan", "plan_compute", "check_body"]


@dataclass(eq=False)
class Operand:
    """An input of the generic: a read ``tensor`` (sliced to ``slice_sizes`` when set) and
    the index of each of its dimensions; or, with ``tensor`` None, a shape-only operand
    whose dimensions are the loops ``shape_axes``."""

    tensor: Tensor | None
    indices: tuple[Affine, ...] = ()
    slice_sizes: tuple[Dim, ...] | None = None
    shape_axes: tuple[IterVar, ...] = ()


@dataclass(eq=False)
class ComputePlan:
    """How the compute ``tensor`` becomes a ``linalg.generic``."""

    tensor: Tensor
    combiner: str | None
    source: Expr
    axes: tuple[IterVar, ...]
    n_spatial: int
    operands: list[Operand] = field(default_factory=list)
    read_operand: dict[int, int] = field(default_factory=dict)

    @property
    def symbols(self) -> set[str]:
        """Names of the symbolic sizes the emitted IR needs as values."""
        names = {d.name for d in self.tensor.shape if isinstance(d, Var)}
        names |= {n.name for n in walk(self.source) if isinstance(n, Var)}
        for op in self.operands:
            dims = list(op.slice_sizes or ()) + [ax.extent for ax in op.shape_axes]
            names |= {d.name for d in dims if isinstance(d, Var)}
        return names

    @property
    def reads(self) -> list[Tensor]:
        """The tensors the compute reads, in order of first use."""
        seen: dict[int, Tensor] = {}
        for op in self.operands:
            if op.tensor is not None:
                seen.setdefault(id(op.tensor), op.tensor)
        return list(seen.values())


def check_body(name: str, axes: tuple[IterVar, ...], body: Expr) -> tuple[str | None, Expr, tuple[IterVar, ...]]:
    """Split ``body`` into (combiner or None, source, reduce axes) and check its structure.

    Raises:
        TEError: a reduction that is not the whole body, an axis of another compute, a
            reduce axis used outside a reduction over it, or a bool-valued body.
    """
    combiner, source, raxes = None, body, ()
    if isinstance(body, Reduce):
        combiner, source, raxes = body.combiner, body.source, body.axes
    if body.dtype == BOOL:
        raise TEError(f"compute {name!r}: its body {body} is a bool (a comparison); tensors of "
                      "bool are not supported, use .astype('int8') or te.if_then_else")
    spatial, reduce = {id(a) for a in axes}, {id(a) for a in raxes}
    nodes = walk(source)
    for node in nodes:
        if isinstance(node, Reduce):
            raise TEError(f"compute {name!r}: te.{node.combiner}(...) must be the whole body of "
                          f"te.compute, but it is inside {body}; compute the reduction in a "
                          "te.compute of its own and read that tensor")
    for node in nodes:
        if isinstance(node, IterVar) and id(node) not in spatial | reduce:
            if node.kind == "reduce":
                raise TEError(f"compute {name!r}: reduce axis {node.name!r} is used outside a "
                              f"reduction over it (body {body}); pass it in axis= of te.sum/max/min")
            raise TEError(f"compute {name!r}: axis {node.name!r} belongs to another compute")
    return combiner, source, raxes


def plan_compute(t: Tensor) -> ComputePlan:
    """Check the compute ``t`` and decide its loops and operands.

    Raises:
        TEError: see :func:`check_body`; non-affine or out-of-bounds indices.
    """
    combiner, source, raxes = check_body(t.name, t.op.axes, t.op.body)
    plan = ComputePlan(t, combiner, source, t.op.axes + raxes, len(t.op.axes))
    keys: dict[tuple, int] = {}
    for read in (n for n in walk(source) if isinstance(n, TensorRead)):
        op = _read_operand(t.name, read)
        key = (id(read.tensor), tuple(affine_key(a) for a in op.indices),
               None if op.slice_sizes is None else tuple(dim_name(d) for d in op.slice_sizes))
        if key not in keys:
            keys[key] = len(plan.operands)
            plan.operands.append(op)
        plan.read_operand[id(read)] = keys[key]
    covered = {id(ax) for op in plan.operands for ax in map(pure_axis, op.indices) if ax is not None}
    uncovered = tuple(ax for ax in raxes if id(ax) not in covered)
    if uncovered:
        plan.operands.append(Operand(None, shape_axes=uncovered))
    return plan


def _read_operand(name: str, read: TensorRead) -> Operand:
    tensor = read.tensor
    indices = tuple(to_affine(ix, where=f"compute {name!r}: index {k} of {read}")
                    for k, ix in enumerate(read.indices))
    sizes, sliced = list(tensor.shape), False
    for k, (a, size) in enumerate(zip(indices, tensor.shape)):
        lo, hi = interval(a)
        if lo is not None and lo < 0:
            raise TEError(f"compute {name!r}: index {k} of {read} ({read.indices[k]}) reaches {lo}: "
                          f"out of bounds of {tensor.name} (dimension {k} is {dim_name(size)})")
        if hi is not None and isinstance(size, int) and hi >= size:
            raise TEError(f"compute {name!r}: index {k} of {read} ({read.indices[k]}) reaches {hi}: "
                          f"out of bounds of {tensor.name} (dimension {k} is {size})")
        axis = pure_axis(a)
        if axis is not None and dim_name(size) != dim_name(axis.extent):
            sizes[k], sliced = axis.extent, True
    return Operand(tensor, indices, tuple(sizes) if sliced else None)
