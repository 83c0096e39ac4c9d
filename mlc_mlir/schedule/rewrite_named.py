"""Named ops replaced by tensor programs built in te, before the default rules run: the
machinery the convolution strategy (:mod:`.conv_gemm`) and the window strategy
(:mod:`.windows`) share.

:func:`rewrite_named` calls a helper per op (it builds a tensor program and names the
operands to call it with), calls the program in the op's place and inlines it; then only
canonicalize and CSE run (no elementwise fusion: it would inline all-parallel computes
such as im2col into their consumers), and the function's blocks are named again. The
helpers read their op's producers with :func:`constant_fill` (the init) and
:func:`pad_hw_source` (a ``tensor.pad`` read in place), and mark their padded copies of
narrow rows with :func:`pad_by_copy`, which :func:`copy_pads` turns into a fill and a row
copy once the programs are inlined.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, func, linalg, tensor
from mlir.passmanager import PassManager

from ..context import diagnostics_text, mlc_context
from ..errors import ScheduleError
from ..ir import Module
from ..irutil import sym_name, symbol_ops, walk_ops
from .payload import name_blocks

__all__ = ["Helper", "rewrite_named", "rewrite_generics", "rename_blocks", "constant_fill", "pad_hw_source",
           "static_shape", "pad_by_copy", "copy_pads", "COPY_PAD_ROW_MULTIPLE", "COPY_PAD_MAX_BYTES"]

#: a padded copy (:func:`pad_by_copy`) is a fill and a copy of the input's rows where the
#: input's rows are no multiple of this many pixels (vectors of 8 lanes)
COPY_PAD_ROW_MULTIPLE = 8
#: ... and the padded tensor is at most this size (the fill writes it whole, then the copy
#: its interior: twice the writes of the gathers, which pays in cache and not past it;
#: MobileNet-v2 at batch 8, two threads: the same time either way, 3% of it in the fills'
#: memset; writing the border alone instead was slower still, its columns scalar stores)
COPY_PAD_MAX_BYTES = 1 << 20

#: builds the tensor program that replaces one named op: (its operands, a module holding
#: the program ``name``), or None to leave the op as it is
Helper = Callable[[ir.Operation, str], "tuple[list[ir.Value], Module] | None"]


def rewrite_named(mod: Module, ops: tuple[str, ...], helper: Helper, stage: str) -> Module:
    """``mod`` with each op named in ``ops`` that ``helper`` takes replaced by the tensor
    program it builds, inlined (a copy; ``mod`` itself when no function has such ops).

    The program is called in the op's place and inlined; then only canonicalize and CSE
    run (no elementwise fusion: it would inline all-parallel computes such as im2col into
    their consumers), and the function's blocks are named again (:func:`name_blocks`)."""
    with mlc_context():
        found = symbol_ops(mod.mlir_module, defined=True)
        texts = {name: op.get_asm(large_elements_limit=None) for name, op in found.items() if walk_ops(op, ops)}
    if not texts:
        return mod
    out = mod.clone()
    for fname, text in texts.items():
        rewritten = _rewrite(text, fname, ops, helper, stage)
        if rewritten is not None:
            out.update_func(fname, rewritten)
    return out


def _rewrite(text: str, fname: str, names: tuple[str, ...], helper: Helper, stage: str) -> Module | None:
    work = Module.parse("module {\n" + text + "\n}")
    with mlc_context():
        body = work.mlir_module.body
        fop = symbol_ops(work.mlir_module, defined=True)[fname]
        helpers = 0
        for target in walk_ops(fop, names):
            hname = f"__mlc_{stage.replace('-', '_')}_{helpers}"
            built = helper(target, hname)
            if built is None:
                continue
            operands, hmod = built  # the module is kept alive while its function is cloned
            with ir.InsertionPoint(body):
                new = symbol_ops(hmod.mlir_module, defined=True)[hname].clone()
            new.attributes["sym_visibility"] = ir.StringAttr.get("private")
            with ir.InsertionPoint(target), target.location:
                call = func.CallOp([target.results[0].type], sym_name(new), operands)
            target.results[0].replace_all_uses_with(call.results[0])
            target.erase()
            helpers += 1
        if not helpers:
            return None
        private = fop.attributes["sym_visibility"] if "sym_visibility" in fop.attributes else None
        if private is not None:
            del fop.attributes["sym_visibility"]
    _run_passes(work.mlir_module, "inline,symbol-dce,canonicalize,cse", stage=f"{stage} @{fname}")
    with mlc_context():
        fop = symbol_ops(work.mlir_module, defined=True)[fname]
        name_blocks(fop)
        if private is not None:
            fop.attributes["sym_visibility"] = private
    return work


