"""``FuseOps``: group graph ops by pattern kind into primitive functions (TVM's FuseOps).

Every op of a dataflow block gets a pattern kind (TVM's ``OpPatternKind``):

==============  ====================================================================
kind            ops
==============  ====================================================================
ELEMWISE        unary math (``relu``, ``exp``, ``clip``, ``astype``...), ``ewise_fma``, binary
                ops, comparisons and ``where`` on equal shapes
BROADCAST       binary ops and ``where`` that broadcast an operand
INJECTIVE       ``permute_dims``, ``reshape``, ``broadcast_to``, ``strided_slice``,
                ``concat``, ``take``... (data movement), ``tril``/``triu``
OUT_EWISE       ``matmul``, ``conv2d``, pooling: a reduction whose output elementwise ops
                can follow
OPAQUE          ``softmax``, normalizations, reductions (``sum``, ``mean``...),
                ``call_dps``, constants, calls: never fused
==============  ====================================================================

``call_tir`` of a tensor program gets the kind of its one linalg op (the course's "TVM
analyses the TensorIR loop patterns"): all-parallel with identity maps is ELEMWISE,
broadcasting maps BROADCAST, other parallel maps INJECTIVE, a reduction OUT_EWISE;
several computations, scheduled loops or memref form are OPAQUE.

Ops are visited in order; an op joins the group of an operand's producer when

- the operand's only user is this op (a value with several users is never fused:
  fusing it into each would compute it twice), and it is in the same dataflow block
  (nothing is fused across dataflow blocks or outside them);
- the kinds fit: ELEMWISE/BROADCAST/INJECTIVE chains fuse together; ELEMWISE/BROADCAST
  ops follow an OUT_EWISE op (one per group; its epilogue); an OUT_EWISE op takes in
  pure data movement before it (``permute_dims``/``reshape``, its prologue);
- the group keeps at most 16 inputs (call argument slots).

Each group of two or more ops becomes a primitive function (:mod:`.outline`) named
``fused_<op>_<op>...`` and a ``func.call`` to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from mlir import ir

from ...irutil import symbol_ops
from ..ir.analysis import graph_functions, is_primitive, value_shapes, walk_ops
from ..builder.emit import CALL_SLOTS
from .outline import outline_ops, unique_symbol, users

__all__ = ["OpPatternKind", "op_pattern_kind", "tensor_program_kind", "fuse_ops", "partition"]


class OpPatternKind(IntEnum):
    """How an op may fuse (TVM's ``OpPatternKind``; lower fuses more easily)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    OUT_EWISE = 4
    OPAQUE = 8


K = OpPatternKind
#: elementwise ops of several operands (NumPy broadcasting): ELEMWISE on equal shapes, else BROADCAST
_BINARY = ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal", "not_equal", "less",
           "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
           "where")
#: elementwise ops of one operand
_UNARY = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "erf", "negative",
          "abs", "floor", "ceil", "sin", "cos", "clip", "astype", "logical_not", "full_like", "zeros_like",
          "ones_like")
