"""Read the blocks of a tensor program: what a schedule needs to know about the payload.

A block is a linalg op marked ``mlc.block = "<name>"`` (see docs/conventions.md). This
module reads, once per schedule, each block's iteration space (extents, parallel or
reduction dims), its indexing maps, where its operands come from (function argument,
another block, its init fill) and which blocks consume its result. Named ops (such as
``linalg.matmul``) are read through a generalized copy of the module, so every block is
described the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.passmanager import PassManager

from ..irutil import symbol_ops, walk_ops
from ..errors import ScheduleError

__all__ = ["BlockInfo", "Source", "read_blocks", "func_names", "name_blocks", "strip_casts", "compose_groups"]


@dataclass(frozen=True)
class Source:
    """Where an operand comes from: ``kind`` is "arg", "block", "init", "view" or "value".

    A "view" is a ``tensor.collapse_shape`` / ``expand_shape`` of block ``name``'s result;
    ``groups`` pairs its dims with the block's: ``(operand dims, block dims)`` per
    reassociation group (a collapse of block dims ``[2, 3]`` into operand dim 2:
    ``((2,), (2, 3))``)."""

    kind: str
    name: str
    index: int = -1
    groups: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class BlockInfo:
    """One block (linalg op) of a tensor program.

    ``maps[o][r]`` is the iteration dim that indexes dim ``r`` of operand ``o`` (``None``
    when that index is not a plain dim). Operands are the op's inputs then its output.
    """

    name: str
    func: str
    order: int
    op_name: str
    extents: tuple[int | None, ...]
    iters: tuple[str, ...]
    maps: tuple[tuple[int | None, ...], ...]
    shapes: tuple[tuple[int | None, ...], ...]
    sources: tuple[Source, ...]
    n_inputs: int
    has_init: bool
    element_type: str
    loop_names: tuple[str, ...] = ()
    body: tuple[str, ...] = ()
    #: the function returns the result (directly or through a reshape), besides any block reading it
    returned: bool = False

    @property
    def ndims(self) -> int:
        return len(self.extents)

    def is_reduction(self, dim: int) -> bool:
        return self.iters[dim] == "reduction"


def func_names(module: ir.Module) -> list[str]:
    """Names of the module's ``func.func`` ops with a body."""
    return list(symbol_ops(module, defined=True))