def _run_passes(module: ir.Module, passes: str, *, stage: str) -> None:
    """Run pipeline ``passes`` on ``module``; ScheduleError naming ``stage`` on failure
    (``compiler.pipeline.run_pipeline`` does this one layer up, out of this layer's reach)."""
    with mlc_context():
        try:
            PassManager.parse(f"builtin.module({passes})").run(module.operation)
        except ir.MLIRError as exc:
            raise ScheduleError(f"{stage}: {passes} failed:\n{diagnostics_text(exc)}") from None


def static_shape(t: ir.Type) -> list[int | None]:
    """The dims of a ranked tensor type, None where dynamic."""
    st = ir.RankedTensorType(t)
    return [None if st.is_dynamic_dim(i) else st.get_dim_size(i) for i in range(st.rank)]


def _float_constant(value: ir.Value) -> float | None:
    if isinstance(value.owner, ir.Block) or value.owner.operation.name != "arith.constant":
        return None
    attr = value.owner.operation.attributes["value"]
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def constant_fill(value: ir.Value) -> tuple[ir.Value, float] | None:
    """(the destination, the value) when ``value`` is a ``linalg.fill`` of a float
    constant, else None."""
    if isinstance(value.owner, ir.Block) or value.owner.operation.name != "linalg.fill":
        return None
    fill = value.owner.operation
    const = _float_constant(fill.operands[0])
    return None if const is None else (fill.operands[1], const)


def pad_hw_source(value: ir.Value) -> tuple[ir.Value, tuple[int, int, int, int], float | None]:
    """(the source, (top, left, bottom, right), the padding value) when ``value`` is a
    ``tensor.pad`` of a float constant around H and W only (read in place by the
    rewritten op), else (``value``, no padding, None)."""
    none = (value, (0, 0, 0, 0), None)
    if isinstance(value.owner, ir.Block) or value.owner.operation.name != "tensor.pad":
        return none
    pad = value.owner.operation
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    if len(pad.operands) != 1 or len(low) != 4 or low[:2] != [0, 0] or high[:2] != [0, 0] or min(low + high) < 0:
        return none  # dynamic or negative widths (operands beyond the source), or padded N / C
    body = pad.regions[0].blocks[0]
    const = _float_constant(body.operations[len(body.operations) - 1].operands[0])
    if const is None:
        return none
    return pad.operands[0], (low[2], low[3], high[2], high[3]), const


def rename_blocks(hfunc: ir.Operation, main: str, block: str) -> None:
    """Blocks of a helper program renamed after the op it replaces: ``main`` becomes
    ``block``, ``main_<x>`` becomes ``block_<x>``."""
    for op in walk_ops(hfunc):
        for attr in ("mlc.block", "mlc.block_init"):
            if attr in op.attributes:
                old = ir.StringAttr(op.attributes[attr]).value
                new = block if old == main else f"{block}_{old.removeprefix(main + '_')}"
                op.attributes[attr] = ir.StringAttr.get(new)


def rewrite_generics(mod: Module, wants: Callable[[ir.Operation], bool],
                     rewrite: Callable[[ir.Operation], bool]) -> Module:
    """``mod`` with ``rewrite`` (in place, True if it changed the op) applied to every
    ``linalg.generic`` of each function holding one that ``wants`` (a copy; ``mod`` itself
    when nothing changes). Each function is rewritten in a module of its own; one that then
    does not verify is left as it was."""
    with mlc_context():
        texts = {name: op.get_asm(large_elements_limit=None)
                 for name, op in symbol_ops(mod.mlir_module, defined=True).items()
                 if any(wants(g) for g in walk_ops(op, ("linalg.generic",)))}
    out = None
    for fname, text in texts.items():
        work = Module.parse("module {\n" + text + "\n}")
        with mlc_context():
            fop = symbol_ops(work.mlir_module, defined=True)[fname]
            changed = [rewrite(g) for g in walk_ops(fop, ("linalg.generic",))]
            try:
                ok = any(changed) and fop.verify()
            except ir.MLIRError:  # (not expected: the function is then left as it was)
                ok = False
        if ok:
            out = out or mod.clone()
            out.update_func(fname, work)
    return out or mod


#: the attribute marking a padded copy for :func:`copy_pads`: (top, left, value)
_PAD_MARK = "mlc.pad_by_copy"


