"""``FuseTIR``: each primitive function of ``call_tir``'s becomes one tensor program.

After ``FuseOps`` (or ``FuseDenseAddPass``) and ``LegalizeOps``, a primitive function is
a chain of calls of tensor programs:

    func.func private @fused_matmul_add_relu(%x, %w, %b) attributes {mlc.graph, mlc.primitive}
      %lv0 = "mlc.call_tir"(%x, %w) {callee = @matmul} ...
      %lv1 = "mlc.call_tir"(%lv0, %b) {callee = @add} ...
      %lv2 = "mlc.call_tir"(%lv1) {callee = @relu} ...

FuseTIR merges it into one tensor program of the same name (docs/conventions.md form):

1. the function is lowered like a graph (:mod:`.lower`): each call gets a
   ``tensor.empty`` output (sizes from ``tensor.dim`` of the parameter carrying a
   symbolic dimension) and becomes a ``func.call``; the last call writes into the new
   output parameter;
2. the callees are inlined (``inline,symbol-dce,canonicalize,cse``): the intermediates
   are ``tensor.empty``, every computation keeps its ``mlc.block`` name (made unique:
   a second ``add`` becomes ``add_1``);
3. ``linalg-fuse-elementwise-ops`` merges elementwise producers into their consumers
   (the add and the relu become one ``linalg.generic``, named after the consumer, as
   TVM's ``compute_inline`` keeps the consumer block; a transpose feeding a matmul
   becomes the matmul's indexing map); a reduction stays its own op.

The graph then calls the result with one ``mlc.call_tir``; the tensor programs that
nothing calls any more are removed.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import tensor

from ...compiler.pipeline import run_pipeline
from ...errors import GraphError, LoweringError
from ...irutil import symbol_ops
from ..ir.analysis import (PRIMITIVE_ATTR, fail, func_name, graph_functions, is_primitive, remove_unused_ops, value_shapes,
                           walk_ops)
from ..builder.emit import CALL_SLOTS, create_op, segment_sizes
from ...tensor_types import shape_attr
from .lower import lower_graph_functions
from .outline import call_result_shape, erase_unreferenced
from ...schedule.payload import name_blocks, strip_casts

__all__ = ["fuse_tir", "fuse_primitive", "INLINE_PASSES", "FUSE_PASSES"]

#: merge the tensor programs of a primitive function into it
INLINE_PASSES = "inline,symbol-dce,canonicalize,cse"
#: then fuse elementwise producers into consumers
FUSE_PASSES = "linalg-fuse-elementwise-ops,canonicalize,cse"

_TENSOR_LEVEL = ("mlc.call_tir", "mlc.constant", "mlc.dataflow", "mlc.output", "omp.terminator",
                 "tensor.cast", "func.return")


def _terminator(fop: ir.Operation) -> ir.Operation:
    block = fop.regions[0].blocks[0]
    return block.operations[len(block.operations) - 1].operation


def _check_tensor_level(fop: ir.Operation, funcs: dict[str, ir.Operation]) -> list[str]:
    """The callees of a primitive function that FuseTIR can merge; GraphError otherwise."""
    name = func_name(fop)
    callees: list[str] = []
    for o in walk_ops(fop):
        if o.name == "mlc.call_dps":
            raise fail(o, f"FuseTIR: @{name} calls an environment function; only call_tir of tensor "
                          "programs can be fused into one tensor program")
        if o.name.startswith("mlc.") and o.name not in _TENSOR_LEVEL:
            raise fail(o, f"FuseTIR: @{name} still has graph op {o.name}; run LegalizeOps first "
                          "(FuseOps -> LegalizeOps -> FuseTIR)")
        if o.name not in _TENSOR_LEVEL:
            raise fail(o, f"FuseTIR: @{name} has op {o.name}, which FuseTIR does not merge")
        if o.name == "mlc.call_tir":
            callee = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
            ftype = ir.FunctionType(ir.TypeAttr(funcs[callee].attributes["function_type"]).value)
            if not all(isinstance(t, ir.RankedTensorType) for t in ftype.inputs):
                raise fail(o, f"FuseTIR: @{callee} is a memref-form tensor program; only tensor-form "
                              "programs can be merged")
            if callee not in callees:
                callees.append(callee)
    if len(_terminator(fop).operands) != 1:
        raise fail(fop, f"FuseTIR: @{name} must return exactly one tensor")
    return callees


def _write_into_output(fop: ir.Operation) -> None:
    """Make the op computing the returned value write into the output parameter."""
    block = fop.regions[0].blocks[0]
    out = block.arguments[len(block.arguments) - 1]
    v = strip_casts(_terminator(fop).operands[0])
    if isinstance(v.owner, ir.Block):
        return
    target = v.owner.operation
    for _ in range(4):
        if not target.operands:
            return
        init = strip_casts(target.operands[len(target.operands) - 1])
        if isinstance(init.owner, ir.Block):
            return
        src = init.owner.operation
        if src.name == "linalg.fill":
            target = src
            continue
        if src.name == "tensor.empty":
            want = target.operands[len(target.operands) - 1].type
            value = out
            if str(out.type) != str(want):
                with ir.InsertionPoint(target), target.location:
                    value = tensor.CastOp(want, out).result
            target.operands[len(target.operands) - 1] = value
        return


def _run(module: ir.Module, passes: str, what: str) -> None:
    try:
        run_pipeline(module, passes, stage=f"FuseTIR {what}")
    except LoweringError as exc:
        raise GraphError(f"FuseTIR: merging @{what} failed: {exc}") from None


def fuse_primitive(fop: ir.Operation, callees: list[ir.Operation]) -> ir.Module:
    """The tensor program that primitive function ``fop`` (calling ``callees``) becomes.

    Returns:
        A new module holding one public ``func.func`` named like ``fop`` with the
        ``mlc.prim_func`` attribute.
    """
    name = func_name(fop)
    tmp = ir.Module.create()
    with ir.InsertionPoint(tmp.body):
        prim = fop.clone()
        for c in callees:
            c.clone()
    if "sym_visibility" in prim.attributes:
        del prim.attributes["sym_visibility"]
    lower_graph_functions(tmp)
    prim = tmp.body.operations[0].operation
    _write_into_output(prim)  # the last call writes into the output parameter
    _run(tmp, INLINE_PASSES, name)
    left = list(symbol_ops(tmp))
    calls = [o for o in walk_ops(prim) if o.name == "func.call"]
    if left != [name] or calls:
        raise GraphError(f"FuseTIR: could not inline every tensor program into @{name} "
                         f"(left: {', '.join('@' + n for n in left)})")
    name_blocks(prim)
    _run(tmp, FUSE_PASSES, name)
    name_blocks(prim)
    _write_into_output(prim)
    remove_unused_ops(prim, set())  # the outputs fusion replaced
    for attr in ("mlc.lowered_graph", PRIMITIVE_ATTR, "mlc.graph"):
        if attr in prim.attributes:
            del prim.attributes[attr]
    prim.attributes["mlc.prim_func"] = ir.UnitAttr.get()
    return tmp


def fuse_tir(module: ir.Module) -> list[str]:
    """Turn every primitive graph function of ``module`` into one tensor program, in place.

    Returns:
        The names of the fused tensor programs.

    Raises:
        GraphError: a primitive function with graph ops left (LegalizeOps not run),
            environment calls, memref-form callees, or several results.
    """
    funcs = symbol_ops(module)
    prims = [f for f in graph_functions(module) if is_primitive(f)]
    fused: list[str] = []
    old_callees: set[str] = set()
    for fop in prims:
        name = func_name(fop)
        callees = _check_tensor_level(fop, funcs)
        old_callees.update(callees)
        result_shape = value_shapes(fop)[_terminator(fop).operands[0]][0]
        tmp = fuse_primitive(fop, [funcs[c] for c in callees])
        new = tmp.body.operations[0].operation.clone(ip=ir.InsertionPoint(fop))
        _replace_calls(module, name, fop, result_shape)
        fop.erase()
        funcs[name] = new.operation
        fused.append(name)
    erase_unreferenced(module, old_callees - set(fused))
    return fused


def _replace_calls(module: ir.Module, name: str, prim: ir.Operation, result_shape: tuple) -> None:
    """``func.call @name(...)`` in graph functions -> ``mlc.call_tir(...) {callee = @name}``."""
    for g in graph_functions(module):
        if g == prim:
            continue
        calls = [o for o in walk_ops(g) if o.name == "func.call"
                 and ir.FlatSymbolRefAttr(o.attributes["callee"]).value == name]
        if not calls:
            continue
        shapes = value_shapes(g)
        for call in calls:
            if len(call.operands) > CALL_SLOTS:
                raise fail(call, f"FuseTIR: @{name} takes {len(call.operands)} arguments; call_tir takes "
                                 f"at most {CALL_SLOTS}")
            attrs = {"callee": ir.FlatSymbolRefAttr.get(name),
                     "operandSegmentSizes": segment_sizes(len(call.operands), CALL_SLOTS, "call_tir")}
            if "mlc.shape" in call.attributes:
                attrs["mlc.shape"] = call.attributes["mlc.shape"]
            else:
                shape = call_result_shape(shapes, call, result_shape, prim)
                if any(isinstance(d, str) for d in shape):
                    attrs["mlc.shape"] = shape_attr(shape)
            with ir.InsertionPoint(call):
                new = create_op("mlc.call_tir", list(call.operands), call.results[0].type, attrs, call.location)
            call.results[0].replace_all_uses_with(new.result)
            call.erase()
