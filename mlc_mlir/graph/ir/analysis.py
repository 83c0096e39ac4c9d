"""Reading graph functions back from MLIR: which functions are graphs, symbolic shapes.

A graph function is a ``func.func`` with the ``mlc.graph`` attribute or with ``mlc`` ops
in its body. The symbolic shape of each tensor value comes from, in order: an
``mlc.shape`` attribute (on the argument or on the defining op), shape inference of the
graph op that defines it, and its type (a ``?`` without a name gets a private symbol,
``?arg0.1``, equal only to itself).

Also the course's ``relax.analysis.remove_all_unused`` (dead binding elimination, which
knows which ops are pure: :data:`PURE_MLC_OPS`, :data:`PURE_DIALECTS`), primitive
(fused) functions (:data:`PRIMITIVE_ATTR`) and the names values print with.
"""

from __future__ import annotations

import re
from typing import overload

from mlir import ir

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Function, Module
from ...ir.module import graph_functions, is_graph_function
from ...irutil import sym_name, walk_ops
from ...tensor_types import Shape, dtype_of_element, format_shape, shape_from_attr
from .infer import RULES, infer

__all__ = ["graph_functions", "is_graph_function", "func_name", "op_line", "fail", "value_shapes",
           "type_shape", "types_compatible", "op_attrs", "arg_attr", "elements_type", "walk_ops",
           "PURE_MLC_OPS", "PURE_DIALECTS", "GRAPH_OPS", "PRIMITIVE_ATTR", "is_primitive", "value_name",
           "clone_module", "remove_all_unused", "remove_unused_ops"]

#: mlc ops whose result is computed from their operands only (shape rules in infer.py)
GRAPH_OPS = tuple(RULES)
#: mlc ops without side effects (allowed in dataflow blocks)
PURE_MLC_OPS = (*GRAPH_OPS, "constant", "call_tir", "call_dps")
#: upstream dialects whose ops are all free of side effects (allowed in dataflow blocks)
PURE_DIALECTS = ("arith", "math", "tensor", "index", "complex")
#: unit attribute of a primitive (fused) graph function
PRIMITIVE_ATTR = "mlc.primitive"


def is_primitive(fop: ir.Operation) -> bool:
    """Whether ``fop`` is a primitive (fused) function."""
    return PRIMITIVE_ATTR in fop.attributes


def clone_module(mod: Module) -> Module:
    """A deep copy of ``mod`` that keeps locations (``Module.clone``)."""
    return mod.clone()


#: the ``sym_name`` of a ``func.func`` (:func:`mlc_mlir.irutil.sym_name`)
func_name = sym_name

def op_line(op: ir.Operation) -> int | None:
    """The source line of ``op`` (through name and fused locations), if known."""
    loc = op.location
    for _ in range(8):
        if loc.is_a_file():
            return loc.start_line
        if loc.is_a_name():
            loc = loc.child_loc
        elif loc.is_a_fused() and loc.locations:
            loc = loc.locations[0]
        elif loc.is_a_callsite():
            loc = loc.callee
        else:
            break
    text = str(loc)
    m = re.search(r":(\d+):\d+", text)
    return int(m.group(1)) if m else None


def fail(op: ir.Operation, message: str) -> GraphError:
    """A :class:`GraphError` ``'op' op message`` that carries the op's line (for mlc-opt)."""
    err = GraphError(f"'{op.name}' op {message}")
    err.line = op_line(op)
    return err


def arg_attr(fop: ir.Operation, index: int, name: str) -> ir.Attribute | None:
    """Argument attribute ``name`` of argument ``index`` of ``fop``, or None."""
    if "arg_attrs" not in fop.attributes:
        return None
    attrs = ir.ArrayAttr(fop.attributes["arg_attrs"])
    if index >= len(attrs):
        return None
    d = ir.DictAttr(attrs[index])
    return d[name] if name in d else None