def _linalg_ops(func: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = child.operation
                    if child.name.startswith("linalg."):
                        found.append(child)
                    else:
                        walk(child)

    walk(func)
    return found


def _dim_positions(amap: ir.AffineMap) -> tuple[int | None, ...]:
    return tuple(e.position if isinstance(e, ir.AffineDimExpr) else None for e in amap.results)


def _shape(value: ir.Value) -> tuple[int | None, ...]:
    t = value.type
    if not isinstance(t, ir.ShapedType) and not ir.ShapedType.isinstance(t):
        return ()
    st = ir.ShapedType(t)
    if not st.has_rank:
        return ()
    return tuple(None if st.is_dynamic_dim(i) else st.get_dim_size(i) for i in range(st.rank))


def _element_type(value: ir.Value) -> str:
    t = value.type
    try:
        return str(ir.ShapedType(t).element_type)
    except ValueError:
        return str(t)


def _source(value: ir.Value, arg_names: dict[int, str]) -> Source:
    owner = value.owner
    if isinstance(owner, ir.Block):
        idx = ir.BlockArgument(value).arg_number
        return Source("arg", arg_names.get(idx, f"arg{idx}"), idx)
    op = owner.operation if hasattr(owner, "operation") else owner
    attrs = op.attributes
    if op.name == "tensor.extract_slice" and isinstance(op.operands[0].owner, ir.Block):
        arg = _source(op.operands[0], arg_names)  # a window of an argument reads that tensor
        if arg.kind == "arg":
            return arg
    if "mlc.block" in attrs:
        return Source("block", ir.StringAttr(attrs["mlc.block"]).value)
    if op.name in ("tensor.collapse_shape", "tensor.expand_shape"):
        inner = _source(op.operands[0], arg_names)
        if inner.kind in ("block", "view"):
            groups = [tuple(ir.IntegerAttr(d).value for d in ir.ArrayAttr(g))
                      for g in ir.ArrayAttr(attrs["reassociation"])]
            pairs = tuple(((r,), g) for r, g in enumerate(groups)) if op.name == "tensor.collapse_shape" else \
                tuple((g, (q,)) for q, g in enumerate(groups))
            return Source("view", inner.name,
                          groups=pairs if inner.kind == "block" else compose_groups(pairs, inner.groups))
    if "mlc.block_init" in attrs:
        return Source("init", ir.StringAttr(attrs["mlc.block_init"]).value)
    return Source("value", op.name)


def compose_groups(outer: tuple, inner: tuple) -> tuple:
    """The groups of a view of a view: ``outer`` pairs (operand dims, middle dims),
    ``inner`` pairs (middle dims, block dims); the groups that share a middle dim merge
    (a convolution's result in bands ``(n, f, band, rows * ow)`` expanded to
    ``(n, f, band, rows, ow)`` and collapsed to NCHW: ``((2, 3), (2, 3))``, oh and ow
    against band and the band's pixels)."""
    merged: list[tuple[set[int], set[int], set[int]]] = []  # (operand dims, middle dims, block dims)
    for odims, mdims in outer:
        merged.append((set(odims), set(mdims), set()))
    for mdims, bdims in inner:
        hit = [g for g in merged if g[1] & set(mdims)]
        group = (set().union(*(g[0] for g in hit)), set(mdims).union(*(g[1] for g in hit)),
                 set(bdims).union(*(g[2] for g in hit)))
        merged = [g for g in merged if not any(g is h for h in hit)] + [group]
    return tuple(sorted((tuple(sorted(o)), tuple(sorted(b))) for o, _, b in merged))


def _arg_names(func: ir.Operation) -> dict[int, str]:
    names: dict[int, str] = {}
    if "arg_attrs" not in func.attributes:
        return names
    for i, attr in enumerate(ir.ArrayAttr(func.attributes["arg_attrs"])):
        d = ir.DictAttr(attr)
        if "mlc.name" in d:
            names[i] = ir.StringAttr(d["mlc.name"]).value
    return names


def read_blocks(module: ir.Module) -> dict[tuple[str, str], BlockInfo]:
    """Every block of every function of ``module`` keyed by ``(func_name, block_name)``.

    Must be called inside the shared context. Raises ScheduleError on a block name used
    twice in one function.
    """
    generic = ir.Module.parse(module.operation.get_asm(print_generic_op_form=True))
    PassManager.parse("builtin.module(func.func(linalg-generalize-named-ops))").run(generic.operation)
    originals = symbol_ops(module, defined=True)
    blocks: dict[tuple[str, str], BlockInfo] = {}
    for fname, gfunc in symbol_ops(generic, defined=True).items():
        ops, gops = _linalg_ops(originals[fname]), _linalg_ops(gfunc)
        if len(ops) != len(gops):
            raise ScheduleError(f"function @{fname}: cannot read its linalg ops")
        arg_names = _arg_names(originals[fname])
        order = 0
        for op, gop in zip(ops, gops):
            if "mlc.block" not in op.attributes:
                continue
            name = ir.StringAttr(op.attributes["mlc.block"]).value
            if (fname, name) in blocks:
                raise ScheduleError(f"function @{fname} has two blocks named {name!r}")
            blocks[(fname, name)] = _describe(name, fname, order, op, gop, arg_names)
            order += 1
    return blocks


def _describe(name: str, fname: str, order: int, op: ir.Operation, gop: ir.Operation,
              arg_names: dict[int, str]) -> BlockInfo:
    maps = tuple(_dim_positions(ir.AffineMapAttr(m).value) for m in ir.ArrayAttr(gop.attributes["indexing_maps"]))
    iters = tuple("reduction" if "reduction" in str(a) else "parallel"
                  for a in ir.ArrayAttr(gop.attributes["iterator_types"]))
    operands = list(op.operands)
    n_out = len(op.results)
    n_inputs = len(operands) - n_out
    shapes = tuple(_shape(v) for v in operands)
    extents: list[int | None] = [None] * len(iters)
    known = [False] * len(iters)
    for m, shp in zip(maps, shapes):
        for r, d in enumerate(m):
            if d is not None and r < len(shp) and not known[d]:
                extents[d] = shp[r]
                known[d] = shp[r] is not None
    sources = tuple(_source(v, arg_names) for v in operands)
    has_init = n_out == 1 and sources[-1].kind == "init" and sources[-1].name == name
    return BlockInfo(name=name, func=fname, order=order, op_name=op.name, extents=tuple(extents),
                     iters=iters, maps=maps, shapes=shapes, sources=sources, n_inputs=n_inputs,
                     has_init=has_init, element_type=_element_type(operands[-1]),
                     loop_names=_loop_names(op, len(iters)),
                     body=tuple(o.operation.name for o in gop.regions[0].blocks[0].operations),
                     returned=_returned(op))


def _returned(op: ir.Operation) -> bool:
    """Whether a result of ``op`` reaches the function's ``func.return`` (through reshapes)."""
    values = list(op.results)
    while values:
        v = values.pop()
        for use in v.uses:
            name = use.owner.name
            if name == "func.return":
                return True
            if name in ("tensor.collapse_shape", "tensor.expand_shape"):
                values.extend(use.owner.results)
    return False


def _loop_names(op: ir.Operation, n: int) -> tuple[str, ...]:
    """Names from an ``mlc.loop_names = ["i", "j", "k"]`` attribute (te's axis names)."""
    if "mlc.loop_names" not in op.attributes:
        return ()
    names = tuple(ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["mlc.loop_names"]))
    return names if len(names) == n else ()


