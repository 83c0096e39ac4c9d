"""Reading graph functions back from MLIR: which functions are graphs, symbolic shapes.

A graph function is a ``func.func`` with the ``mlc.graph`` attribute or with ``mlc`` ops
in its body. The symbolic shape of each tensor value comes from, in order: an
``mlc.shape`` attribute (on the argument or on the defining op), shape inference of the
graph op that defines it, and its type (a ``?`` without a name gets a private symbol,
``?arg0.1``, equal only to itself).
"""

from __future__ import annotations

import re

from mlir import ir

from ...errors import GraphError
from ...ir.module import graph_functions, is_graph_function
from ...irutil import sym_name, walk_ops
from ...tensor_types import Shape, dtype_of_element, format_shape, shape_from_attr
from .infer import RULES, infer

__all__ = ["graph_functions", "is_graph_function", "func_name", "op_line", "fail", "value_shapes",
           "type_shape", "types_compatible", "op_attrs", "arg_attr", "elements_type", "walk_ops",
           "PURE_MLC_OPS", "GRAPH_OPS", "clone_module", "remove_all_unused"]

#: mlc ops whose result is computed from their operands only (shape rules in infer.py)
GRAPH_OPS = tuple(RULES)
#: mlc ops without side effects (allowed in dataflow blocks)
PURE_MLC_OPS = (*GRAPH_OPS, "constant", "call_tir", "call_dps")


def remove_all_unused(func_or_mod):  # noqa: ANN001, ANN201 (see dce.remove_all_unused)
    """Course spelling ``relax.analysis.remove_all_unused``: :func:`..transform.dce.remove_all_unused`."""
    from ..transform.dce import remove_all_unused as _remove

    return _remove(func_or_mod)


def clone_module(mod: "Module") -> "Module":
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


def op_attrs(op: ir.Operation, result_shape: Shape | None) -> dict[str, object]:
    """The Python attributes the shape rules read (``axes``, ``axis``, reshape's ``shape``)."""
    attrs: dict[str, object] = {}
    if "axes" in op.attributes:
        attrs["axes"] = tuple(ir.DenseI64ArrayAttr(op.attributes["axes"]))
    if "axis" in op.attributes:
        attrs["axis"] = ir.IntegerAttr(op.attributes["axis"]).value
    for key in ("strides", "dilation", "pool_size"):  # nn ops (op_nn.py)
        if key in op.attributes:
            attrs[key] = tuple(ir.DenseI64ArrayAttr(op.attributes[key]))
    if "epsilon" in op.attributes:
        attrs["epsilon"] = ir.FloatAttr(op.attributes["epsilon"]).value
    if op.name == "mlc.reshape":
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