#: pure data movement (INJECTIVE)
_MOVEMENT = ("permute_dims", "reshape", "broadcast_to", "expand_dims", "squeeze", "strided_slice", "concat", "take")
#: reductions whose elementwise consumers fuse into them as an epilogue (OUT_EWISE)
_OUT_EWISE = ("matmul", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d")
_ALLOWED_DIALECTS = ("linalg", "arith", "math")
_ALLOWED_OPS = ("tensor.empty", "tensor.dim", "tensor.cast", "func.return")


def _map_kind(m: ir.AffineMap, rank: int) -> K:
    """ELEMWISE for the identity, BROADCAST for dims kept in order (or constant 0), else INJECTIVE."""
    dims = []
    for r in m.results:
        if isinstance(r, ir.AffineDimExpr):
            dims.append(r.position)
        elif isinstance(r, ir.AffineConstantExpr) and r.value == 0:
            continue
        else:
            return K.INJECTIVE
    if dims == list(range(rank)) and len(m.results) == rank:
        return K.ELEMWISE
    return K.BROADCAST if dims == sorted(set(dims)) else K.INJECTIVE


def _program_info(fop: ir.Operation) -> tuple[K, bool]:
    """(kind, pure data movement?) of a tensor program."""
    ftype = ir.FunctionType(ir.TypeAttr(fop.attributes["function_type"]).value)
    if not all(isinstance(t, ir.RankedTensorType) for t in ftype.inputs):
        return K.OPAQUE, False
    compute = []
    for o in walk_ops(fop):
        dialect = o.name.split(".", 1)[0]
        if dialect not in _ALLOWED_DIALECTS and o.name not in _ALLOWED_OPS:
            return K.OPAQUE, False
        if dialect == "linalg" and o.name not in ("linalg.fill", "linalg.yield", "linalg.index"):
            compute.append(o)
    if len(compute) != 1:
        return K.OPAQUE, False
    op = compute[0]
    if op.name != "linalg.generic":
        return (K.OUT_EWISE, False) if "matmul" in op.name or "matvec" in op.name else (K.OPAQUE, False)
    iters = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    if any("reduction" in it for it in iters):
        return K.OUT_EWISE, False
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if _map_kind(maps[-1], len(iters)) != K.ELEMWISE:
        return K.INJECTIVE, False
    kind = max((_map_kind(m, len(iters)) for m in maps[:-1]), default=K.ELEMWISE)
    body = list(op.regions[0].blocks[0].operations)
    movement = len(body) == 1 and len(body[0].operands) == 1 and \
        isinstance(body[0].operands[0].owner, ir.Block)
    return kind, movement


def tensor_program_kind(fop: ir.Operation) -> OpPatternKind:
    """The pattern kind of a tensor program (a ``func.func`` of linalg ops)."""
    return _program_info(fop)[0]


def _op_info(op: ir.Operation, shapes: dict, funcs: dict[str, ir.Operation]) -> tuple[K, bool]:
    name = op.name[4:] if op.name.startswith("mlc.") else None
    if name in _BINARY:
        same = all(shapes[v][0] == shapes[op.results[0]][0] for v in op.operands)
        return (K.ELEMWISE if same else K.BROADCAST), False
    if name in _UNARY or name == "ewise_fma":
        return K.ELEMWISE, False
    if name in _MOVEMENT:
        # only a transpose becomes a matmul's prologue (an indexing map of its operand); a
        # reshape fused in would read the operand at constant (dropped unit dims) or div/mod
        # indices, which the contraction rules cannot vectorize: it stays a kernel of its own
        return K.INJECTIVE, name == "permute_dims"
    if name in ("tril", "triu"):
        return K.INJECTIVE, False
    if name in _OUT_EWISE:
        return K.OUT_EWISE, False
    if name == "batch_norm":
        return K.BROADCAST, False
    if name == "call_tir":
        callee = funcs.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        if callee is not None:
            return _program_info(callee)
    return K.OPAQUE, False


def op_pattern_kind(op: ir.Operation, shapes: dict, funcs: dict[str, ir.Operation]) -> OpPatternKind:
    """The pattern kind of one op of a graph function (``shapes``: :func:`value_shapes`)."""
    return _op_info(op, shapes, funcs)[0]


@dataclass
class _Group:
    ops: list[ir.Operation]
    kind: K
    has_out_ewise: bool
    movement_only: bool
    inputs: list[ir.Value] = field(default_factory=list)


def _can_merge(prod: _Group, cons: _Group, consumer_kind: K) -> bool:
    if consumer_kind == K.OUT_EWISE:  # prologue: only data movement before a matmul
        return prod.movement_only and not prod.has_out_ewise
    if prod.has_out_ewise:  # epilogue: elementwise/broadcast after the one matmul
        return consumer_kind <= K.BROADCAST and not cons.has_out_ewise
    return prod.kind <= K.INJECTIVE and consumer_kind <= K.INJECTIVE


def _merged_inputs(a: _Group, b: _Group) -> list[ir.Value]:
    inside = {r for o in a.ops + b.ops for r in o.results}
    out: list[ir.Value] = []
    for v in a.inputs + b.inputs:
        if v not in inside and v not in out:
            out.append(v)
    return out


def partition(ops: list[ir.Operation], shapes: dict, funcs: dict[str, ir.Operation]) -> list[list[ir.Operation]]:
    """Group the ops of one dataflow block; returns the groups of two or more ops, in order."""
    ops = [o.operation for o in ops]
    position = {op: i for i, op in enumerate(ops)}
    group_of: dict[ir.Operation, _Group] = {}
    for c in ops:
        kind, movement = _op_info(c, shapes, funcs)
        if kind == K.OPAQUE:
            continue
        g = _Group([c], kind, kind == K.OUT_EWISE, movement, list(dict.fromkeys(c.operands)))
        merged: list[_Group] = []
        for v in c.operands:
            producer = None if isinstance(v.owner, ir.Block) else v.owner.operation
            prod = group_of.get(producer)
            if prod is None or any(prod is m for m in merged) or users(v) != [c]:
                continue
            if not _can_merge(prod, g, kind):
                continue
            inputs = _merged_inputs(prod, g)
            if len(inputs) > CALL_SLOTS:
                continue
            g = _Group(sorted(prod.ops + g.ops, key=position.__getitem__), max(prod.kind, g.kind),
                       prod.has_out_ewise or g.has_out_ewise, prod.movement_only and g.movement_only, inputs)
            merged.append(prod)
        for o in g.ops:
            group_of[o] = g
    groups = {id(g): g for g in group_of.values() if len(g.ops) > 1}
    return [g.ops for g in sorted(groups.values(), key=lambda g: position[g.ops[-1]])]


def _group_name(ops: list[ir.Operation]) -> str:
    parts = []
    for o in ops:
        if o.name == "mlc.call_tir":
            parts.append(ir.FlatSymbolRefAttr(o.attributes["callee"]).value)
        else:
            parts.append(o.name.split(".", 1)[1])
    name = "fused_" + "_".join(parts)
    if len(name) > 64:
        name = name[:64].rsplit("_", 1)[0]
    return name


def fuse_ops(module: ir.Module) -> list[str]:
    """Fuse the dataflow blocks of every (non-primitive) graph function of ``module`` in place.

    Returns:
        The names of the primitive functions created.
    """
    funcs = symbol_ops(module)
    created: list[str] = []
    for fop in graph_functions(module):
        if is_primitive(fop):
            continue
        shapes = value_shapes(fop)
        for df in [o for o in walk_ops(fop) if o.name == "mlc.dataflow"]:
            body = [o.operation for o in df.regions[0].blocks[0].operations][:-2]
            for group in partition(body, shapes, funcs):
                name = unique_symbol(module, _group_name(group))
                outline_ops(module, group, name, shapes)
                created.append(name)
                for o in reversed(group):
                    o.erase()
    return created