def pad_by_copy(hfunc: ir.Operation, source: ir.Value, top_left: tuple[int, int], value: float) -> bool:
    """Mark, in helper program ``hfunc``, the compute that pads ``source`` (NCHW, static
    shape) with ``top_left`` rows and columns before it (and as many after as its result
    holds; ``value`` outside) for :func:`copy_pads`, where ``source``'s rows are no multiple
    of :data:`COPY_PAD_ROW_MULTIPLE` pixels and the padded tensor holds at most
    :data:`COPY_PAD_MAX_BYTES`: it becomes a fill and a copy of the rows once the helper is
    inlined (canonicalization would fold the copy, an identity generic, into an
    ``insert_slice``: a ``memref.copy`` at run time, 3-5x slower than the gathers). True if
    marked: the compute found (a generic without inputs whose result is ``source`` padded,
    reading ``source`` with ``tensor.extract``)."""
    src_shape = static_shape(source.type)
    if None in src_shape or len(src_shape) != 4 or src_shape[3] % COPY_PAD_ROW_MULTIPLE == 0:
        return False
    top, left = top_left

    def padded(shape: list[int | None]) -> bool:
        return (len(shape) == 4 and shape[:2] == src_shape[:2] and None not in shape
                and shape[2] >= src_shape[2] + top and shape[3] >= src_shape[3] + left)

    pad = next((g for g in walk_ops(hfunc, ("linalg.generic",))
                if len(g.operands) == 1 and len(g.results) == 1 and padded(static_shape(g.results[0].type))
                and any(op.name == "tensor.extract" and op.operands[0] == source
                        for op in g.regions[0].blocks[0].operations)), None)
    if pad is None or not any(top_left) and static_shape(pad.results[0].type) == src_shape:
        return False
    out_type = ir.RankedTensorType(pad.results[0].type)
    if math.prod(out_type.shape) * out_type.element_type.width // 8 > COPY_PAD_MAX_BYTES:
        return False
    i64 = ir.IntegerType.get_signless(64)
    pad.attributes[_PAD_MARK] = ir.ArrayAttr.get([ir.IntegerAttr.get(i64, top), ir.IntegerAttr.get(i64, left),
                                                  ir.FloatAttr.get_f64(value)])
    return True


def copy_pads(mod: Module) -> Module:
    """``mod`` with each padded copy marked by :func:`pad_by_copy` as a fill of the padded
    tensor (block ``<pad>_fill``) and a copy of the source into its interior (the pad's own
    block, an identity ``linalg.generic`` writing an ``extract_slice`` of the fill, put back
    with ``insert_slice``): the pad as written (a select of clamped reads per padded pixel)
    is a vector gather per 8 pixels; the copy loads and stores the rows as they are.
    Padded copies alone, one thread (this way against the gathers): 576 channels at 14 x 14
    0.039 against 0.091 ms, 384 x 14 x 14 0.027 / 0.061, 960 x 7 x 7 0.031 / 0.066, 192 x 28
    x 28 0.052 / 0.062, 256 x 14 x 14 0.017 / 0.048; at 56 x 56 and wider the gathers were
    as fast or faster (64 x 56 x 56: 0.067 / 0.059, 32 x 112 x 112: 0.107 / 0.092), which
    :data:`COPY_PAD_ROW_MULTIPLE` leaves as they are. Runs after the helpers are inlined,
    with no canonicalization after it (a copy; ``mod`` itself when nothing is marked)."""
    return rewrite_generics(mod, lambda g: _PAD_MARK in g.attributes, _copy_pad)


def _copy_pad(pad: ir.Operation) -> bool:
    if _PAD_MARK not in pad.attributes:
        return False
    mark = list(ir.ArrayAttr(pad.attributes[_PAD_MARK]))
    top, left = (ir.IntegerAttr(a).value for a in mark[:2])
    value = ir.FloatAttr(mark[2]).value
    source = next(op.operands[0] for op in pad.regions[0].blocks[0].operations if op.name == "tensor.extract")
    src_type = ir.RankedTensorType(source.type)
    block = ir.StringAttr(pad.attributes["mlc.block"]).value if "mlc.block" in pad.attributes else "pad"
    padded_type = ir.RankedTensorType(pad.results[0].type)
    par = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(4))
    with ir.InsertionPoint(pad), pad.location:
        fill = linalg.GenericOp([padded_type], [], [pad.operands[0]], ir.ArrayAttr.get([identity]),
                                ir.ArrayAttr.get([par] * 4))
        fill.attributes["mlc.block"] = ir.StringAttr.get(f"{block}_fill")
        fbody = fill.regions[0].blocks.append(src_type.element_type)
        with ir.InsertionPoint(fbody):
            linalg.YieldOp([arith.ConstantOp(src_type.element_type, value).result])
        offsets, sizes = [0, 0, top, left], list(src_type.shape)
        inner = tensor.ExtractSliceOp(src_type, fill.results[0], [], [], [], offsets, sizes, [1] * 4).result
        copy = linalg.GenericOp([src_type], [source], [inner], ir.ArrayAttr.get([identity, identity]),
                                ir.ArrayAttr.get([par] * 4))
        copy.attributes["mlc.block"] = ir.StringAttr.get(block)
        cbody = copy.regions[0].blocks.append(src_type.element_type, src_type.element_type)
        with ir.InsertionPoint(cbody):
            linalg.YieldOp([cbody.arguments[0]])
        put = tensor.InsertSliceOp(copy.results[0], fill.results[0], [], [], [], offsets, sizes, [1] * 4).result
    pad.results[0].replace_all_uses_with(put)
    pad.erase()
    return True
