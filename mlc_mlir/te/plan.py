"""The lowering plan of one compute: its loops, operands and indexing, checked in Python.

Everything a compute needs to become one ``linalg.generic`` is decided and validated
here, before any MLIR object exists (this MLIR build aborts on some invalid IR):

- loop dimensions: the compute's spatial axes, then the reduce axes in ``axis=`` order;
- operands: one per distinct (tensor, indexing) pair read by the body. linalg infers a
  loop's range from the first operand dimension indexed by that loop alone, so such a
  dimension must have the loop's extent: when it is not provably equal, the operand is a
  ``tensor.extract_slice`` of the tensor to the loop's extent;
- a reduce axis that indexes no dimension alone gets a shape-only operand
  (``tensor.empty`` of its extent, never read), as linalg pooling ops do;
- a read that is not an operand is an *extract read* (``tensor.extract`` of the whole
  tensor inside the body, each index clamped to ``[0, dim - 1]``): a read whose index is
  not affine (data-dependent ``W[idx[i], j]``, ``A[te.if_then_else(c, 0, j)]``, ``A[i * j]``),
  and a read whose affine index may leave the tensor but which sits in a branch of a
  ``te.if_then_else`` (the padding idiom ``if_then_else(i >= 1, A[i - 1], 0.0)``). The
  clamp keeps the untaken branch in bounds; a non-affine index out of range reads the
  nearest element (clamped, never out of bounds). An affine index that may leave the
  tensor outside any ``if_then_else`` branch raises :class:`TEError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import TEError
from ..tensor_types import BOOL
from .expr import Expr, IterVar, Reduce, Select, TensorRead, Var, children, walk
from .index import Affine, affine_key, interval, pure_axis, try_affine
from .tensor import Dim, Tensor, dim_name

__all__ = ["Operand", "ExtractRead", "ComputePlan", "plan_compute", "check_body"]


@dataclass(eq=False)
class Operand:
    """An input of the generic: a read ``tensor`` (sliced to ``slice_sizes`` when set) and
    the index of each of its dimensions; or, with ``tensor`` None, a shape-only operand
    whose dimensions are the loops ``shape_axes``."""

    tensor: Tensor | None
    indices: tuple[Affine, ...] = ()
    slice_sizes: tuple[Dim, ...] | None = None
    shape_axes: tuple[IterVar, ...] = ()


@dataclass(frozen=True, eq=False)
class ExtractRead:
    """A read lowered as ``tensor.extract`` of the whole tensor inside the body; ``clamp[k]``
    says whether index ``k`` is clamped (False where it is provably in bounds)."""

    read: TensorRead
    clamp: tuple[bool, ...]


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
    extracts: dict[int, ExtractRead] = field(default_factory=dict)
    """id of each extract read (``tensor.extract`` with clamped indices) -> its plan."""

    @property
    def symbols(self) -> set[str]:
        """Names of the symbolic sizes the emitted IR needs as values."""
        names = {d.name for d in self.tensor.shape if isinstance(d, Var)}
        names |= {n.name for n in walk(self.source) if isinstance(n, Var)}
        for op in self.operands:
            dims = list(op.slice_sizes or ()) + [ax.extent for ax in op.shape_axes]
            names |= {d.name for d in dims if isinstance(d, Var)}
        for ex in self.extracts.values():
            names |= {d.name for d in ex.read.tensor.shape if isinstance(d, Var)}
        return names

    @property
    def reads(self) -> list[Tensor]:
        """The tensors the compute reads, in order of first use."""
        seen: dict[int, Tensor] = {}
        for op in self.operands:
            if op.tensor is not None:
                seen.setdefault(id(op.tensor), op.tensor)
        for ex in self.extracts.values():
            seen.setdefault(id(ex.read.tensor), ex.read.tensor)
        return list(seen.values())


def check_body(name: str, axes: tuple[IterVar, ...], body: Expr) -> tuple[str | None, Expr, tuple[IterVar, ...]]:
    """Split ``body`` into (combiner or None, source, reduce axes) and check its structure.

    Raises:
        TEError: a reduction that is not the whole body, an axis of another compute, a
            reduce axis used outside a reduction over it, or a reduction of bool values.
    """
    combiner, source, raxes = None, body, ()
    if isinstance(body, Reduce):
        combiner, source, raxes = body.combiner, body.source, body.axes
        if body.dtype == BOOL:
            raise TEError(f"compute {name!r}: te.{combiner} of bool values ({source}); convert "
                          "them first (.astype('int32')) or use te.any / te.all on conditions")
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
    """Check the compute ``t`` and decide its loops, operands and extract reads.

    Raises:
        TEError: see :func:`check_body`; an affine index that may leave its tensor outside
            a branch of ``te.if_then_else``.
    """
    combiner, source, raxes = check_body(t.name, t.op.axes, t.op.body)
    plan = ComputePlan(t, combiner, source, t.op.axes + raxes, len(t.op.axes))
    unguarded = _unguarded_reads(source)
    keys: dict[tuple, int] = {}
    for read in (n for n in walk(source) if isinstance(n, TensorRead)):
        op = _read_operand(t.name, read, guarded=id(read) not in unguarded)
        if op is None:
            clamp = tuple(not _in_bounds(ix, size) for ix, size in zip(read.indices, read.tensor.shape))
            plan.extracts[id(read)] = ExtractRead(read, clamp)
            continue
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


def _unguarded_reads(source: Expr) -> set[int]:
    """ids of the reads reachable from ``source`` without entering a branch of a select
    (the condition of a select is always evaluated, so it does not guard)."""
    seen: set[int] = set()
    found: set[int] = set()
    stack = [source]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, TensorRead):
            found.add(id(node))
        stack.extend([node.cond] if isinstance(node, Select) else children(node))
    return found


def _in_bounds(index: Expr, size: Dim) -> bool:
    """Whether ``index`` is provably within ``[0, size - 1]``."""
    a = try_affine(index)
    if a is None:
        return False
    axis = pure_axis(a)
    if axis is not None and dim_name(axis.extent) == dim_name(size):
        return True
    lo, hi = interval(a)
    return lo is not None and lo >= 0 and hi is not None and isinstance(size, int) and hi < size


def _read_operand(name: str, read: TensorRead, *, guarded: bool) -> Operand | None:
    """The operand of ``read``, or None when it is an extract read (see the module doc)."""
    tensor = read.tensor
    indices = tuple(try_affine(ix) for ix in read.indices)
    if None in indices:
        return None
    sizes, sliced = list(tensor.shape), False
    for k, (a, size) in enumerate(zip(indices, tensor.shape)):
        lo, hi = interval(a)
        reach = lo if lo is not None and lo < 0 else None
        if hi is not None and isinstance(size, int) and hi >= size:
            reach = hi if reach is None else reach
        if reach is not None:
            if guarded:
                return None
            raise TEError(f"compute {name!r}: index {k} of {read} ({read.indices[k]}) reaches {reach}: "
                          f"out of bounds of {tensor.name} (dimension {k} is {dim_name(size)}); "
                          "guard the read with te.if_then_else(cond, read, value) to pad")
        axis = pure_axis(a)
        if axis is not None and dim_name(size) != dim_name(axis.extent):
            sizes[k], sliced = axis.extent, True
    return Operand(tensor, indices, tuple(sizes) if sliced else None)