def value_name(value: ir.Value, default: str) -> str:
    """The name a value prints with (its op's / argument's name location), else ``default``."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        fop = owner.owner
        if fop is not None and fop.operation.name == "func.func":
            attr = arg_attr(fop.operation, ir.BlockArgument(value).arg_number, "mlc.name")
            if attr is not None:
                return ir.StringAttr(attr).value
        loc = ir.BlockArgument(value).location
    else:
        loc = owner.operation.location
    return loc.name_str if loc.is_a_name() else default


def type_shape(t: ir.Type, anon: str) -> Shape:
    """Shape of a ranked tensor type; a ``?`` becomes the private symbol ``?{anon}.{i}``."""
    rt = ir.RankedTensorType(t)
    return tuple(f"?{anon}.{i}" if rt.is_dynamic_dim(i) else rt.get_dim_size(i) for i in range(rt.rank))


def types_compatible(a: ir.Type, b: ir.Type) -> bool:
    """Same element type and rank, and each dimension equal or dynamic on one side."""
    if not (isinstance(a, ir.ShapedType) and isinstance(b, ir.ShapedType)):
        return str(a) == str(b)
    a, b = ir.ShapedType(a), ir.ShapedType(b)
    if str(a.element_type) != str(b.element_type) or a.rank != b.rank:
        return False
    return all(a.is_dynamic_dim(i) or b.is_dynamic_dim(i) or a.get_dim_size(i) == b.get_dim_size(i)
               for i in range(a.rank))


def elements_type(attr: ir.Attribute) -> ir.Type | None:
    """The type of a ``dense<...>`` / ``dense_resource<...>`` attribute, else None."""
    if isinstance(attr, ir.DenseElementsAttr):
        return attr.type
    try:
        return ir.DenseResourceElementsAttr(attr).type
    except (ValueError, TypeError):
        return None


#: attributes of graph ops that are not the op's own (read by :func:`op_attrs`)
_NOT_OP_ATTRS = ("mlc.shape", "operandSegmentSizes", "resultSegmentSizes", "callee")


def op_attrs(op: ir.Operation, result_shape: Shape | None) -> dict[str, object]:
    """The Python attributes of graph op ``op`` (the inverse of the builder's ``encode_attrs``:
    ``array<i64>`` -> tuple, ``i64`` -> int, ``f64`` -> float, bool, string; the ``shape`` of
    reshape and broadcast_to is their result shape)."""
    attrs: dict[str, object] = {}
    for key in op.attributes:
        attr = op.attributes[key]
        if key in _NOT_OP_ATTRS or key.startswith("mlc."):
            continue
        if isinstance(attr, ir.DenseI64ArrayAttr):
            attrs[key] = tuple(attr)
        elif isinstance(attr, ir.ArrayAttr):  # sizes, some symbolic
            attrs[key] = tuple(ir.StringAttr(a).value if isinstance(a, ir.StringAttr) else ir.IntegerAttr(a).value
                               for a in attr)
        elif isinstance(attr, ir.BoolAttr):
            attrs[key] = bool(attr.value)
        elif isinstance(attr, ir.IntegerAttr):
            attrs[key] = attr.value
        elif isinstance(attr, ir.FloatAttr):
            attrs[key] = attr.value
        elif isinstance(attr, ir.StringAttr):
            attrs[key] = attr.value
    if op.name in ("mlc.reshape", "mlc.broadcast_to"):
        attrs["shape"] = result_shape
    return attrs


def _check_against_type(op: ir.Operation, shape: Shape, t: ir.Type, what: str) -> None:
    rt = ir.RankedTensorType(t)
    if rt.rank != len(shape):
        raise fail(op, f"{what} {format_shape(shape)} does not match the result type {t}")
    for i, d in enumerate(shape):
        static = None if rt.is_dynamic_dim(i) else rt.get_dim_size(i)
        if static is not None and d != static:
            raise fail(op, f"{what} {format_shape(shape)} does not match the result type {t}")


def value_shapes(fop: ir.Operation) -> dict[ir.Value, tuple[Shape, str]]:
    """(symbolic shape, dtype) of every tensor value of graph function ``fop``.

    Raises:
        GraphError: a graph op whose operands it does not accept, or whose result type
            contradicts its inferred shape.
    """
    shapes: dict[ir.Value, tuple[Shape, str]] = {}
    block = fop.regions[0].blocks[0]
    for i, arg in enumerate(block.arguments):
        if not isinstance(arg.type, ir.RankedTensorType):
            continue
        attr = arg_attr(fop, i, "mlc.shape")
        shape = shape_from_attr(attr, error=GraphError) if attr is not None else type_shape(arg.type, f"arg{i}")
        shapes[arg] = (shape, _dtype(fop, arg.type))
    counter = 0
    for op in walk_ops(fop):
        parent = op.parent
        if op.name == "mlc.output" and parent is not None and parent.name == "mlc.dataflow":
            for r, v in zip(parent.results, op.operands):  # results carry the outputs' shapes
                if v in shapes:
                    shapes[r] = shapes[v]
        for j, res in enumerate(op.results):
            if not isinstance(res.type, ir.RankedTensorType):
                continue
            counter += 1
            name = op.name[4:] if op.name.startswith("mlc.") else None
            attr = op.attributes["mlc.shape"] if "mlc.shape" in op.attributes else None
            declared = shape_from_attr(attr, error=GraphError) if attr is not None else None
            if declared is not None:
                _check_against_type(op, declared, res.type, "mlc.shape")
            if name in GRAPH_OPS and len(op.results) == 1:
                args = []
                for v in op.operands:
                    if v not in shapes:
                        raise fail(op, "operand is not a ranked tensor")
                    args.append(shapes[v])
                result_shape = declared if declared is not None else type_shape(res.type, f"v{counter}")
                try:
                    shape, dtype = infer(name, args, op_attrs(op, result_shape))
                except GraphError as exc:
                    raise fail(op, str(exc)) from None
                if dtype != _dtype(op, res.type):
                    raise fail(op, f"result dtype {_dtype(op, res.type)} differs from the inferred {dtype}")
                _check_against_type(op, shape, res.type, "inferred shape")
                shapes[res] = (shape, dtype)
            elif op.name == "tensor.cast" and declared is None and op.operands[0] in shapes:
                shapes[res] = shapes[op.operands[0]]  # a cast keeps the symbolic shape
            else:
                shape = declared if declared is not None else type_shape(res.type, f"v{counter}")
                shapes[res] = (shape, _dtype(op, res.type))
    return shapes


def _dtype(op: ir.Operation, t: ir.Type) -> str:
    try:
        return dtype_of_element(ir.RankedTensorType(t).element_type, error=GraphError)
    except GraphError as exc:
        raise fail(op, str(exc)) from None


# -- dead binding elimination (course ``relax.analysis.remove_all_unused``) ------------
# IRDL ops always count as side-effecting, so MLIR's own dead code elimination
# (canonicalize, CSE, the greedy rewrite driver) never erases an ``mlc`` op. This one
# knows which ones are pure: graph ops, ``mlc.constant``, ``mlc.call_tir``, ``mlc.call_dps``
# (a destination-passing call only writes its own output), calls of graph functions, and
# the ops of the pure upstream dialects. ``mlc.alloc_tensor`` and the dataflow structure
# (``mlc.dataflow``, ``mlc.output``) stay.

def _removable(op: ir.Operation, graph_funcs: set[str]) -> bool:
    name = op.name
    if name.startswith("mlc."):
        return name[4:] in PURE_MLC_OPS
    if name == "func.call":
        return ir.FlatSymbolRefAttr(op.attributes["callee"]).value in graph_funcs
    return name.split(".", 1)[0] in PURE_DIALECTS and not op.regions


def remove_unused_ops(fop: ir.Operation, graph_funcs: set[str]) -> int:
    """Erase pure ops of ``fop`` whose results nothing uses (in place); returns how many."""
    removed = 0
    changed = True
    while changed:
        changed = False
        for op in reversed(walk_ops(fop)):
            if op.results and _removable(op, graph_funcs) and all(not list(r.uses) for r in op.results):
                op.erase()
                removed += 1
                changed = True
    return removed


@overload
def remove_all_unused(func_or_mod: Module) -> Module: ...
@overload
def remove_all_unused(func_or_mod: Function) -> Function: ...
def remove_all_unused(func_or_mod: Module | Function) -> Module | Function:
    """Remove the bindings whose values nothing uses (course ``relax.analysis.remove_all_unused``).

    Args:
        func_or_mod: a module (every graph function is cleaned) or one function of a module.

    Returns:
        A cleaned copy: a :class:`Module`, or the :class:`Function` of the same name in a
        copy of its module. The input is not modified.

    Before (after the ewise_fma rewrite, ``lv0`` is dead)::

        %lv0 = "mlc.multiply"(%x, %y) : ...
        %lv1 = "mlc.ewise_fma"(%x, %y, %y) : ...
        "mlc.output"(%lv1) ...

    After::

        %lv1 = "mlc.ewise_fma"(%x, %y, %y) : ...
        "mlc.output"(%lv1) ...

    Raises:
        GraphError: the argument is neither a module nor a function of one.
    """
    if isinstance(func_or_mod, Module):
        work = clone_module(func_or_mod)
        with mlc_context():
            names = _graph_names(work)
            for fop in graph_functions(work.mlir_module):
                remove_unused_ops(fop, names)
        return work
    if isinstance(func_or_mod, Function):
        work = clone_module(func_or_mod.module)
        fn = work[func_or_mod.name]
        with mlc_context():
            if not is_graph_function(fn.op):
                raise GraphError(f"remove_all_unused: @{fn.name} is not a graph function")
            remove_unused_ops(fn.op, _graph_names(work))
        return fn
    raise GraphError(f"remove_all_unused expects an mlc.Module or a Function of one, got "
                     f"{type(func_or_mod).__name__}")


def _graph_names(mod: Module) -> set[str]:
    return {func_name(f) for f in graph_functions(mod.mlir_module)}
