"""``verify_graph``: the checks of graph functions that IRDL cannot express.

IRDL checks operand kinds and attribute presence (dialects/mlc.irdl.mlir). This module
checks the rest, on every graph function of a module:

- shapes: each graph op's operands are accepted by its rule (matmul inner dimensions,
  broadcasting...) and its result type agrees with the inferred shape;
- callees: ``mlc.call_tir`` names a ``func.func`` of the module whose parameters are the
  arguments plus one output of the result type; ``mlc.call_dps`` names an environment
  function (and, with ``check_env=True``, one that is registered);
- dataflow blocks: one block ending in ``mlc.output`` + ``omp.terminator``, whose
  operand types are the block's result types; no nested blocks; only pure ops inside
  (graph ops, calls, constants, ``arith``/``math``/``tensor`` ops, calls of graph
  functions); ``mlc.output`` nowhere else;
- ``mlc.constant``: a ``dense``/``dense_resource`` value of the result type.
"""

from __future__ import annotations

from mlir import ir

from ...context import mlc_context
from ...ir import Module
from ...irutil import symbol_ops
from ...runtime import list_funcs
from .analysis import (PURE_DIALECTS, PURE_MLC_OPS, elements_type, fail, func_name, graph_functions,
                       is_graph_function, types_compatible, value_shapes, walk_ops)

__all__ = ["verify_graph"]


def verify_graph(mod: Module | ir.Module, *, check_env: bool = False) -> None:
    """Check every graph function of ``mod``; raise :class:`GraphError` at the first problem.

    Args:
        mod: the module (``mlc.Module`` or ``mlir.ir.Module``).
        check_env: also require each ``mlc.call_dps`` callee to be registered with
            ``mlc.register_func`` (``mlc.graph.build`` does).

    Raises:
        GraphError: the message starts with ``'<op name>' op`` and the error carries the
            op's source line as ``.line`` (``mlc-opt --verify-diagnostics`` uses it).
    """
    module = mod.mlir_module if isinstance(mod, Module) else mod
    with mlc_context():
        funcs = symbol_ops(module)
        for fop in graph_functions(module):
            _verify_function(fop, funcs, check_env)


def _verify_function(fop: ir.Operation, funcs: dict[str, ir.Operation], check_env: bool) -> None:
    if not fop.regions[0].blocks:
        raise fail(fop, f"graph function @{func_name(fop)} has no body")
    if len(fop.regions[0].blocks) != 1:
        raise fail(fop, f"graph function @{func_name(fop)} must have a single block")
    for i, arg in enumerate(fop.regions[0].blocks[0].arguments):
        if not isinstance(arg.type, ir.RankedTensorType):
            raise fail(fop, f"graph function @{func_name(fop)}: parameter {i} has type {arg.type}; "
                            "graph functions take ranked tensors")
    value_shapes(fop)  # shape rules of every graph op
    for op in walk_ops(fop):
        name = op.name
        if name == "mlc.dataflow":
            _verify_dataflow(op, funcs)
        elif name == "mlc.output":
            parent = op.parent
            if parent is None or parent.name != "mlc.dataflow":
                raise fail(op, "must be the end of an mlc.dataflow region")
        elif name == "mlc.call_tir":
            _verify_call_tir(op, funcs)
        elif name == "mlc.call_dps":
            _verify_call_dps(op, check_env)
        elif name == "mlc.constant":
            _verify_constant(op)


def _verify_dataflow(op: ir.Operation, funcs: dict[str, ir.Operation]) -> None:
    blocks = list(op.regions[0].blocks)
    if len(blocks) != 1:
        raise fail(op, f"expects one block in its region, got {len(blocks)}")
    ops = list(blocks[0].operations)
    if len(ops) < 2 or ops[-1].name != "omp.terminator" or ops[-2].name != "mlc.output":
        raise fail(op, "region must end with \"mlc.output\"(...) followed by \"omp.terminator\"()")
    out = ops[-2]
    out_types = [v.type for v in out.operands]
    res_types = [r.type for r in op.results]
    if [str(t) for t in out_types] != [str(t) for t in res_types]:
        raise fail(op, f"result types ({', '.join(map(str, res_types))}) differ from the mlc.output "
                       f"operand types ({', '.join(map(str, out_types))})")
    for inner in ops[:-2]:
        _check_pure(inner, funcs)
        for nested in walk_ops(inner):
            _check_pure(nested, funcs)