def strip_casts(v: ir.Value) -> ir.Value:
    """``v`` before any ``tensor.cast``s."""
    while not isinstance(v.owner, ir.Block) and v.owner.operation.name == "tensor.cast":
        v = v.owner.operation.operands[0]
    return v


def _init_fill(op: ir.Operation) -> ir.Operation | None:
    init = strip_casts(op.operands[len(op.operands) - 1])
    if not isinstance(init.owner, ir.Block) and init.owner.operation.name == "linalg.fill":
        return init.owner.operation
    return None


def name_blocks(fop: ir.Operation) -> None:
    """Give every linalg op of function ``fop`` a unique ``mlc.block`` name (with matching
    ``mlc.block_init`` on its init fill), kept in its location too.

    Passes that replace ops (``linalg-fuse-elementwise-ops``, inlining) keep locations but
    drop attributes: an op without a name takes the name its location carries ("fused" if
    none); a name used twice becomes ``add``, ``add_1``...
    """
    seen: set[str] = set()
    for op in walk_ops(fop):
        if not op.name.startswith("linalg.") or op.name in ("linalg.fill", "linalg.yield", "linalg.index"):
            continue
        if "mlc.block" in op.attributes:
            base = ir.StringAttr(op.attributes["mlc.block"]).value
        else:
            base = op.location.name_str if op.location.is_a_name() else "fused"
        name, k = base, 1
        while name in seen:
            name, k = f"{base}_{k}", k + 1
        seen.add(name)
        op.attributes["mlc.block"] = ir.StringAttr.get(name)
        op.location = ir.Location.name(name)
        fill = _init_fill(op)
        if fill is not None:
            fill.attributes["mlc.block_init"] = ir.StringAttr.get(name)