def _check_pure(op: ir.Operation, funcs: dict[str, ir.Operation]) -> None:
    name = op.name
    dialect = name.split(".", 1)[0]
    if dialect == "mlc":
        if name == "mlc.dataflow":
            raise fail(op, "dataflow blocks cannot be nested")
        if name[4:] not in PURE_MLC_OPS:
            raise fail(op, "has side effects and is not allowed inside an mlc.dataflow block "
                           "(move it out of the dataflow block)")
        return
    if dialect in PURE_DIALECTS or name in ("linalg.yield",):
        return
    if name == "func.call":
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        if callee in funcs and is_graph_function(funcs[callee]):
            return
        raise fail(op, f"calls @{callee}, which is not a graph function: calls with possible side "
                       "effects are not allowed inside an mlc.dataflow block (use mlc.call_tir for "
                       "tensor programs)")
    raise fail(op, "may have side effects and is not allowed inside an mlc.dataflow block "
                   "(only graph ops, calls and arith/math/tensor ops are)")


def _callee_symbol(op: ir.Operation) -> str:
    attr = op.attributes["callee"]
    if not isinstance(attr, ir.FlatSymbolRefAttr):
        raise fail(op, f"callee {attr} must be a flat symbol reference (@name)")
    return attr.value


def _verify_call_tir(op: ir.Operation, funcs: dict[str, ir.Operation]) -> None:
    name = _callee_symbol(op)
    if name not in funcs:
        raise fail(op, f"calls @{name}, which is not a function of the module (known: "
                       f"{', '.join('@' + n for n in funcs) or 'none'})")
    callee = funcs[name]
    if is_graph_function(callee):
        raise fail(op, f"calls @{name}, a graph function; call_tir calls tensor programs")
    ftype = ir.FunctionType(ir.TypeAttr(callee.attributes["function_type"]).value)
    params, results = list(ftype.inputs), list(ftype.results)
    args = list(op.operands)
    if len(params) != len(args) + 1:
        raise fail(op, f"passes {len(args)} argument(s) + 1 output to @{name}, which takes "
                       f"{len(params)} parameter(s)")
    tensor_form = all(isinstance(t, ir.RankedTensorType) for t in params)
    memref_form = all(isinstance(t, ir.MemRefType) for t in params) and not results
    if not (tensor_form or memref_form):
        raise fail(op, f"@{name} is neither a tensor program on tensors nor one on memrefs: {ftype}")
    if tensor_form and (len(results) != 1 or not types_compatible(results[0], params[-1])):
        raise fail(op, f"@{name} must return one tensor of its output parameter's type, got {ftype}")
    for i, (a, p) in enumerate(zip(args + [op.results[0]], params)):
        t = a.type
        if memref_form:
            p = ir.RankedTensorType.get(ir.ShapedType(p).shape, ir.ShapedType(p).element_type)
        if not types_compatible(t, p):
            what = "the result" if i == len(args) else f"argument {i}"
            raise fail(op, f"{what} has type {t}, incompatible with parameter {i} of @{name} ({p})")


def _verify_call_dps(op: ir.Operation, check_env: bool) -> None:
    name = ir.StringAttr(op.attributes["callee"]).value
    if not name:
        raise fail(op, "callee must be a non-empty environment function name")
    if check_env:
        if name not in list_funcs():
            raise fail(op, f"calls environment function {name!r}, which is not registered "
                           "(use @mlc.register_func)")


def _verify_constant(op: ir.Operation) -> None:
    value = op.attributes["value"]
    t = elements_type(value)
    if t is None:
        raise fail(op, f"value must be a dense<...> or dense_resource<...> attribute, got {value}")
    if str(t) != str(op.results[0].type):
        raise fail(op, f"value type {t} differs from the result type {op.results[0].type}")

